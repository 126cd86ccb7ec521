"""Connections, migrations and transactions for the DuckDB memory store."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from memory_pipeline.errors import UserError
from memory_pipeline.store.migrations import MIGRATIONS

RESTORE_HINT = "if it is damaged, list the snapshots with `memory-pipeline backups` and `memory-pipeline restore FILE`"


class StoreError(UserError, RuntimeError):
    """The store cannot be opened or is inconsistent; the message names the file (and says what to do)."""


class StoreLocked(StoreError):
    """Another process kept DuckDB's file lock past the timeout: the store is busy, not damaged."""


def first_line(exc: BaseException) -> str:
    """DuckDB's messages can span lines (hints, context); one line is what a user reads."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def utcnow() -> datetime:
    """Naive UTC: the store keeps TIMESTAMP columns in UTC without a zone."""
    return datetime.now(UTC).replace(tzinfo=None)


@contextmanager
def atomic(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """One transaction on an open connection: commit on success, roll back on any exception."""
    con.begin()
    try:
        yield con
    except BaseException:
        con.rollback()
        raise
    con.commit()


class MemoryStore:
    """One DuckDB file. Connections are short-lived: DuckDB allows one writing process per file."""

    def __init__(self, path: Path | str, lock_timeout_s: float = 120.0) -> None:
        self.path = Path(path)
        self.lock_timeout_s = lock_timeout_s

    def _open(self) -> duckdb.DuckDBPyConnection:
        """Open, waiting while another process holds DuckDB's file lock (connections are short, so it frees)."""
        deadline = time.monotonic() + self.lock_timeout_s
        pause = 0.02
        while True:
            try:
                return duckdb.connect(str(self.path))
            except duckdb.IOException as exc:
                locked = "lock" in str(exc).lower()
                if locked and time.monotonic() >= deadline:
                    raise StoreLocked(f"memory store {self.path} is busy: {first_line(exc)}") from exc
                if not locked:
                    raise self._unusable(exc) from exc
            except duckdb.Error as exc:
                raise self._unusable(exc) from exc
            time.sleep(pause + random.uniform(0, pause))
            pause = min(0.5, pause * 2)

    def _unusable(self, exc: BaseException) -> StoreError:
        return StoreError(f"cannot open memory store {self.path}: {first_line(exc)}; {RESTORE_HINT}")

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        if not self.path.parent.is_dir():
            raise StoreError(f"workspace folder does not exist: {self.path.parent}")
        con = self._open()
        try:
            yield con
        finally:
            con.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """All-or-nothing on a fresh connection."""
        with self.connect() as con, atomic(con):
            yield con

    def migrate(self) -> list[int]:
        """Apply pending migrations, each in its own transaction. Returns the versions applied."""
        applied: list[int] = []
        with self.connect() as con:
            con.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
            )
            done = {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}
            for migration in MIGRATIONS:
                if migration.version in done:
                    continue
                with atomic(con):
                    for statement in migration.statements:
                        con.execute(statement)
                    con.execute(
                        "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                        [migration.version, migration.name, utcnow()],
                    )
                applied.append(migration.version)
        return applied

    def schema_version(self) -> int:
        with self.connect() as con:
            rows = con.execute("SELECT max(version) FROM schema_migrations").fetchall()
        return int(rows[0][0] or 0)
