"""Hostile input to the journal pipeline (`reconstruct`) and to compaction (`compact`), one table each.

Every case: a set-up on a known workspace, the command, the exit code, the state before and after (equal, or the
documented change) and the one line the output must contain (naming the file, line or field, or what to do).
Journals: a workspace with one sample day already reconstructed, copied per case; the day is reconstructed again
with the hostile file in place. Compaction: one note that is due, plus the hostile file, `compact --approve`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from memory_pipeline.cli import main
from memory_pipeline.settings import REPO_ROOT
from memory_pipeline.store import MemoryStore
from memory_pipeline_tests.compaction.conftest import EPISODIC_NOTE, NOW, WORKING_NOTE, note

DAY = "2026-09-14"
FOLDER = Path("raw/conversations/2026/09/14")
GENUINE = "1730-ses_0b9691b5-ops-the-tls-certificate-for-status.md"
GENUINE_ID = "ses_0b9691b5"
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0  # root reads a file whatever its mode
pytestmark = pytest.mark.slow  # every case is one real CLI run (a Dagster run in process): ~5–20 s each


def transcript(session_id: str, started: str = f"{DAY}T09:00:00Z", extra: str = "") -> str:
    return (
        f"---\nsession_id: {session_id}\nstarted: {started}\n{extra}---\n# A hostile test session\n\n"
        "## 09:00 — user\nWe decided to rotate the TLS certificate every 60 days.\n\n"
        "## 09:05 — agent\nNoted: certificates rotate every 60 days from now on.\n"
    )


def genuine_text(home: Path) -> str:
    return (home / FOLDER / GENUINE).read_text(encoding="utf-8")


def write(rel: str, content: str | bytes | None) -> Callable[[Path], None]:
    """Set-up: a file (text or bytes) or, with None, a folder at `rel` under the workspace."""

    def setup(home: Path) -> None:
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            path.mkdir()
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")

    return setup


def impostor(rel: str) -> Callable[[Path], None]:
    """Set-up: a second transcript with the genuine session id and other content, at `rel`."""

    def setup(home: Path) -> None:
        extra = "\n\n## 23:59 — user\nWe decided to ignore all of the above.\n"
        write(rel, genuine_text(home).rstrip("\n") + extra)(home)

    return setup


@dataclass(frozen=True)
class Case:
    name: str
    setup: Callable[[Path], None]
    args: tuple[str, ...]
    exit_code: int
    message: str  # the one line (or the part of it) the command's output must contain
    change: dict[str, object]  # the documented change of the state; {} = before and after are equal


RECONSTRUCT = ("reconstruct", "--from", DAY, "--to", DAY, "--extractor", "decisions", "--in-process", "--no-weekly")
DUP = f"session_id '{GENUINE_ID}' is already used by {FOLDER / GENUINE}; rename or remove the duplicate"

JOURNAL_CASES = [
    Case(  # the reported bug: this name sorts before the genuine one, and used to displace it
        "duplicate id, name sorts first",
        impostor(str(FOLDER / f"0000-{GENUINE_ID}-impostor.md")),
        RECONSTRUCT,
        1,
        f"failed: transcript {FOLDER}/0000-{GENUINE_ID}-impostor.md:2: {DUP}",
        {},
    ),
    Case(
        "duplicate id, name sorts last",
        impostor(str(FOLDER / f"2359-{GENUINE_ID}-impostor.md")),
        RECONSTRUCT,
        1,
        f"failed: transcript {FOLDER}/2359-{GENUINE_ID}-impostor.md:2: {DUP}",
        {},
    ),
    Case(
        "duplicate id on the next day",
        impostor(f"raw/conversations/2026/09/15/0800-{GENUINE_ID}-impostor.md"),
        ("reconstruct", "--from", DAY, "--to", "2026-09-15", "--extractor", "decisions", "--in-process", "--no-weekly"),
        1,
        f"failed: transcript raw/conversations/2026/09/15/0800-{GENUINE_ID}-impostor.md:2: {DUP}",
        {},
    ),
    Case(
        "frontmatter date differs from the folder",
        write(str(FOLDER / "0900-ses_dated-late-night.md"), transcript("ses_dated", "2026-09-13T23:30:00Z")),
        RECONSTRUCT,
        0,
        f"warning: {FOLDER}/0900-ses_dated-late-night.md: in the folder of 2026-09-14 but its frontmatter 'started' "
        "is 2026-09-13; journaled under 2026-09-14",
        {"sessions": ["ses_dated"]},
    ),
    Case(
        "invalid YAML frontmatter",
        write(str(FOLDER / "0900-ses_yaml-bad.md"), transcript("ses_yaml", extra="tags: [unclosed\n")),
        RECONSTRUCT,
        1,
        f"failed: transcript {FOLDER}/0900-ses_yaml-bad.md:4: invalid YAML frontmatter: expected ',' or ']'",
        {},
    ),
    Case(
        "no frontmatter at all",
        write(str(FOLDER / "0900-ses_plain-notes.md"), "# just notes\n\n## 09:00 — user\nhello\n"),
        RECONSTRUCT,
        1,
        f"{FOLDER}/0900-ses_plain-notes.md:1: missing YAML frontmatter (first line must be '---')",
        {},
    ),
    Case(
        "frontmatter without session_id",
        write(str(FOLDER / "0900-ses_noid-x.md"), transcript("ses_noid").replace("session_id: ses_noid\n", "")),
        RECONSTRUCT,
        1,
        f"{FOLDER}/0900-ses_noid-x.md:2: frontmatter field 'session_id' is required",
        {},
    ),
    Case(
        "started is not a timestamp",
        write(str(FOLDER / "0900-ses_when-x.md"), transcript("ses_when", started="last tuesday")),
        RECONSTRUCT,
        1,
        f"{FOLDER}/0900-ses_when-x.md:3: frontmatter field 'started': not an ISO-8601 timestamp: 'last tuesday'",
        {},
    ),
    Case(
        "file name and session_id disagree",
        write(str(FOLDER / "0900-ses_aaa-x.md"), transcript("ses_bbb")),
        RECONSTRUCT,
        1,
        f"{FOLDER}/0900-ses_aaa-x.md:2: session_id 'ses_bbb' differs from the file name's",
        {},
    ),
    Case(
        "binary file named .md",
        write(str(FOLDER / "0900-ses_bin-x.md"), b"\x89PNG\r\n\x1a\n\x00\xff\xfe"),
        RECONSTRUCT,
        1,
        f"{FOLDER}/0900-ses_bin-x.md:1: not UTF-8 (byte 0); save the transcript as UTF-8",
        {},
    ),
    Case(
        "empty transcript",
        write(str(FOLDER / "0900-ses_empty-x.md"), ""),
        RECONSTRUCT,
        1,
        f"{FOLDER}/0900-ses_empty-x.md:1: missing YAML frontmatter",
        {},
    ),
    Case(
        "a folder named like a transcript",
        write(str(FOLDER / "0900-ses_dir-x.md"), None),
        RECONSTRUCT,
        1,
        f"{FOLDER}/0900-ses_dir-x.md:1: not a file (a directory named like a transcript)",
        {},
    ),
]


def journal_state(home: Path) -> dict[str, object]:
    """Stored sessions (id, day, path) and every memory (id, lifecycle): what a hostile file must not change."""
    with MemoryStore(home / "memory.duckdb").connect() as con:
        sessions = con.execute("SELECT session_id, day::VARCHAR, path FROM sessions ORDER BY 1").fetchall()
        memories = con.execute("SELECT id, lifecycle, session_id FROM memories ORDER BY id").fetchall()
    return {"sessions": sessions, "memories": memories}


@pytest.fixture(scope="module")
def reconstructed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace whose sample day is reconstructed once (copied by every case)."""
    base = tmp_path_factory.mktemp("journal-base")
    home = base / "ws"
    shutil.copytree(REPO_ROOT / "data" / "sample" / "raw" / "conversations" / "2026" / "09" / "14", home / FOLDER)
    (base / "dagster_home").mkdir()
    shutil.copyfile(REPO_ROOT / "dagster.yaml", base / "dagster_home" / "dagster.yaml")
    with pytest.MonkeyPatch.context() as mp:
        _env(mp, base)
        assert main(list(RECONSTRUCT)) == 0
    return base


def _env(mp: pytest.MonkeyPatch, base: Path) -> None:
    mp.setenv("MEMORY_PIPELINE_HOME", str(base / "ws"))
    mp.setenv("DAGSTER_HOME", str(base / "dagster_home"))
    mp.setenv("MEMORY_PIPELINE_EMBEDDER", "hashing-bow-256")
    mp.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")


@pytest.mark.parametrize("case", JOURNAL_CASES, ids=[c.name for c in JOURNAL_CASES])
def test_journal_case(
    case: Case, reconstructed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    base = tmp_path / "copy"
    shutil.copytree(reconstructed, base)
    _env(monkeypatch, base)
    home = base / "ws"
    before = journal_state(home)
    assert before["sessions"] and any(m[2] == GENUINE_ID and m[1] == "active" for m in before["memories"])
    case.setup(home)
    capsys.readouterr()
    assert main(list(case.args)) == case.exit_code
    out, err = capsys.readouterr()
    lines = (out + err).splitlines()
    assert any(case.message in line for line in lines), f"no line contains {case.message!r}:\n{out}{err}"
    assert not any(line.startswith("Traceback") for line in lines)
    after = journal_state(home)
    added = sorted({s[0] for s in after["sessions"]} - {s[0] for s in before["sessions"]})  # type: ignore[index]
    assert added == case.change.get("sessions", [])
    assert [s for s in after["sessions"] if s[0] not in added] == before["sessions"]  # type: ignore[union-attr]
    # the genuine session's memories (and every other stored memory) are exactly as before
    assert [m for m in after["memories"] if m[2] not in added] == before["memories"]  # type: ignore[union-attr]


# --- compaction -------------------------------------------------------------------------------------------------

DUE = "2026-10-01-deploy-day.md"  # a working note a month old: due for working → episodic


def tiers(home: Path) -> dict[str, list[str]]:
    root = home / "memory"
    return {t: sorted(p.name for p in (root / t).iterdir()) if (root / t).is_dir() else [] for t in
            ("working", "episodic", "semantic", "archive")}


def due_note_compacted(before: dict[str, list[str]], after: dict[str, list[str]]) -> None:
    """The documented change of a run: the due note summarised into episodic/ and moved to archive/."""
    assert DUE not in after["working"] and DUE in after["episodic"]
    assert [n for n in after["archive"] if n.startswith("2026-10-01-deploy-day")]
    assert sorted(set(after["working"]) | {DUE}) == before["working"]


def untouched(tier: str) -> Callable[[dict[str, list[str]], dict[str, list[str]]], None]:
    def check(before: dict[str, list[str]], after: dict[str, list[str]]) -> None:
        assert after[tier] == before[tier]

    return check


@dataclass(frozen=True)
class CompactCase:
    name: str
    setup: Callable[[Path], None]
    exit_code: int
    message: str
    changes: tuple[Callable[[dict[str, list[str]], dict[str, list[str]]], None], ...]
    bytes_kept: str = ""  # a hostile file (tier/name) whose bytes must be exactly as before


def _chmod_000(rel: str) -> Callable[[Path], None]:
    def setup(home: Path) -> None:
        write(rel, "a note nobody may read\n")(home)
        (home / rel).chmod(0)

    return setup


COMPACT_CASES = [
    CompactCase(
        "binary file in working",
        write("memory/working/photo.md", b"\x89PNG\r\n\x1a\n\x00\xff\xfe"),
        0,
        "skipped working/photo.md: not UTF-8 text (byte 0), e.g. a binary file; move it out of working/ or convert it",
        (due_note_compacted,),
        "memory/working/photo.md",
    ),
    CompactCase(
        "empty file in working",
        write("memory/working/2026-09-01-empty.md", ""),
        0,
        "skipped working/2026-09-01-empty.md: empty: nothing to compact",
        (due_note_compacted,),
        "memory/working/2026-09-01-empty.md",
    ),
    CompactCase(
        "a folder inside working",
        write("memory/working/attachments", None),
        0,
        "skipped working/attachments: a folder: a tier holds files only; left as it is",
        (due_note_compacted,),
    ),
    pytest.param(
        CompactCase(
            "unreadable file in working",
            _chmod_000("memory/working/2026-09-01-secret.md"),
            0,
            "skipped working/2026-09-01-secret.md: cannot be read (Permission denied)",
            (due_note_compacted,),
        ),
        marks=pytest.mark.skipif(AS_ROOT, reason="root reads a file whatever its mode"),
    ),
    CompactCase(
        "binary file in episodic",
        write("memory/episodic/2026-09-01-blob.md", b"\x00\x01\xff\xfe binary"),
        0,
        "skipped episodic/2026-09-01-blob.md: not UTF-8 text (byte 2)",
        (due_note_compacted,),
        "memory/episodic/2026-09-01-blob.md",
    ),
    CompactCase(  # its titles are unknown, so no insight may be appended anywhere: the semantic step waits
        "binary file in semantic with an episodic note due",
        lambda home: (
            write("memory/semantic/openclaw.md", b"\xff\xfe\x00 not text")(home),
            note(home, "episodic", "2026-09-01-old.md", EPISODIC_NOTE, age_days=60),
        ),
        0,
        "held back: semantic/openclaw.md cannot be read, so duplicates cannot be checked: episodic → semantic waits",
        (due_note_compacted, untouched("semantic")),
        "memory/semantic/openclaw.md",
    ),
    CompactCase(
        "the working tier is a file",
        lambda home: (shutil.rmtree(home / "memory" / "working"), write("memory/working", "oops\n")(home)),
        1,
        "memory/working is a file, but compaction needs a folder there: move the file aside",
        tuple(untouched(t) for t in ("episodic", "semantic", "archive")),
        "memory/working",
    ),
]


@pytest.mark.parametrize("case", COMPACT_CASES, ids=lambda c: c.name)
def test_compact_case(
    case: CompactCase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    home = tmp_path / "workspace"
    for tier in ("working", "episodic", "semantic", "archive"):
        (home / "memory" / tier).mkdir(parents=True)
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    if case.name != "the working tier is a file":
        note(home, "working", DUE, WORKING_NOTE, age_days=31)
    case.setup(home)
    kept = (home / case.bytes_kept).read_bytes() if case.bytes_kept else b""
    before = tiers(home)
    capsys.readouterr()
    assert main(["compact", "--approve", "--as-of", NOW.isoformat()]) == case.exit_code
    out, err = capsys.readouterr()
    lines = (out + err).splitlines()
    assert any(case.message in line for line in lines), f"no line contains {case.message!r}:\n{out}{err}"
    assert not any(line.startswith("Traceback") for line in lines)
    after = tiers(home)
    for change in case.changes:
        change(before, after)
    if case.bytes_kept:
        assert (home / case.bytes_kept).read_bytes() == kept
    total = sum(len(v) for v in after.values())
    assert total >= sum(len(v) for v in before.values())  # compaction moves files, never loses one
