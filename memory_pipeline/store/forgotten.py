"""The `forgotten` lifecycle: what an agent's `forget` leaves (a tombstone with the reason), why one is refused,
and the ways back — the operator's `memory-pipeline forgotten restore ID`, or the agent remembering it again.
Nothing is ever deleted. Also the one-line error every agent write raises (`WriteError`). Pure logic: no Dagster."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from memory_pipeline.errors import UserError
from memory_pipeline.store.changes import note_changed
from memory_pipeline.store.db import MemoryStore, utcnow

FORGOTTEN = "forgotten"  # the lifecycle; `archived_by` is "forgotten:<event>", the tombstone's cluster_id too
NOTHING_WRITTEN = "nothing was written"


class WriteError(UserError, ValueError):
    """A write the caller must change: one line naming the field or the id; nothing was written."""


def forget_reason(con: duckdb.DuckDBPyConnection, memory_id: str) -> str:
    row = con.execute(
        "SELECT reason FROM tombstones WHERE memory_id = ? AND run_id = 'forget' AND reverted_at IS NULL "
        "ORDER BY archived_at DESC LIMIT 1",
        [memory_id],
    ).fetchone()
    return str(row[0]) if row and row[0] else ""


def revive(con: duckdb.DuckDBPyConnection, memory_id: str, archived_by: str, at: datetime, by: str) -> None:
    """A forgotten memory active again; its tombstone kept and marked reverted (the caller's transaction)."""
    con.execute(
        "UPDATE tombstones SET reverted_at = ?, reverted_by = ? WHERE memory_id = ? AND cluster_id = ? "
        "AND reverted_at IS NULL",
        [at, by, memory_id, archived_by],
    )
    con.execute("UPDATE memories SET lifecycle = 'active', archived_by = NULL, archived_at = NULL WHERE id = ?",
                [memory_id])  # fmt: skip
    note_changed(con, [memory_id])


def check_forgettable(con: duckdb.DuckDBPyConnection | None, memory_id: str, row: tuple[Any, ...]) -> None:
    """A forget of the memory `row` describes (content, lifecycle, superseded_by, kind, compressed_from,
    summary_of, archived_by, archived_at) is refused in one line when it is not an active memory an agent or
    an import wrote; `con` (read-only, closed here; None when busy) tells an earlier forget's reason."""
    _content, lifecycle, _superseded_by, kind, compressed_from, summary_of, archived_by, archived_at = row
    why = ""
    if con is not None:
        try:
            why = forget_reason(con, memory_id) if lifecycle == FORGOTTEN else ""
        finally:
            con.close()
    if lifecycle == FORGOTTEN:
        when = f" on {archived_at:%Y-%m-%d}" if archived_at else ""
        raise WriteError(f"forget: memory {memory_id!r} was already forgotten{when}"
                         f"{f' ({why})' if why else ''}; {NOTHING_WRITTEN}")  # fmt: skip
    if kind == "summary" or compressed_from or summary_of:
        raise WriteError(f"forget: memory {memory_id!r} is a summary a night wrote; only memories that were "
                         f"remembered or imported can be forgotten; {NOTHING_WRITTEN}")  # fmt: skip
    if lifecycle != "active":
        by = f" into {archived_by}" if archived_by else ""
        raise WriteError(f"forget: memory {memory_id!r} is {lifecycle}{by}, not active; only active memories can "
                         f"be forgotten; {NOTHING_WRITTEN}")  # fmt: skip



@dataclass(frozen=True)
class ForgottenRow:
    id: str
    at: datetime
    reason: str
    text: str


def list_forgotten(store: MemoryStore) -> list[ForgottenRow]:
    store.migrate()
    with store.connect() as con:
        rows = con.execute(
            "SELECT m.id, m.archived_at, coalesce(t.reason, ''), m.content FROM memories m "
            "LEFT JOIN tombstones t ON t.memory_id = m.id AND t.cluster_id = m.archived_by AND t.reverted_at IS NULL "
            "WHERE m.lifecycle = ? ORDER BY m.archived_at, m.id",
            [FORGOTTEN],
        ).fetchall()
    return [ForgottenRow(str(r[0]), r[1], str(r[2]), str(r[3])) for r in rows]


def restore(store: MemoryStore, memory_id: str, by: str) -> str:
    """The operator's undo: the memory is active again, its tombstone kept and marked reverted."""
    store.migrate()
    with store.transaction() as con:
        row = con.execute("SELECT lifecycle, archived_by FROM memories WHERE id = ?", [memory_id]).fetchone()
        if row is None:
            raise WriteError(f"no memory with id {memory_id!r} in {store.path}; {NOTHING_WRITTEN}")
        if row[0] != FORGOTTEN:
            raise WriteError(f"memory {memory_id!r} is {row[0]}, not forgotten; {NOTHING_WRITTEN}")
        revive(con, memory_id, str(row[1]), utcnow(), by)
    return memory_id
