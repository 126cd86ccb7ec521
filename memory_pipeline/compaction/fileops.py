"""Crash-safe file moves: write-temp + fsync + os.replace, renames within one file system, never a delete."""

from __future__ import annotations

import contextlib
import os
from datetime import datetime
from pathlib import Path

from memory_pipeline.store.durable import fsync_path


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):  # some file systems cannot open a directory; the rename still happened
        fsync_path(directory)


def atomic_write(path: Path, data: bytes) -> None:
    """All or nothing: a crash leaves either the old file (or none) or the new one, never half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def unique_path(directory: Path, stem: str, suffix: str) -> Path:
    """`directory/stem+suffix`, or `stem-2`, `stem-3`… when taken: nothing is ever overwritten."""
    candidate = directory / f"{stem}{suffix}"
    n = 2
    while candidate.exists():
        candidate = directory / f"{stem}-{n}{suffix}"
        n += 1
    return candidate


def archive_name(source: Path, when: datetime) -> tuple[str, str]:
    """Seed 003 step 5: `[original-name]-[archived-YYYY-MM-DD].md`."""
    return f"{source.stem}-archived-{when:%Y-%m-%d}", source.suffix or ".md"


def move_to_archive(source: Path, archive_dir: Path, when: datetime) -> Path:
    """Rename (atomic on one file system) into the archive under a fresh name; the bytes are untouched."""
    archive_dir.mkdir(parents=True, exist_ok=True)
    dest = unique_path(archive_dir, *archive_name(source, when))
    os.replace(source, dest)
    _fsync_dir(archive_dir)
    _fsync_dir(source.parent)
    return dest


class AppendOnlyViolation(RuntimeError):
    pass


def append_only(path: Path, text: str) -> None:
    """Append `text` as a new block; the existing bytes are kept exactly (checked before the replace)."""
    old = path.read_bytes() if path.exists() else b""
    sep = b"" if not old else b"\n" if old.endswith(b"\n") else b"\n\n"
    new = old + sep + text.encode("utf-8")
    if not new.startswith(old):  # cannot happen by construction; the guard documents the invariant
        raise AppendOnlyViolation(f"{path}: refusing a write that changes existing bytes")
    atomic_write(path, new)
