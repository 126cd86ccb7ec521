"""Snapshots of the store before a run writes, kept for the last N runs, and restore."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memory_pipeline.store.db import MemoryStore


@dataclass(frozen=True)
class Backup:
    path: Path
    size_bytes: int
    created_at: datetime


def snapshot(store: MemoryStore, backups_dir: Path, label: str, keep: int) -> Path:
    """CHECKPOINT (so the file holds every committed change), copy, rename into place, prune to `keep`."""
    backups_dir.mkdir(parents=True, exist_ok=True)
    target = backups_dir / f"memory-{label}.duckdb"
    tmp = target.with_suffix(".duckdb.tmp")
    with store.connect() as con:  # holding the connection keeps other writers out while we copy
        con.execute("CHECKPOINT")
        shutil.copyfile(store.path, tmp)
    os.replace(tmp, target)
    for old in list_backups(backups_dir)[keep:]:
        old.path.unlink()
    return target


def list_backups(backups_dir: Path) -> list[Backup]:
    """Newest first."""
    if not backups_dir.is_dir():
        return []
    found = [
        Backup(p, p.stat().st_size, datetime.fromtimestamp(p.stat().st_mtime))
        for p in backups_dir.glob("memory-*.duckdb")
    ]
    return sorted(found, key=lambda b: (b.created_at, b.path.name), reverse=True)


def restore(store: MemoryStore, backup: Path, backups_dir: Path, keep: int) -> Path:
    """Put `backup` in place of the store; the current store is snapshotted first, so restore is undoable."""
    if not backup.is_file():
        raise FileNotFoundError(f"{backup}: no such backup")
    tmp = store.path.with_suffix(".duckdb.restore")
    shutil.copyfile(backup, tmp)  # first: pruning below may remove `backup` itself
    safety = snapshot(store, backups_dir, f"pre-restore-{datetime.now():%Y%m%dT%H%M%S%f}", keep + 1)
    wal = store.path.with_name(store.path.name + ".wal")
    if wal.exists():  # a WAL belongs to the file it was written for; CHECKPOINT above emptied it
        wal.unlink()
    os.replace(tmp, store.path)
    return safety
