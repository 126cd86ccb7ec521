"""The knowledge files the journal assets write: a day's journal, the week's MEMORY.md roll-up, the journal
archive. Each is written two-phase (temp + rename) and committed with its templated message and tag, so the
assets only pick the day or week and report; a file whose text did not change is neither written nor committed."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from memory_pipeline.journals import knowledge, tables
from memory_pipeline.journals.commit_messages import KnowledgeChange, template
from memory_pipeline.journals.extractors import EXTRACTORS, category_of
from memory_pipeline.journals.gitlog import commit_knowledge
from memory_pipeline.journals.llm_extractors import llm_extractor
from memory_pipeline.store.db import MemoryStore
from memory_pipeline.store.workspace_files import NotRegularFile, read_regular_text


def raw_root(home: Path) -> Path:
    """Where a workspace's transcripts live (DESIGN §3)."""
    return home / "raw" / "conversations"


def knowledge_root(home: Path) -> Path:
    """Where a workspace's journals and MEMORY.md live, the folder its git history tracks."""
    return home / "knowledge"


def memory_md_path(home: Path) -> Path:
    return knowledge_root(home) / "memory" / "MEMORY.md"


@dataclass(frozen=True)
class Written:
    """A knowledge file after a step: its text, and whether it changed (written and committed)."""

    path: Path
    text: str
    changed: bool


def write_journal(db: MemoryStore, home: Path, day: date, path: Path, transcripts: list, log: Any) -> Written:
    """The day's journal from the current extractors' memories of its sessions (`transcripts` not empty)."""
    topics = {t.session_id: category_of(t) for t in transcripts}
    # both versions of each extractor: a day may mix LLM memories and offline fallbacks (per session), and the
    # replacement rules keep only one version active per session and extractor
    sources = [e.source for name, e in EXTRACTORS.items()] + [llm_extractor(name).source for name in EXTRACTORS]
    with db.connect() as con:
        rows = tables.day_items(con, list(topics), sources)
    items = [
        knowledge.JournalItem(topic or topics[sid], kind, content, (str(at), sid, kind, content))
        for at, sid, kind, content, topic in rows
    ]
    text = knowledge.journal_text(day, [t.session_id for t in transcripts], items)
    changed = knowledge.write_atomic(path, text)
    if changed:
        change = KnowledgeChange("extract", f"journal {day}", files=(path.relative_to(home).as_posix(),),
                                 sessions=tuple(t.session_id for t in transcripts))  # fmt: skip
        commit_knowledge(home, template(change), tag=f"memory/daily/{day}", log=log, paths=change.files)
    return Written(path, text, changed)


@dataclass(frozen=True)
class WeekRollup(Written):
    """MEMORY.md after a week's roll-up: how many of the week's journals it read, and each section's entries."""

    journals: int = 0
    sections: dict[str, int] = field(default_factory=dict)


def _workspace_text(home: Path, path: Path, log: Any) -> str | None:
    """A knowledge file's text; None, with a warning, when it is not a regular file inside the workspace (a
    symlink to /etc/passwd is never merged into MEMORY.md; a MEMORY.md that links out is written anew)."""
    try:
        return read_regular_text(path, root=home, errors="strict")
    except NotRegularFile as exc:
        if log is not None:
            log.warning(f"{path.relative_to(home).as_posix()} {exc.problem}: not read")
        return None


def rollup_week(home: Path, key: str, days: list[date], path: Path, log: Any) -> WeekRollup:
    """Merge one week's journals (live or archived) into MEMORY.md; the tag names the ISO week of its Saturday."""
    root = knowledge_root(home)
    found = []
    for d in days:
        for folder in (root / "journal", home / "archive" / "journal"):
            p = folder / f"{d.isoformat()}.md"
            if p.exists():
                text = _workspace_text(home, p, log)
                if text is not None:
                    found.append(knowledge.parse_journal(text))
                break
    memory_text = _workspace_text(home, path, log) if path.exists() else None
    existing = knowledge.parse_memory_md(memory_text) if memory_text is not None else []
    merged = knowledge.merge_memory(existing, knowledge.week_entries(found), days[-1])
    text = knowledge.memory_md_text(merged, updated_on([d for d, _ in found], merged, days[-1]))
    changed = knowledge.write_atomic(path, text)
    if changed:
        year, week, _ = days[-1].isocalendar()  # the ISO week of the week's Saturday
        change = KnowledgeChange("memory", f"weekly rollup {key}", files=(path.relative_to(home).as_posix(),))
        commit_knowledge(home, template(change), tag=f"memory/weekly/{year}-W{week:02d}", log=log,
                         paths=change.files)  # fmt: skip
    return WeekRollup(path, text, changed, len(found), {s: len(merged[s]) for s in knowledge.SECTIONS})


def updated_on(journal_days: list[date], merged: dict[str, list[knowledge.Entry]], week_end: date) -> date:
    """MEMORY.md's `updated:` date: the latest day its journals and entries come from — never the week's Saturday
    when the sessions stopped before it, never a day still to come."""
    latest = max([*journal_days, *(e.day for entries in merged.values() for e in entries)], default=None)
    return latest if latest is not None else min(week_end, date.today())


def archive_journals(home: Path, today: date, retention_days: int, log: Any) -> list[Path]:
    """Move journals older than the retention to archive/journal/ (nothing is deleted) and commit the move."""
    old = knowledge.journals_to_archive(knowledge_root(home) / "journal", today, retention_days)
    moved = [knowledge.archive_journal(p, home / "archive" / "journal") for p in old]
    if moved:
        change = KnowledgeChange("maintenance", f"archive {len(moved)} journal(s) before {today}",
                                 files=tuple(p.relative_to(home).as_posix() for p in moved))  # fmt: skip
        sources = [p.relative_to(home).as_posix() for p in old]
        commit_knowledge(home, template(change), tag=None, log=log, paths=[*sources, *change.files])
    return moved
