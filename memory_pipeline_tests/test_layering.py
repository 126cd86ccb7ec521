"""The package's layers, read from the source with `ast` — every import counts, lazy ones too:

    base        settings, tokens, faults, errors, sample_data, sample, redaction, terminal; mcp.frames (it imports
                nothing of ours)
    lower       store, resources, embedding, llm, similarity, operator, statements, verification, distillation
    domain      every other sub-package: abstraction, journals, rollups, compaction, graph, search, context, …
    defs        memory_pipeline.defs.<domain>: Dagster objects
    entry       definitions, fleet.definitions, cli, mcp (the MCP server), each <domain>.cli (a module, or a
                package with the runners that launch Dagster runs of the loaded location)

An import never goes up a layer; a domain (or its defs) reaches another domain only through that domain's public
surface — its package, or a module its `__init__.py` lists in `__all__`; and the units never import in a circle.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from memory_pipeline.settings import REPO_ROOT

ROOT = REPO_ROOT / "memory_pipeline"
BASE = {"settings", "tokens", "faults", "errors", "sample_data", "sample", "redaction", "terminal"}
LOWER = {
    "store", "resources", "embedding", "llm", "similarity", "operator", "statements", "verification", "distillation",
}
RANK = {"base": 0, "lower": 1, "domain": 2, "defs": 3, "entry": 4}


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module names
    imported: str
    where: str  # path:line


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(dotted: str) -> bool:
    path = ROOT.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file() or path.is_dir()


def imports(path: Path) -> list[Import]:
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        where = f"{path.relative_to(REPO_ROOT)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            found += [Import(name, alias.name, where) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                target = f"{base}.{alias.name}"
                found.append(Import(name, target if is_module(target) else base, where))
    return [i for i in found if i.imported.split(".")[0] == "memory_pipeline"]


@cache
def all_imports() -> tuple[Import, ...]:
    return tuple(i for path in sorted(ROOT.rglob("*.py")) for i in imports(path))


def layer(module: str) -> tuple[str, str]:
    """(layer, unit): the unit is what must not import in a circle — a lower package, a domain, a defs folder."""
    parts = module.split(".")[1:]
    if not parts:
        return "base", "memory_pipeline"
    top = parts[0]
    rest = ".".join(parts)
    if rest == "mcp.frames":  # the JSON-RPC framing both MCP transports and the fleet gateway check frames with
        return "base", rest
    if top in ("definitions", "cli", "mcp") or rest == "fleet.definitions" or "cli" in parts:
        return "entry", module
    if top == "defs":
        return "defs", ".".join(parts[:2])
    if top in BASE:
        return "base", top
    if top in LOWER:
        return "lower", top
    return "domain", top


def domain_of(module: str) -> str | None:
    kind, unit = layer(module)
    if kind == "domain":
        return unit
    if kind == "defs" and "." in unit:
        return unit.split(".")[1]
    return None


def public(module: str) -> bool:
    """A domain's package, or a module its `__init__.py` lists in `__all__` (the same for its defs folder)."""
    package, _, leaf = module.rpartition(".")
    if is_module(module) and (ROOT.parent.joinpath(*module.split(".")) / "__init__.py").is_file():
        return True  # the package itself
    init = ROOT.parent.joinpath(*package.split(".")) / "__init__.py"
    if not init.is_file():
        return False
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return leaf in ast.literal_eval(node.value)
    return False


def violations(found: tuple[Import, ...]) -> list[str]:
    out = []
    for imp in found:
        (kind_a, unit_a), (kind_b, unit_b) = layer(imp.importer), layer(imp.imported)
        if unit_a == unit_b:
            continue
        if RANK[kind_b] > RANK[kind_a]:
            out.append(f"{imp.where}: {imp.importer} ({kind_a}) imports {imp.imported} ({kind_b}), a higher layer")
            continue
        mine, theirs = domain_of(imp.importer), domain_of(imp.imported)
        if mine and theirs and mine != theirs and not public(imp.imported):
            out.append(
                f"{imp.where}: {imp.importer} reaches into another domain: {imp.imported} is not in "
                f"memory_pipeline.{theirs}'s public surface (__all__ of its __init__.py)"
            )
    return out


def cycles(found: tuple[Import, ...], unit: Callable[[str], str] = lambda m: layer(m)[1]) -> list[list[str]]:
    """Strongly connected components of the unit graph with more than one unit (Tarjan). `unit` maps a module
    to its unit: a layer's unit by default, the module itself for module-level circles."""
    graph: dict[str, set[str]] = {}
    for imp in found:
        a, b = unit(imp.importer), unit(imp.imported)
        graph.setdefault(a, set())
        graph.setdefault(b, set())
        if a != b:
            graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_upward_or_cross_domain_import() -> None:
    assert violations(all_imports()) == []


def test_no_import_circle_between_units() -> None:
    found = all_imports()
    assert cycles(found) == [], [f"{i.where}: {i.importer} -> {i.imported}" for i in found
                                 if any(layer(i.importer)[1] in c and layer(i.imported)[1] in c
                                        and layer(i.importer)[1] != layer(i.imported)[1] for c in cycles(found))]


@pytest.mark.parametrize(
    ("importer", "imported", "expected"),
    [
        ("memory_pipeline.store.edges", "memory_pipeline.abstraction.atoms", "a higher layer"),
        ("memory_pipeline.graph.plan", "memory_pipeline.abstraction.alerts", "reaches into another domain"),
        ("memory_pipeline.defs.graph.sensors", "memory_pipeline.defs.abstraction.checks", "reaches into"),
        ("memory_pipeline.journals.knowledge", "memory_pipeline.defs.journals.assets", "a higher layer"),
        ("memory_pipeline.resources.llm", "memory_pipeline.cli", "a higher layer"),
    ],
)
def test_the_rules_catch_a_bad_import(importer: str, imported: str, expected: str) -> None:
    assert expected in " ".join(violations((Import(importer, imported, "x.py:1"),)))


def test_no_import_circle_between_modules() -> None:
    """Every import counts — at module level, inside a function, under TYPE_CHECKING — since a circle hidden
    in a function is still two modules that cannot be understood apart."""
    found = all_imports()
    assert cycles(found, unit=lambda m: m) == []


def test_a_function_level_circle_between_modules_is_caught() -> None:
    found = (Import("memory_pipeline.search.engine", "memory_pipeline.search.fallback", "a.py:1"),
             Import("memory_pipeline.search.fallback", "memory_pipeline.search.engine", "b.py:9"))  # fmt: skip
    assert cycles(found, unit=lambda m: m) == [["memory_pipeline.search.engine", "memory_pipeline.search.fallback"]]


def test_a_circle_is_caught() -> None:
    found = (Import("memory_pipeline.store.db", "memory_pipeline.llm.batch", "a:1"),
             Import("memory_pipeline.llm.batch", "memory_pipeline.resources.llm", "b:1"),
             Import("memory_pipeline.resources.llm", "memory_pipeline.store.db", "c:1"))
    assert cycles(found) == [["llm", "resources", "store"]]


def test_allowed_imports_pass() -> None:
    allowed = (Import("memory_pipeline.defs.abstraction.archiver", "memory_pipeline.graph.queries", "a:1"),
               Import("memory_pipeline.defs.graph.sensors", "memory_pipeline.defs.abstraction.schedules", "b:1"),
               Import("memory_pipeline.cli", "memory_pipeline.journals.cli", "c:1"),
               Import("memory_pipeline.journals.knowledge", "memory_pipeline.store", "d:1"))
    assert violations(allowed) == []


ISSUE_NUMBER = re.compile(r"(?i)\bissues? #?\d+")


def test_the_code_speaks_of_the_code_not_of_the_issue_tracker() -> None:
    """A reader of the code has no issue tracker: docstrings and comments say what the code does and why in
    their own words (a design seed's section may be cited for maintainers, docs/layout.md says how)."""
    found = [
        f"{path.relative_to(REPO_ROOT)}:{n}"
        for path in sorted(spoken_to_readers())
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if ISSUE_NUMBER.search(line)
    ]
    assert not found, f"issue numbers in code or in what users read: {found}"


def spoken_to_readers() -> set[Path]:
    """The code (the package's every text file, the benchmarks' code) and what users read and copy: the README,
    the docs, the deploy files, the scripts. The benchmarks' dated records may name the work they measured."""
    text = {".py", ".md", ".yaml", ".yml", ".toml", ".json", ".txt", ".sh", ".cfg", ""}
    found = {p for p in ROOT.rglob("*") if p.is_file() and p.suffix in text and "__pycache__" not in p.parts}
    found |= set((REPO_ROOT / "benchmarks").rglob("*.py")) | {REPO_ROOT / "README.md"}
    for folder in ("docs", "deploy", "scripts"):
        found |= {p for p in (REPO_ROOT / folder).rglob("*") if p.is_file() and p.suffix in text}
    return found
