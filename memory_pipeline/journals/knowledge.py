"""Derived knowledge files (seed 001 §2.2, §8.4–8.6): daily journals, MEMORY.md, the journal archive.

Pure functions of their inputs (no clock, no Dagster), so a reconstruction writes byte-identical files.
Every write is two-phase: a temp file beside the target, fsync, then os.replace.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import yaml

from memory_pipeline.journals import repeats
from memory_pipeline.journals.transcript import dump_frontmatter

MEMORY_LINE_CAP = 200
MEMORY_WARN_LINES = 180
MEMORY_ERROR_LINES = 220
SECTIONS = ("Key Decisions", "Lessons Learned", "Active Context")
# Lines each section may take (together with the header lines they keep the file ≤ 200 lines) and how long
# an entry stays before it is stale, in days.
SECTION_CAPS = {"Key Decisions": 90, "Lessons Learned": 70, "Active Context": 25}
SECTION_RETENTION_DAYS = {"Key Decisions": 120, "Lessons Learned": 365, "Active Context": 14}
_BULLET_PREFIX = {"decision": "Decided: ", "lesson": "Lesson: "}
_ENTRY = re.compile(r"^- (\d{4}-\d{2}-\d{2}): (.+)$")
MAX_BULLET = 280


def write_atomic(path: Path, text: str) -> bool:
    """Write `text` to `path` via temp file + fsync + os.replace; False (nothing written) if unchanged."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return True


# ---------------------------------------------------------------- daily journal


@dataclass(frozen=True)
class JournalItem:
    """One extracted memory as the journal sees it."""

    topic: str
    kind: str  # decision, lesson, person, procedure, fact
    content: str
    order: tuple[str, ...]  # deterministic position: (created_at iso, session id, kind, content)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_BULLET else text[: MAX_BULLET - 1].rstrip() + "…"


def _labelled(kind: str, content: str) -> str:
    """`Decided: …`/`Lesson: …` before a decision or lesson, unless its text already starts so (`Decided: we
    will …` as it was said)."""
    prefix = _BULLET_PREFIX.get(kind, "")
    return content if content.lower().startswith(prefix.lower()) else prefix + content


def journal_text(day: date, session_ids: Sequence[str], items: Iterable[JournalItem]) -> str:
    """The seed's journal: frontmatter (`type: journal`, date, sessions), `## date`, `### topic` groups, bullets.
    People notes go under `### people`; topics sorted, people last."""
    groups: dict[str, list[JournalItem]] = {}
    for item in sorted(items, key=lambda i: i.order):
        topic = "people" if item.kind == "person" else item.topic
        groups.setdefault(topic, []).append(item)
    meta = dump_frontmatter({"type": "journal", "date": day.isoformat(), "sessions": list(session_ids)})
    lines = ["---", meta.rstrip("\n"), "---", "", f"## {day.isoformat()}"]
    for topic in sorted(groups, key=lambda t: (t == "people", t)):
        lines += ["", f"### {topic}"]
        bullets: list[str] = []
        for item in groups[topic]:
            bullet = _clip(_labelled(item.kind, item.content))
            if bullet not in bullets:
                bullets.append(bullet)
        lines += [f"- {_clip(b)}" for b in repeats.collapse_bullets(bullets)]  # a reworded repeat said once
    if not groups:
        lines += ["", "- Sessions held; nothing met the extractors' bar."]
    return "\n".join(lines) + "\n"


def journal_path(knowledge_root: Path, day: date) -> Path:
    return knowledge_root / "journal" / f"{day.isoformat()}.md"


def parse_journal(text: str) -> tuple[date, dict[str, list[str]]]:
    """(date, topic → bullets) of a journal written by `journal_text`."""
    _, fm, body = text.split("---\n", 2)
    meta = yaml.safe_load(fm)
    day = meta["date"] if isinstance(meta["date"], date) else date.fromisoformat(str(meta["date"]))
    topics: dict[str, list[str]] = {}
    current = None
    for line in body.splitlines():
        if line.startswith("### "):
            current = line[4:].strip()
            topics.setdefault(current, [])
        elif line.startswith("- ") and current is not None:
            topics[current].append(line[2:])
    return day, topics


# ---------------------------------------------------------------- MEMORY.md


@dataclass(frozen=True)
class Entry:
    section: str
    day: date
    text: str
    key: str  # dedupe key: the text for decisions/lessons, the topic for active context
    earlier: tuple[date, ...] = ()  # the days the same decision was taken before
    supersedes: str = ""  # "YYYY-MM-DD: wording" of the decision this one changed

    def line(self) -> str:
        return (
            f"- {self.day.isoformat()}: {self.text}"
            + repeats.Dated(self.day, self.text, self.earlier, self.supersedes).suffix()
        )


def parse_memory_md(text: str) -> list[Entry]:
    entries: list[Entry] = []
    section = None
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif section in SECTIONS and (m := _ENTRY.match(line)):
            day = date.fromisoformat(m.group(1))
            if section == "Active Context":
                entries.append(Entry(section, day, m.group(2), m.group(2).split(":", 1)[0]))
                continue
            d = repeats.parse_line(day, m.group(2))
            entries.append(Entry(section, day, d.text, d.text.lower(), d.earlier, d.supersedes))
    return entries


def week_entries(journals: Sequence[tuple[date, dict[str, list[str]]]]) -> list[Entry]:
    """Entries from a week's journals: decisions and lessons as they are, one Active Context line per topic."""
    entries: list[Entry] = []
    activity: dict[str, tuple[date, int, str]] = {}
    for day, topics in sorted(journals):
        for topic, bullets in topics.items():
            for b in bullets:
                for prefix, section in (("Decided: ", "Key Decisions"), ("Lesson: ", "Lessons Learned")):
                    if b.startswith(prefix):
                        text = b[len(prefix) :]
                        entries.append(Entry(section, day, text, text.lower()))
            if topic == "people":
                continue
            decided = [b[len("Decided: ") :] for b in bullets if b.startswith("Decided: ")]
            _, days, latest = activity.get(topic, (day, 0, ""))
            activity[topic] = (day, days + 1, decided[-1] if decided else latest)
    for topic, (last, days, latest) in activity.items():
        detail = f"; latest decision: {latest}" if latest else ""
        plural = "s" if days != 1 else ""
        entries.append(Entry("Active Context", last, _clip(f"{topic}: active on {days} day{plural}{detail}"), topic))
    return entries


def merge_memory(existing: Sequence[Entry], new: Sequence[Entry], week_end: date) -> dict[str, list[Entry]]:
    """Union (the newest entry wins per key; a decision repeated in other words is one entry with all its
    dates, a changed one replaces the old and names it — `repeats`), drop stale entries, newest first, each
    section capped."""
    pool = [e for e in [*existing, *new] if e.section == "Active Context"]
    for section in ("Key Decisions", "Lessons Learned"):
        dated = [
            repeats.Dated(e.day, e.text, e.earlier, e.supersedes) for e in [*existing, *new] if e.section == section
        ]
        pool += [
            Entry(section, d.day, d.text, d.text.lower(), d.earlier, d.supersedes) for d in repeats.collapse(dated)
        ]
    best: dict[tuple[str, str], Entry] = {}
    for e in pool:
        key = (e.section, e.key)
        if key not in best or (e.day, e.text) > (best[key].day, best[key].text):
            best[key] = e
    reference = max([week_end, *(e.day for e in best.values())])
    out: dict[str, list[Entry]] = {}
    for section in SECTIONS:
        cutoff = reference - timedelta(days=SECTION_RETENTION_DAYS[section])
        kept = [e for e in best.values() if e.section == section and e.day >= cutoff]
        kept.sort(key=lambda e: (e.day, e.text), reverse=True)
        out[section] = kept[: SECTION_CAPS[section]]
    return out


def memory_md_text(sections: dict[str, list[Entry]], updated: date) -> str:
    body = ["# Core Memory"]
    for section in SECTIONS:
        body += ["", f"## {section}"]
        body += [e.line() for e in sections.get(section, [])]
    line_count = len(body) + 6  # + frontmatter (---, type, updated, line_count, ---) and a blank line
    head = ["---", "type: memory", f"updated: {updated.isoformat()}", f"line_count: {line_count}", "---", ""]
    return "\n".join(head + body) + "\n"


def line_count(text: str) -> int:
    return len(text.splitlines())


def cap_status(lines: int) -> str:
    """The seed's pre-commit rule: ok below 180 lines, warn from 180, error from 220."""
    if lines >= MEMORY_ERROR_LINES:
        return "error"
    if lines >= MEMORY_WARN_LINES:
        return "warn"
    return "ok"


# ---------------------------------------------------------------- archive


def journals_to_archive(journal_dir: Path, today: date, retention_days: int) -> list[Path]:
    """Journals dated more than `retention_days` before `today` (file name YYYY-MM-DD.md)."""
    cutoff = today - timedelta(days=retention_days)
    old = []
    for path in sorted(journal_dir.glob("*.md")) if journal_dir.is_dir() else []:
        try:
            day = date.fromisoformat(path.stem)
        except ValueError:
            continue
        if day < cutoff:
            old.append(path)
    return old


def archive_journal(path: Path, archive_dir: Path) -> Path:
    """Move one journal to the archive; never overwrites, never deletes content. Same filesystem: a rename;
    otherwise copy + fsync + rename, then remove the original only once the copy is in place."""
    archive_dir.mkdir(parents=True, exist_ok=True)
    target = archive_dir / path.name
    if target.exists():
        if target.read_bytes() != path.read_bytes():
            raise FileExistsError(f"{target} exists with different content; {path} left in place")
        path.unlink()  # identical copy already archived (a move interrupted after the copy)
        return target
    try:
        os.link(path, target)  # atomic, and fails if the target appeared meanwhile
    except OSError:
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        shutil.copyfile(path, tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    path.unlink()
    return target
