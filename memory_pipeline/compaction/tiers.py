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
    """The tier folders; one that exists as a file is an error naming it (nothing is moved or created)."""
    root = memory_root(home)
    for path in (root, *(root / tier for tier in TIERS)):
        if path.exists() and not path.is_dir():
            raise ValueError(f"{path} is a file, but compaction needs a folder there: move the file aside")
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
class Skipped:
    """A file of a tier that compaction leaves exactly where it is, and why (it still counts as a file)."""

    tier: str
    name: str
    reason: str
    counted: bool = True  # a file (counted in file_count); False for a folder where files are expected

    def describe(self) -> str:
        return f"skipped {self.tier}/{self.name}: {self.reason}"


def unreadable(path: Path, tier: str) -> str | None:
    """Why this tier file cannot be compacted (not UTF-8, empty working/episodic note, unreadable), or None."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__}); fix its permissions or move it out of {tier}/"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte {exc.start}), e.g. a binary file; move it out of {tier}/ or convert it"
    if tier in ("working", "episodic") and not text.strip():
        return "empty: nothing to compact; it stays until it has content or is removed"
    return None


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
    files: tuple[FileInfo, ...] = ()  # the files compaction may act on (not the skipped ones)
    skipped: tuple[Skipped, ...] = ()  # counted in file_count, left exactly as they are

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d.pop("files")
        d.pop("skipped")
        return d


def measure_tier(home: Path, tier: str, now: datetime) -> TierVolume:
    """A file that cannot be compacted (`unreadable`) is skipped with its reason, and still counted."""
    now = aware_utc(now)
    infos: list[FileInfo] = []
    skipped: list[Skipped] = []
    folder = memory_root(home) / tier
    for p in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not p.name.startswith(".") and p.is_dir():
            skipped.append(Skipped(tier, p.name, "a folder: a tier holds files only; left as it is", counted=False))
    for p in tier_files(folder):
        reason = unreadable(p, tier)
        if reason is not None:
            skipped.append(Skipped(tier, p.name, reason))
            continue
        infos.append(FileInfo(p.name, estimate_tokens(read_text(p)), round(age_days(p, now), 3)))
    return TierVolume(
        tier=tier,
        file_count=len(infos) + sum(1 for x in skipped if x.counted),
        total_tokens=sum(i.tokens for i in infos),
        oldest_age_days=max((i.age_days for i in infos), default=0.0),
        files=tuple(infos),
        skipped=tuple(skipped),
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
    def skipped(self) -> list[Skipped]:
        """Every tier's skipped files (a semantic one blocks episodic → semantic: its titles are unknown)."""
        return [s for v in (self.working, self.episodic, self.semantic, self.archive) for s in v.skipped]

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
