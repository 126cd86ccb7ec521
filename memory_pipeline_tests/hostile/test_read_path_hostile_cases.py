"""Hostile files in the workspace: symlinks that lead out of it, and binary junk.

- A symlink (or a folder on the way) leading outside the workspace is never read: `knowledge/passwd-knowledge.md ->
  /etc/passwd` was indexed and returned by `search`, `knowledge/identity/ZZLINK.md -> /etc/hostname` was put into
  the `context` prompt. Every reader of workspace files is in the table: each skips the link and says so once.
- Bytes that are mostly not text (random bytes appended to MEMORY.md) are not indexed, per piece, and said once;
  the real text around them still is.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pytest

from memory_pipeline.context.compiler import ContextError, compile_context, read_history
from memory_pipeline.context.topics import load_topics
from memory_pipeline.journals.decay import DecaySettings, score_files
from memory_pipeline.journals.knowledge_writes import rollup_week
from memory_pipeline.journals.monthly import reviewed_files
from memory_pipeline.journals.transcript import read_day
from memory_pipeline.search import build_index, search
from memory_pipeline.search import junk as junk_mod
from memory_pipeline.search.documents import all_file_docs, chunk_text
from memory_pipeline.search.engine import clear_cache
from memory_pipeline.search.index import load_index
from memory_pipeline.search.junk import not_text
from memory_pipeline_tests.search.test_segments import MODEL, encode

SECRET = "root:x:0:0 SECRETMARKER bin bash"  # what the file outside the workspace holds
DAY = date(2026, 10, 8)


class Said:
    """The warnings a reader gave (a `warn` callable and a Dagster-like `log`)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    def warning(self, line: str) -> None:
        self.lines.append(line)

    info = debug = warning


def outside_file(tmp_path: Path, text: str) -> Path:
    target = tmp_path / "outside" / "secret.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def link(home: Path, rel: str, target: Path) -> None:
    (home / rel).parent.mkdir(parents=True, exist_ok=True)
    (home / rel).symlink_to(target)


@dataclass(frozen=True)
class Reader:
    name: str
    rel: str  # where the link goes in the workspace
    content: str  # what the file outside holds: a valid file of the kind the reader expects
    read: Callable[[Path, Said], str]  # everything the reader took in (its output), as one string


def _search(home: Path, said: Said) -> str:
    clear_cache()
    build_index(home, encode, MODEL, full=True)
    docs = [f"{d.key} {d.text}" for d in load_index(home).live_docs()]
    hits = search("root:x:0:0 bin bash", 3, home=home, embedder=(encode, MODEL), floor=0.0)
    return "\n".join(docs + [f"{h.id} {h.snippet}" for h in hits])


def _context(home: Path, said: Said) -> str:
    (home / "knowledge" / "identity" / "SOUL.md").write_text("I am the agent.\n", encoding="utf-8")
    compiled = compile_context(home, "who are you", search=lambda *a, **k: [])
    said.lines += compiled.warnings
    return compiled.prompt


def _topics(home: Path, said: Said) -> str:
    topics, errors = load_topics(home)
    said.lines += [str(e) for e in errors]
    return "\n".join(t.instructions for t in topics)


def _history(home: Path, said: Said) -> str:
    try:
        return "\n".join(t.content for t in read_history(home / "sessions" / "history.jsonl"))
    except ContextError as exc:
        said(str(exc))
        return ""


def _transcripts(home: Path, said: Said) -> str:
    parsed, rejected = read_day(home / "raw" / "conversations", DAY, home)
    said.lines += [f"{r.path}: {r.problem}" for r in rejected]
    return "\n".join(str(t) for t in parsed)


def _rollup(home: Path, said: Said) -> str:
    memory = home / "knowledge" / "memory" / "MEMORY.md"
    done = rollup_week(home, "2026-W41", [DAY], memory, said)
    return f"journals read: {done.journals}\n{memory.read_text(encoding='utf-8')}"


def _decay(home: Path, said: Said) -> str:
    scored = score_files(home, DAY, DecaySettings(), warn=said)
    return "\n".join(str(s) for s in scored)


def _monthly(home: Path, said: Said) -> str:
    return "\n".join(f"{rel} {text}" for rel, text in reviewed_files(home, said))


JOURNAL = f"---\ndate: {DAY}\n---\n## {DAY}\n\n### leak\n- Decided: {SECRET}\n"
TOPIC = (f"---\ntype: topic\ntriggers:\n  - type: keyword\n    match: [who]\nactivation: auto\n---\n\n"
         f"# Leak\n\n{SECRET}\n")
TRANSCRIPT_REL = f"raw/conversations/{DAY:%Y/%m/%d}/0900-s1-leak.md"
TRANSCRIPT = f"---\nsession_id: s1\nstarted: {DAY}T09:00:00Z\n---\n\n## 09:00 — user\n\n{SECRET}\n"

READERS = [
    Reader("search documents", "knowledge/passwd-knowledge.md", SECRET + "\n", _search),
    Reader("search documents, a folder that links out", "knowledge/journal", "", _search),
    Reader("context compiler (identity)", "knowledge/identity/ZZLINK.md", SECRET + "\n", _context),
    Reader("context compiler (MEMORY.md)", "knowledge/memory/MEMORY.md", SECRET + "\n", _context),
    Reader("topics", "topics/leak.md", TOPIC, _topics),
    Reader("session history", "sessions/history.jsonl", f'{{"role": "user", "content": "{SECRET}"}}\n', _history),
    Reader("transcripts", TRANSCRIPT_REL, TRANSCRIPT, _transcripts),
    Reader("weekly rollup (journal)", f"knowledge/journal/{DAY}.md", JOURNAL, _rollup),
    Reader("knowledge decay", "knowledge/notes/leak.md", f"---\npinned: false\n---\n{SECRET}\n", _decay),
    Reader("monthly review", "knowledge/projects/leak.md", SECRET + "\n", _monthly),
]


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
def test_a_link_out_of_the_workspace_is_skipped_with_one_warning(
    reader: Reader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "ws"
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))  # a history file given by path: checked against it
    monkeypatch.setattr(junk_mod, "_SAID", set())
    (home / "knowledge" / "identity").mkdir(parents=True)
    (home / "knowledge" / "notes").mkdir(parents=True)
    (home / "knowledge" / "notes" / "kept.md").write_text("---\npinned: false\n---\nThe harbour opens at six.\n")
    if reader.content:
        link(home, reader.rel, outside_file(tmp_path, reader.content))
    else:  # a folder of the workspace that is a link to a folder outside
        outside_file(tmp_path, SECRET + "\n")
        link(home, reader.rel, tmp_path / "outside")
    said = Said()
    with caplog.at_level(logging.WARNING, logger="memory_pipeline.search"):
        taken = reader.read(home, said)
        reader.read(home, said)  # a second read: the warning is not said again
    assert "SECRETMARKER" not in taken
    lines = said.lines + [r.getMessage() for r in caplog.records]
    about = [line for line in lines if "outside the workspace" in line]
    assert about, lines
    if reader.read is _search:  # said once a process, however often the workspace is listed
        assert len(about) == 1, about


# ------------------------------------------------------------------ not text


def _noise(n: int, seed: int = 7) -> str:
    """What `n` random bytes read as UTF-8 with replacement look like (as MEMORY.md with 200 KB appended)."""
    return random.Random(seed).randbytes(n).decode("utf-8", errors="replace")


MEMORY = "# Memory\n\n## Key Decisions\n- 2026-10-01: Booked the ferry to Naxos for June.\n"


@pytest.mark.parametrize(
    ("name", "piece", "junk"),
    [
        ("random bytes", _noise(1200), True),
        ("control characters", "\x01\x02\x03\x04 x" * 100, True),
        ("replacement characters", "\ufffd\ufffd ab " * 100, True),
        ("symbols, no word", "#$%&*+-/<=>@^|~ " * 30, True),
        ("prose", "Booked the ferry to Naxos for the second week of June. " * 10, False),
        ("one latin-1 byte in prose", "caf\ufffd au lait with the team at nine, as every Friday. " * 10, False),
        ("a table of numbers", "| 2026-10-01 | 12.5 | 17.2 |\n" * 20, False),
        ("another script", "東京の天気は晴れです。明日は雨が降るでしょう。" * 20, False),
        ("emoji", "🎉 launch party on Friday 🎉 " * 30, False),
        ("a short rule", "---", False),
    ],
)
def test_what_is_mostly_not_text(name: str, piece: str, junk: bool) -> None:
    assert not_text(piece) is junk, name


def test_chunking_leaves_out_the_junk_and_keeps_the_text_around_it() -> None:
    text = MEMORY + _noise(20_000) + "\n\n## Lessons Learned\n- 2026-10-02: Deck seats sell out first.\n"
    dropped: list[str] = []
    chunks = chunk_text(text, dropped=dropped)
    assert dropped
    assert not any(not_text(c) for c in chunks)
    assert any("Naxos" in c for c in chunks) and any("Deck seats" in c for c in chunks)


def test_binary_junk_appended_to_memory_md_is_not_indexed_nor_returned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(junk_mod, "_SAID", set())
    home = tmp_path / "ws"
    memory = home / "knowledge" / "memory" / "MEMORY.md"
    memory.parent.mkdir(parents=True)
    memory.write_bytes(MEMORY.encode() + random.Random(3).randbytes(200_000))
    clear_cache()
    with caplog.at_level(logging.WARNING, logger="memory_pipeline.search"):
        docs = all_file_docs(home)
        build_index(home, encode, MODEL, full=True)
        hits = search("root:x:0:0 bin bash", 3, home=home, embedder=(encode, MODEL), floor=0.0)
    indexed = [d.text for d in load_index(home).live_docs()]
    assert indexed == [d.text for d in docs] and len(indexed) == 1 and "Naxos" in indexed[0]
    assert all("\ufffd" not in h.snippet for h in hits)
    said = [r.getMessage() for r in caplog.records if "not text" in r.getMessage()]
    assert len(said) == 1 and "knowledge/memory/MEMORY.md" in said[0], said
