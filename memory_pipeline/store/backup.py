"""Snapshots of the store before a run writes, kept for the last N runs, and restore.

Restore is two-phase: the backup is copied next to the store and the copy is validated (opens read-only as
DuckDB, has our schema and migrations, every memory row reads); only then is the current store saved as a
pre-restore snapshot and the copy renamed over it atomically. A garbage file never replaces the store, and a
damaged store is still saved (byte for byte) before a good backup replaces it."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

from memory_pipeline.errors import UserError
from memory_pipeline.store.db import MemoryStore, StoreError, StoreLocked, first_line
from memory_pipeline.store.migrations import MIGRATIONS


class BackupInvalid(UserError):
    """The file is not a usable store snapshot; nothing was changed."""


class BackupMissing(UserError, FileNotFoundError):
    """No file at the given path."""


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
    _prune(backups_dir, keep)
    return target


def _prune(backups_dir: Path, keep: int) -> None:
    for old in list_backups(backups_dir)[keep:]:
        old.path.unlink()


def list_backups(backups_dir: Path) -> list[Backup]:
    """Newest first."""
    if not backups_dir.is_dir():
        return []
    found = [
        Backup(p, p.stat().st_size, datetime.fromtimestamp(p.stat().st_mtime))
        for p in backups_dir.glob("memory-*.duckdb")
    ]
    return sorted(found, key=lambda b: (b.created_at, b.path.name), reverse=True)


def validate_store_file(path: Path, shown_as: Path | None = None) -> int:
    """Raise BackupInvalid unless `path` is a memory store this code can open; return its schema version.
    Reads every memory row, so a damaged data block fails here rather than after the swap."""
    name = shown_as or path

    def said(exc: BaseException) -> str:  # DuckDB names the file it opened: the temporary copy, not the backup
        return first_line(exc).replace(str(path), str(name))

    refuse = "; nothing was changed (list good snapshots with `memory-pipeline backups`)"
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise BackupInvalid(f"{name} is not a DuckDB memory store: {said(exc)}{refuse}") from None
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        missing = sorted({"schema_migrations", "memories"} - tables)
        if missing:
            no = ", ".join(missing)
            raise BackupInvalid(f"{name} is a DuckDB file but not a memory store (no {no} table){refuse}")
        versions = {int(r[0]) for r in con.execute("SELECT version FROM schema_migrations").fetchall()}
        unknown = sorted(versions - {m.version for m in MIGRATIONS})
        if not versions or unknown:
            why = f"unknown schema versions {unknown} (a newer memory-pipeline?)" if unknown else "no migrations"
            raise BackupInvalid(f"{name}: {why}{refuse}")
        con.execute("SELECT count(*), sum(length(id)), sum(length(content)), max(lifecycle) FROM memories").fetchall()
    except duckdb.Error as exc:
        raise BackupInvalid(f"{name} is damaged: {said(exc)}{refuse}") from None
    finally:
        con.close()
    return max(versions)


def _save_current(store: MemoryStore, backups_dir: Path, keep: int) -> Path | None:
    """The pre-restore snapshot. A store that cannot be opened (damaged) is kept byte for byte, WAL included."""
    if not store.path.exists():
        return None
    label = f"pre-restore-{datetime.now():%Y%m%dT%H%M%S%f}"
    try:
        return snapshot(store, backups_dir, label, keep)
    except StoreLocked:
        raise
    except (StoreError, duckdb.Error):  # opens but a block is unreadable (e.g. truncated): CHECKPOINT fails
        backups_dir.mkdir(parents=True, exist_ok=True)
        target = backups_dir / f"memory-{label}-damaged.duckdb"
        shutil.copyfile(store.path, target.with_suffix(".duckdb.tmp"))
        os.replace(target.with_suffix(".duckdb.tmp"), target)
        wal = store.path.with_name(store.path.name + ".wal")
        if wal.exists():
            shutil.copyfile(wal, target.with_name(target.name + ".wal"))
        _prune(backups_dir, keep)
        return target


def restore(store: MemoryStore, backup: Path, backups_dir: Path, keep: int) -> Path | None:
    """Put `backup` in place of the store. Returns the pre-restore snapshot (None when there was no store),
    so a restore is undoable by restoring that file."""
    if not backup.is_file():
        raise BackupMissing(f"{backup}: no such backup (list them with `memory-pipeline backups`)")
    tmp = store.path.with_suffix(".duckdb.restore")
    try:
        shutil.copyfile(backup, tmp)  # phase 1: copy first (pruning below may remove `backup` itself) …
        validate_store_file(tmp, shown_as=backup)  # … and check the very bytes that will be swapped in
        safety = _save_current(store, backups_dir, keep + 1)
        wal = store.path.with_name(store.path.name + ".wal")
        if wal.exists():  # a WAL belongs to the file it was written for; the snapshot emptied or kept it
            wal.unlink()
        os.replace(tmp, store.path)  # phase 2: one atomic rename
    finally:
        tmp.unlink(missing_ok=True)
    return safety
