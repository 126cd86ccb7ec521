"""The sample generators give byte-for-byte the sample they gave before their data moved to JSON files.

Why: the demo, the benchmarks and the committed transcripts all rest on this exact sample; moving the
words into `memory_pipeline/sample/*.json` must not change one byte. The reference sha256 was
taken from the generators before the move (the literals in Python); any edit of a data file changes it,
so a deliberate change to the sample updates REFERENCE_SHA256 in the same commit.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

import memory_pipeline.sample as sample_pkg
from memory_pipeline.journals.sample_transcripts import generate_sessions
from memory_pipeline.sample import SampleDataError, parse_sample_file
from memory_pipeline.sample_data import DEFAULT_SEED, generate_sample_with_families

# sha256 of canonical_dump() computed on commit 2e1296c (before the data moved out of the code).
REFERENCE_SHA256 = "5dac3ffb2308d97e9034024d977d632ae92fe4f903f3742355afbdc6e07bd381"
DATA_DIR = Path(sample_pkg.__file__).parent


def canonical_dump() -> bytes:
    """Everything the two generators produce, as canonical JSON.

    Two (now, seed) pairs for the memories (the default and one off-grid time: weekday and date slots,
    the 03:30 earlier run crossing midnight) and two seeds for the transcripts.
    """
    out: dict[str, object] = {}
    for label, now, seed in (
        ("default", datetime(2026, 11, 22, 6, 0, tzinfo=UTC), DEFAULT_SEED),
        ("other", datetime(2025, 3, 1, 23, 17, 41, tzinfo=UTC), 7),
    ):
        records, families = generate_sample_with_families(now, seed)
        out[label] = {"memories": sorted(records, key=lambda r: r["id"]), "families": families}
    out["transcripts"] = [[p.as_posix(), t] for p, t in generate_sessions()]
    out["transcripts_seed_5"] = [[p.as_posix(), t] for p, t in generate_sessions(5)]
    return json.dumps(out, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def test_generated_sample_is_byte_identical_to_the_reference() -> None:
    digest = hashlib.sha256(canonical_dump()).hexdigest()
    assert digest == REFERENCE_SHA256, (
        "the sample changed; if on purpose (a data file edited), set REFERENCE_SHA256 to " + digest
    )


def test_every_data_file_is_used_and_is_package_data() -> None:
    """Each JSON file under memory_pipeline/sample/ is read by a generator and matched by package-data."""
    import tomllib

    names = sorted(p.name for p in DATA_DIR.glob("*.json"))
    assert names == ["families.json", "frames.json", "pools.json", "rules.json", "transcripts.json"]
    root = DATA_DIR.parent.parent
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert any(Path("sample", "x.json").match(p.removeprefix("**/")) for p in patterns["memory_pipeline"])


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"families": [', "not valid JSON (line 1"),
        ('{"famlies": []}', "missing field 'families'"),
        ('{"families": [{"key": "x", "categories": "ops"}]}', "malformed sample data"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_a_bad_data_file_gives_one_line_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, expected: str
) -> None:
    from memory_pipeline.sample.memories import _families

    (tmp_path / "families.json").write_text(content, encoding="utf-8")
    monkeypatch.setattr(sample_pkg, "files", lambda _package: tmp_path)
    with pytest.raises(SampleDataError) as info:
        parse_sample_file("families.json", _families)
    message = str(info.value)
    assert expected in message and str(tmp_path / "families.json") in message and "\n" not in message


def test_a_missing_data_file_says_to_reinstall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sample_pkg, "files", lambda _package: tmp_path)
    with pytest.raises(SampleDataError, match="pools.json is missing; reinstall"):
        parse_sample_file("pools.json", lambda d: d)
