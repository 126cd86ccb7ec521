"""Measure the file tiers under `<workspace>/memory/` (seed 003 "Reporting Requirements").

A file's age comes from a `YYYY-MM-DD` date in its name when there is one (agents name daily notes that way,
and a git checkout or a copy resets mtimes), else from its mtime. Summaries keep their source's name and
mtime, so a note's age keeps counting from when it was written, as the seed's tier table implies
(working 0–7 days, episodic 7–30 days).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from memory_pipeline.tokens import estimate_tokens

TIERS = ("working", "episodic", "semantic", "archive")
META_FILE = ".memory-compactor-meta.json"
DEFAULT_SEMANTIC_FILE = "openclaw.md"
_NAME_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def aware_utc(when: datetime) -> datetime:
    """The store's clocks are naive UTC; file times are compared in aware UTC."""
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def memory_root(home: Path) -> Path:
    return home / "memory"


def ensure_tiers(home: Path) -> Path:
    root = memory_root(home)
    for tier in TIERS:
        (root / tier).mkdir(parents=True, exist_ok=True)
    return root


def tier_files(directory: Path) -> list[Path]:
    """The tier's memory files: visible regular files, top level only, sorted by name (deterministic).
    Dotfiles (the meta file, our `.tmp` files) are not memories."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))


def file_written_at(path: Path) -> datetime:
    """When the note was written: the date in its name (00:00 UTC), else its mtime."""
    match = _NAME_DATE.search(path.stem)
    if match:
        try:
            return datetime(int(match[1]), int(match[2]), int(match[3]), tzinfo=UTC)
        except ValueError:
            pass  # "2026-13-45" is not a date: fall back to the mtime
    return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)


def age_days(path: Path, now: datetime) -> float:
    return (now - file_written_at(path)).total_seconds() / 86400.0


def read_text(path: Path) -> str:
    """UTF-8 text; a file that is not UTF-8 is an error naming the file (never silently skipped)."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start}); fix or move it out of the tier") from None


@dataclass(frozen=True)
class FileInfo:
    name: str
    tokens: int
    age_days: float


@dataclass(frozen=True)
class TierVolume:
    tier: str
    file_count: int
    total_tokens: int
    oldest_age_days: float  # 0.0 for an empty tier
    files: tuple[FileInfo, ...] = ()

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d.pop("files")
        return d


def measure_tier(home: Path, tier: str, now: datetime) -> TierVolume:
    now = aware_utc(now)
    infos = tuple(
        FileInfo(p.name, estimate_tokens(read_text(p)), round(age_days(p, now), 3))
        for p in tier_files(memory_root(home) / tier)
    )
    return TierVolume(
        tier=tier,
        file_count=len(infos),
        total_tokens=sum(i.tokens for i in infos),
        oldest_age_days=max((i.age_days for i in infos), default=0.0),
        files=infos,
    )


@dataclass(frozen=True)
class TierState:
    """One measurement of every tier. `semantic_file`/`semantic_tokens`: the largest semantic file, which
    drives the semantic triggers and the Tier C classification (every file is limited, so the fullest one
    decides); `semantic_file_tokens` has every file."""

    measured_at: datetime
    working: TierVolume
    episodic: TierVolume
    semantic: TierVolume
    archive: TierVolume
    semantic_file: str
    semantic_tokens: int
    semantic_file_tokens: dict[str, int] = field(default_factory=dict)

    @property
    def total_files(self) -> int:
        """Files across every tier plus the archive: compaction moves files, so this never drops."""
        return self.working.file_count + self.episodic.file_count + self.semantic.file_count + self.archive.file_count

    def fingerprint(self) -> str:
        """A short description of the state that a sensor cursor can compare."""
        return "|".join(
            f"{v.tier}:{v.file_count}:{v.total_tokens}:{','.join(f.name for f in v.files)}"
            for v in (self.working, self.episodic, self.semantic)
        )


def measure(home: Path, now: datetime, semantic_file: str = DEFAULT_SEMANTIC_FILE) -> TierState:
    now = aware_utc(now)
    volumes = {tier: measure_tier(home, tier, now) for tier in TIERS}
    per_file = {f.name: f.tokens for f in volumes["semantic"].files}
    # The largest semantic file drives the limits (a tie goes to the default file, then by name).
    largest = min(per_file, key=lambda n: (-per_file[n], n != semantic_file, n), default=semantic_file)
    return TierState(
        measured_at=now,
        working=volumes["working"],
        episodic=volumes["episodic"],
        semantic=volumes["semantic"],
        archive=volumes["archive"],
        semantic_file=largest,
        semantic_tokens=per_file.get(largest, 0),
        semantic_file_tokens=per_file,
    )
