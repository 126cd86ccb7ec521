"""Agents' own writes: `remember` a memory and `forget` one, over MCP, without becoming a second writer beside
the night.

Every write is made durable first in the spool (`store.spool`), then imported into the store at once when the
store is free (`ingest_writes`), or later — by the next write, or by the `memory_writes` asset — while a night
holds DuckDB's single write lock. Search reads what is still spooled, so a remembered memory is searchable at
once and a forgotten one hidden at once.

`remember` validates its record exactly as `import` does (`parse_record`) and is idempotent on the id: the same
id with the same text is a no-op; the same id with other text is an error naming both; the same text for an id
that was forgotten makes it active again (an agent that re-learns a fact keeps it), marking the tombstone
reverted as `restore` does. `forget` moves an active memory to lifecycle `forgotten` (read by nothing: search,
context and the night's invariants see only active and archived rows), stamps `archived_by`/`archived_at`, and
writes a tombstone holding the reason. Nothing is deleted; `restore` (the operator's `memory-pipeline forgotten
restore ID`) makes it active again. Pure logic: no Dagster."""

from __future__ import annotations

import os
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from memory_pipeline.store import validity
from memory_pipeline.store.changes import note_changed
from memory_pipeline.store.db import MemoryStore, StoreError, atomic
from memory_pipeline.store.durable import fsync_path
from memory_pipeline.store.forgotten import (
    FORGOTTEN,
    NOTHING_WRITTEN,
    WriteError,
    check_forgettable,
    revive,
)
from memory_pipeline.store.records import MemoryRecord
from memory_pipeline.store.spool import (
    Pending,
    append,
    claim,
    log_rejected,
    now_iso,
    parse_entry,
    pending,
    record_json,
    spool_dir,
    spool_files,
)

__all__ = ["WriteError", "forget", "ingest_writes", "remember"]

MAX_REASON_CHARS = 1_000
SAME_PROCESS_WAIT_S = 2.0  # how long a write waits for this process's own readers before leaving it spooled
OTHER_PROCESS_WAIT_S = 0.5  # ... and for another process's: a search of another gateway worker frees the store in
# milliseconds; a night holds it for minutes, and then the write stays spooled after this wait
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@dataclass(frozen=True)
class Remembered:
    id: str
    created: bool  # false: the same id with the same text was already there (nothing written)
    stored: bool  # true: in the store now; false: spooled while the store is busy (searchable all the same)
    revived: bool = False  # it had been forgotten: active again (created is false: the memory is not new)
    restated: bool = False  # another value of its fact had superseded it: current again, stated anew


@dataclass(frozen=True)
class Forgotten:
    id: str
    reason: str
    stored: bool


def _lock(home: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(Path(home).resolve()), threading.Lock())


def _short(text: str, n: int = 60) -> str:
    one = " ".join(text.split())
    return repr(one if len(one) <= n else one[: n - 1] + "…")


# ------------------------------------------------------------------ the store


def _read_only(home: Path) -> duckdb.DuckDBPyConnection | None:
    path = Path(home) / "memory.duckdb"
    if not path.exists():
        return None
    try:
        return duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return None  # a night (or this process's own writer) holds it


def _stored(home: Path, memory_id: str) -> tuple[bool, tuple[Any, ...] | None]:
    """(store readable, the row: content, lifecycle, superseded_by, kind, compressed_from, summary_of,
    archived_by, archived_at)."""
    con = _read_only(home)
    if con is None:
        return False, None
    try:
        row = con.execute(
            "SELECT content, lifecycle, superseded_by, kind, compressed_from, summary_of, archived_by, archived_at "
            "FROM memories WHERE id = ?",
            [memory_id],
        ).fetchone()
    except duckdb.Error:
        return False, None
    finally:
        con.close()
    return True, row


def _apply(con: duckdb.DuckDBPyConnection, entry: dict[str, Any]) -> str:
    """One spooled write into the store (the caller's transaction): 'inserted', 'same', 'revived', 'conflict',
    'forgotten', 'not active' (a forget whose memory is not active now), 'skipped'."""
    if entry.get("op") == "remember":
        record = parse_entry(entry)
        if record is None:
            return "skipped"
        row = con.execute("SELECT content, lifecycle, archived_by, superseded_by FROM memories WHERE id = ?",
                          [record.id]).fetchone()  # fmt: skip
        if row is not None:
            if row[0] != record.content:
                return "conflict"
            at = datetime.fromisoformat(str(entry.get("at")))
            if row[3] is not None:  # stated again: the value holds now, and the version after it no longer
                validity.restate(con, record.id, at)
            if row[1] != FORGOTTEN:
                return "same" if row[3] is None else "restated"
            revive(con, record.id, str(row[2]), at, "remember")
            return "revived"
        from memory_pipeline.store.repository import insert_memories  # pandas: only when a memory is written

        insert_memories(con, [record])
        return "inserted"
    if entry.get("op") == "forget":
        mid, event = str(entry.get("id")), str(entry.get("event"))
        at = datetime.fromisoformat(str(entry.get("at")))
        row = con.execute(
            "UPDATE memories SET lifecycle = ?, archived_by = ?, archived_at = ? "
            "WHERE id = ? AND lifecycle = 'active' RETURNING tags, nexus_keys",
            [FORGOTTEN, f"{FORGOTTEN}:{event}", at, mid],
        ).fetchone()
        if row is None:
            return "not active"
        note_changed(con, [mid])
        con.execute(
            "INSERT INTO tombstones (memory_id, replaced_by_summary_id, cluster_id, run_id, archived_at, tags, "
            "nexus_keys, reason) VALUES (?, '', ?, 'forget', ?, ?, ?, ?)",
            [mid, f"{FORGOTTEN}:{event}", at, list(row[0] or []), list(row[1] or []), str(entry.get("reason"))],
        )
        return "forgotten"
    return "skipped"


def _migrated_key(path: Path) -> tuple[str, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return str(path.resolve()), st.st_dev, st.st_ino


_MIGRATED: set[tuple[str, int, int]] = set()  # store files this process has brought to the current schema


def _open_writer(home: Path, lock_timeout_s: float = 0.0) -> duckdb.DuckDBPyConnection | None:
    """A write connection to the store, migrated (the schema is checked once per store file and process, not on
    every write), or None while it is busy: another process holds it (a night, another gateway worker), or it
    cannot be opened. A read-only connection of this process (a search) is short: waited for a little."""
    path = Path(home) / "memory.duckdb"
    store = MemoryStore(path, lock_timeout_s=lock_timeout_s)
    deadline = time.monotonic() + max(lock_timeout_s, SAME_PROCESS_WAIT_S)
    while True:
        try:
            key = _migrated_key(path)
            if key is None or key not in _MIGRATED:
                store.migrate()
                if (key := _migrated_key(path)) is not None:
                    _MIGRATED.add(key)
            return store._open()
        except (StoreError, duckdb.Error) as exc:
            same_process = isinstance(exc.__cause__ or exc, duckdb.ConnectionException)
            if not same_process or time.monotonic() >= deadline:
                return None
            time.sleep(0.02)


def _no_writes() -> dict[str, int]:
    return {"files": 0, "inserted": 0, "revived": 0, "restated": 0, "forgotten": 0, "conflicts": 0, "rejected": 0}


def _ingest_locked(home: Path, con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """The spool into the store over `con` (this process holds `_lock(home)`), in one transaction; then the files
    to `done/`. A write the store refuses now (a `remember` whose id it meanwhile holds with other text, a
    `forget` of a memory no longer active) goes to `spool/rejected.jsonl` with why."""
    counts = _no_writes()
    folder = spool_dir(home)
    if not folder.is_dir() or not spool_files(home):
        return counts
    files, entries = claim(home)
    counts["files"] = len(files)
    rejected: list[dict[str, Any]] = []
    with atomic(con):
        for entry in entries:
            outcome = _apply(con, entry)
            if outcome in ("inserted", "revived", "restated", "forgotten"):
                counts[outcome] += 1
            elif outcome in ("conflict", "not active"):
                counts["conflicts" if outcome == "conflict" else "rejected"] += 1
                why = ("the id is stored with other text" if outcome == "conflict" else
                       "no active memory with this id when the store was free")  # fmt: skip
                rejected.append({**entry, "rejected": why})
    log_rejected(home, rejected)
    done = folder / "done"
    done.mkdir(exist_ok=True)
    for path in files:
        os.replace(path, done / path.name)
    fsync_path(folder)
    return counts


def ingest_writes(home: Path, lock_timeout_s: float = 0.0) -> dict[str, int] | None:
    """Import every spooled write into the store, oldest first, in one transaction, then move the files to
    `done/`. None when the store is busy (the files stay spooled; the next call imports them). A `remember`
    the store refuses then is kept in `spool/rejected.jsonl`."""
    home = Path(home)
    with _lock(home):
        if not spool_dir(home).is_dir() or not spool_files(home):
            return _no_writes()
        claim(home)  # claimed before the store is tried: a busy store leaves them claimed, as a later call finds
        con = _open_writer(home, lock_timeout_s)
        if con is None:
            return None
        try:
            return _ingest_locked(home, con)
        except duckdb.Error:
            return None  # rolled back: still claimed, imported by a later call
        finally:
            con.close()


# ------------------------------------------------------------------ the two writes


def remember(home: Path, record: MemoryRecord, import_at: int = 1) -> Remembered:
    """Spool `record` (durable before this returns), then import it if the store is free — over one write
    connection, which also answers whether the id is taken (a connection costs tens of milliseconds).

    `import_at` > 1 (the fleet gateway): the spool is imported only once it holds that many writes; until then
    the record stays spooled (searchable already), and `agent_writes_sensor`, the night or the next full batch
    imports it. Every import changes the store, and each server process then reads its view of the store again:
    one import per batch instead of per write is what keeps a fleet's searches fast while agents write."""
    home = Path(home)
    if not home.is_dir():
        raise WriteError(f"workspace {home} does not exist; {NOTHING_WRITTEN}")
    store_exists = (home / "memory.duckdb").exists()
    if import_at > 1 and store_exists:
        return _remember_batched(home, record, import_at)
    with _lock(home):
        con = _open_writer(home, OTHER_PROCESS_WAIT_S) if store_exists else None
        try:
            row = None
            if con is not None:
                try:
                    row = con.execute("SELECT content, lifecycle, superseded_by FROM memories WHERE id = ?",
                                      [record.id]).fetchone()  # fmt: skip
                except duckdb.Error:  # e.g. a store file replaced since it was migrated: checked again next time
                    _MIGRATED.discard(_migrated_key(home / "memory.duckdb") or ("", 0, 0))
                    con.close()
                    con = None
            spool = pending(home)
            if (known := _already_held(record, row, spool)) is not None:
                return known
            revived, restated = _is_forgotten(record.id, row, spool), _is_superseded(row)
            append(home, {"op": "remember", "record": record_json(record), "at": now_iso()})
            if con is None and not store_exists:
                con = _open_writer(home, OTHER_PROCESS_WAIT_S)  # the first write creates the store
            stored = False  # busy: spooled, searchable already
            if con is not None:
                try:
                    _ingest_locked(home, con)
                    stored = True
                except duckdb.Error:  # rolled back: still spooled
                    pass
            return Remembered(record.id, not (revived or restated), stored, revived, restated)
        finally:
            if con is not None:
                con.close()


def _is_superseded(row: tuple[Any, ...] | None) -> bool:
    """Stored, and superseded by another value of its fact (`row`: content, lifecycle, superseded_by)."""
    return row is not None and row[2] is not None


def _is_forgotten(memory_id: str, row: tuple[Any, ...] | None, spool: Pending) -> bool:
    """Forgotten now: in the spool (a forget waiting for the store), or in the store with no remember spooled
    since (`row`: content, lifecycle)."""
    if memory_id in spool.forgotten:
        return True
    return row is not None and row[1] == FORGOTTEN and memory_id not in spool.records


def _already_held(record: MemoryRecord, row: tuple[Any, ...] | None, spool: Pending) -> Remembered | None:
    """The answer when the id is taken — in the store (`row`: content, lifecycle) or in the spool: nothing to
    write for the same text, an error naming both for another; None when the id is free, or holds this text but
    was forgotten or superseded (the remember makes it active, or current, again)."""
    held = row[0] if row is not None else None
    if held is None and (spooled := spool.records.get(record.id)) is not None:
        held = spooled.content
    if held is None:
        return None
    if held == record.content:
        if _is_forgotten(record.id, row, spool) or _is_superseded(row):
            return None
        return Remembered(record.id, created=False, stored=row is not None)
    raise WriteError(
        f"remember: id {record.id!r} is already stored with other text: {_short(held)} (stored) vs "
        f"{_short(record.content)} (this call); use another id; {NOTHING_WRITTEN}"
    )


def _remember_batched(home: Path, record: MemoryRecord, import_at: int) -> Remembered:
    """`remember` with a batched import: the id is checked over a read-only connection (it never changes the
    store), the record spooled, and the spool imported when it holds `import_at` writes."""
    with _lock(home):
        readable, row = _stored(home, record.id)
        spool = pending(home)
        if (known := _already_held(record, row, spool)) is not None:
            return known
        revived, restated = _is_forgotten(record.id, row, spool), _is_superseded(row)
        append(home, {"op": "remember", "record": record_json(record), "at": now_iso()})
        waiting = len(spool.records) + len(spool.forgotten) + 1
    stored = readable and waiting >= import_at and ingest_writes(home, OTHER_PROCESS_WAIT_S) is not None
    return Remembered(record.id, not (revived or restated), stored, revived, restated)


def forget(home: Path, memory_id: Any, reason: Any) -> Forgotten:
    """Hide an active memory for good (reversibly): spooled first, like `remember`."""
    home = Path(home)
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise WriteError(f"forget: field 'id': required non-empty string, got {memory_id!r}; {NOTHING_WRITTEN}")
    if not isinstance(reason, str) or not reason.strip():
        raise WriteError(f"forget: field 'reason': required non-empty string (why it is forgotten); "
                         f"{NOTHING_WRITTEN}")  # fmt: skip
    if len(reason) > MAX_REASON_CHARS:
        raise WriteError(f"forget: field 'reason': {len(reason):,} characters, at most {MAX_REASON_CHARS:,}; "
                         f"{NOTHING_WRITTEN}")  # fmt: skip
    memory_id, reason = memory_id.strip(), reason.strip()
    if not home.is_dir():
        raise WriteError(f"workspace {home} does not exist; {NOTHING_WRITTEN}")
    with _lock(home):
        pend = pending(home)
        if memory_id in pend.forgotten:
            raise WriteError(f"forget: memory {memory_id!r} is already forgotten ({pend.forgotten[memory_id]}); "
                             f"{NOTHING_WRITTEN}")  # fmt: skip
        readable, row = _stored(home, memory_id)
        # While a night holds the store its rows cannot be read: the forget is spooled all the same (hidden from
        # search at once) and checked when the store is free; one that names no active memory then is logged in
        # spool/rejected.jsonl and changes nothing.
        busy = not readable and (home / "memory.duckdb").exists()
        if row is None and memory_id not in pend.records and not busy:
            raise WriteError(f"forget: no memory with id {memory_id!r}; {NOTHING_WRITTEN}")
        if row is not None and memory_id not in pend.records:  # a remember spooled since decides, not the row
            check_forgettable(_read_only(home), memory_id, row)
        event = uuid.uuid4().hex[:12]
        append(home, {"op": "forget", "id": memory_id, "reason": reason, "event": event, "at": now_iso()})
    done = ingest_writes(home, OTHER_PROCESS_WAIT_S) if readable else None
    return Forgotten(memory_id, reason, stored=done is not None)
