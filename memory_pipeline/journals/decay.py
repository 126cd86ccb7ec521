"""Prune by decay (seed 001 §8.5 `score_and_evict`): knowledge files nobody reads any more move to archive/.

score = exp(−rate · days_old) × reference_count, where references are the times the context compiler put the
file in a prompt (`<home>/spool/files/*.jsonl`, written beside the memories' usage spool) and days_old counts
from the file's last change or last reference, whichever is later. A file scoring below `floor` and older than
`min_age_days` moves from knowledge/X to archive/X: never deleted, still searchable (tier `archive`), and the
move is a git commit when the knowledge is a repository. Files with `pinned: true` in their frontmatter never
move; journals, MEMORY.md and identity files have their own lifecycle and are not scored here.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

from memory_pipeline.journals.gitlog import CommitOutcome
from memory_pipeline.store.file_usage import references
from memory_pipeline.store.workspace_files import NotRegularFile, read_regular_text

EXEMPT = ("journal", "memory", "identity")  # under knowledge/: their own lifecycle (archive, cap, P0)


@dataclass(frozen=True)
class DecaySettings:
    """Seed 001 §8.5's constants (half-life ~14 days), overridable by MEMORY_PIPELINE_DECAY_* variables."""

    rate: float = 0.05
    floor: float = 0.01
    min_age_days: int = 30

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> DecaySettings:
        e = dict(os.environ) if env is None else env
        return cls(float(e.get("MEMORY_PIPELINE_DECAY_RATE", cls.rate)), float(e.get("MEMORY_PIPELINE_DECAY_FLOOR",
                   cls.floor)), int(e.get("MEMORY_PIPELINE_DECAY_MIN_AGE_DAYS", cls.min_age_days)))  # fmt: skip


@dataclass(frozen=True)
class Scored:
    path: str  # workspace-relative, under knowledge/
    days_old: int
    references: int
    score: float
    pinned: bool
    evict: bool


def pinned(text: str) -> bool | None:
    """`pinned: true` in the frontmatter → True; no frontmatter → False; unreadable frontmatter → None."""
    if not text.startswith("---\n"):
        return False
    end = text.find("\n---", 4)
    if end < 0:
        return None
    import yaml

    try:
        meta = yaml.safe_load(text[4:end])
    except yaml.YAMLError:
        return None
    return bool(meta.get("pinned")) if isinstance(meta, dict) else (None if meta is not None else False)


def score_files(home: Path, today: date, settings: DecaySettings, warn: Callable[[str], None] = print) -> list[Scored]:
    """Every scoreable knowledge file with its score and verdict, lowest score first."""
    knowledge = Path(home) / "knowledge"
    refs = references(home)
    out = []
    for path in sorted(knowledge.rglob("*.md")) if knowledge.is_dir() else []:
        rel = path.relative_to(home).as_posix()
        if path.relative_to(knowledge).parts[0] in EXEMPT or not path.is_file():
            continue
        try:
            text = read_regular_text(path, root=home, errors="strict")
        except NotRegularFile as exc:  # a symlink out of the workspace is not the workspace's to score or move
            warn(f"{rel} {exc.problem}: left where it is")
            continue
        except (OSError, UnicodeDecodeError) as exc:
            warn(f"{rel}: unreadable ({exc.__class__.__name__}); left where it is")
            continue
        pin = pinned(text)
        if pin is None:
            warn(f"{rel}: frontmatter does not parse; left where it is (fix it or add `pinned: true`)")
            continue
        count, last_used = refs.get(rel, (0, date.min))
        changed = datetime.fromtimestamp(path.stat().st_mtime, UTC).date()
        days = max(0, (today - max(changed, last_used)).days)
        score = math.exp(-settings.rate * days) * count
        out.append(Scored(rel, days, count, score, pin,
                          not pin and score < settings.floor and days > settings.min_age_days))  # fmt: skip
    return sorted(out, key=lambda s: (s.score, s.path))


def evict(home: Path, candidates: list[Scored], crash_after: Callable[[int], None] | None = None) -> list[str]:
    """Move each evicted file to archive/<path under knowledge/> with one rename each (atomic: a file is in
    exactly one place at any moment); an existing archive copy is never overwritten. Returns the moved paths."""
    moved = []
    for s in candidates:
        if not s.evict:
            continue
        src = Path(home) / s.path
        dest = Path(home) / archived_path(s.path)
        if dest.exists() or not src.exists():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dest)
        moved.append(s.path)
        if crash_after is not None:
            crash_after(len(moved))
    return moved


def prune(
    home: Path, today: date, dry_run: bool, warn: Callable[[str], None] = print
) -> tuple[list[Scored], list[str], CommitOutcome]:
    """Score, then (unless `dry_run`) move the evicted files and commit exactly those moves (each file's old and
    new path: nothing else in the tree goes into the commit); (scores, moved paths, the commit's outcome)."""
    from memory_pipeline.journals.commit_messages import KnowledgeChange, template
    from memory_pipeline.journals.gitlog import commit_knowledge

    scored = score_files(home, today, DecaySettings.from_env(), warn)
    if dry_run:
        return scored, [], CommitOutcome()
    moved = evict(home, scored)
    if not moved:
        return scored, moved, CommitOutcome()
    change = KnowledgeChange("maintenance", f"prune by decay ({len(moved)} files)", files=tuple(moved))
    paths = [*moved, *(archived_path(p) for p in moved)]
    return scored, moved, commit_knowledge(home, template(change), tag=None, paths=paths)


def archived_path(rel: str) -> str:
    """knowledge/X → archive/X (workspace-relative)."""
    return (Path("archive") / Path(rel).relative_to("knowledge")).as_posix()
