"""Agents' own writes: `remember` a memory and `forget` one, over MCP, without becoming a second writer beside
the night.

Every write is made durable first in the spool (`store.spool`), then imported into the store at once when the
store is free (`ingest_writes`), or later — by the next write, or by the `memory_writes` asset — while a night
holds DuckDB's single write lock. Search reads what is still spooled, so a remembered memory is searchable at
once and a forgotten one hidden at once. A write's check (is the id taken, in the store or the spool?) and its
append, and an import's read of the spool, its transaction and its move to `done/`, each hold the spool's lock
(`spool.spool_lock`, across processes): nothing acknowledged is checked against a view an import is replacing,
and nothing acknowledged is dropped — a `remember` whose id the store turns out to hold with other text (it could
not be read when the write was made) is stored beside it under `spool.other_id`.

`remember` validates its record exactly as `import` does (`parse_record`) and is idempotent on the id: the same
id with the same text is a no-op; the same id with other text is an error naming both; the same text for an id
that was forgotten makes it active again (an agent that re-learns a fact keeps it), marking the tombstone
reverted as `restore` does. `forget` moves an active memory to lifecycle `forgotten` (read by nothing: search,
context and the night's invariants see only active and archived rows), stamps `archived_by`/`archived_at`, and
writes a tombstone holding the reason. Nothing is deleted; `restore` (the operator's `memory-pipeline forgotten
restore ID`) makes it active again. Pure logic: no Dagster."""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from memory_pipeline.redaction import redact_text
from memory_pipeline.store import validity
from memory_pipeline.store.changes import note_changed
from memory_pipeline.store.db import MemoryStore, StoreError, atomic, first_line
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
    CREATE_LOCK,
    RENAMED,
    Pending,
    append,
    claim,
    file_lock,
    log_rejected,
    now_iso,
    other_id,
    parse_entry,
    pending,
    record_json,
    spool_dir,
    spool_files,
    spool_lock,
)

__all__ = ["WriteError", "forget", "ingest_writes", "remember"]

MAX_REASON_CHARS = 1_000
SAME_PROCESS_WAIT_S = 2.0  # how long a write waits for this process's own readers before leaving it spooled
OTHER_PROCESS_WAIT_S = 0.5  # ... and for another process's: a search of another gateway worker frees the store in
# milliseconds; a night holds it for minutes, and then the write stays spooled after this wait
RENAMED_WHY = "the id was stored with other text when this write reached the store"
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@dataclass(frozen=True)
class Remembered:
    id: str
    created: bool  # false: the same id with the same text was already there (nothing written)
    stored: bool  # true: in the store now; false: spooled while the store is busy (searchable all the same)
    revived: bool = False  # it had been forgotten: active again (created is false: the memory is not new)
    restated: bool = False  # another value of its fact had superseded it: current again, stated anew
    busy: str = ""  # not stored: what holds the store ("another process holds it: PID 4242: memory-pipeline run")
    if_taken: str = ""  # the store could not be read: the id this text is stored under if its id is taken by then
    spooled: bool = False  # this call appended it to the spool


@dataclass(frozen=True)
class Forgotten:
    id: str
    reason: str
    stored: bool
    busy: str = ""  # not stored: what holds the store


def _lock(home: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(Path(home).resolve()), threading.Lock())


def _short(text: str, n: int = 60) -> str:
    one = " ".join(text.split())
    return repr(one if len(one) <= n else one[: n - 1] + "…")


# ------------------------------------------------------------------ the store


def busy_reason(exc: BaseException) -> str:
    """What holds the store, in words, from the error DuckDB gave when it would not open: the process named by
    its PID (`PID 4242: memory-pipeline run`), a connection of this process, or DuckDB's own first line (files
    named without their folders: an answer names no path on the server's disk)."""
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        if isinstance(exc, duckdb.ConnectionException):
            return "a read of this process holds it"
        if (pid := re.search(r"\(PID (\d+)\)", str(exc))) is not None:
            return f"another process holds it: PID {pid.group(1)}{_process_name(int(pid.group(1)))}"
        exc = exc.__cause__  # type: ignore[assignment]
    why = first_line(seen[-1]) if seen else "it cannot be opened now"
    return re.sub(r"(?:/[^/\s\"']+)+/", "", why)


def _process_name(pid: int) -> str:
    """`: memory-pipeline run` for a PID on this host (program and first arguments, paths cut to their names)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")
    except OSError:
        return ""
    words = [Path(a).name if "/" in a else a for a in argv if a][:4]
    if words[:3] in (["python", "-m", "memory_pipeline.cli"], ["python3", "-m", "memory_pipeline.cli"]):
        words = ["memory-pipeline", *words[3:]]
    return (": " + " ".join(words))[:80] if words else ""


def _read_only(home: Path) -> tuple[duckdb.DuckDBPyConnection | None, str]:
    """A read-only connection, or None and what holds the store (a night, another writer, this process)."""
    path = Path(home) / "memory.duckdb"
    if not path.exists():
        return None, ""
    try:
        return duckdb.connect(str(path), read_only=True), ""
    except duckdb.Error as exc:
        return None, busy_reason(exc)


def _stored(home: Path, memory_id: str) -> tuple[bool, tuple[Any, ...] | None, str]:
    """(store readable, the row: content, lifecycle, superseded_by, kind, compressed_from, summary_of,
    archived_by, archived_at; what holds the store when it is not readable)."""
    if not (Path(home) / "memory.duckdb").exists():
        return True, None, ""  # no store yet: no id is taken
    con, why = _read_only(home)
    if con is None:
        return False, None, why
    try:
        row = con.execute(
            "SELECT content, lifecycle, superseded_by, kind, compressed_from, summary_of, archived_by, archived_at "
            "FROM memories WHERE id = ?",
            [memory_id],
        ).fetchone()
    except duckdb.Error as exc:
        return False, None, first_line(exc)
    finally:
        con.close()
    return True, row, ""


def _apply(con: duckdb.DuckDBPyConnection, entry: dict[str, Any]) -> str:
    """One spooled write into the store (the caller's transaction): 'inserted', 'renamed' (its id was taken with
    other text by then: stored under `other_id`, both kept), 'same', 'revived', 'restated', 'conflict' (the other
    id is taken too), 'forgotten', 'not active' (a forget whose memory is not active now), 'skipped'."""
    if entry.get("op") == "remember":
        record = parse_entry(entry)
        if record is None:
            return "skipped"
        row, renamed = _memory_row(con, record.id), False
        if row is not None and row[0] != record.content:  # acknowledged already: never dropped, kept beside it
            record, renamed = replace(record, id=other_id(record.id, record.content)), True
            row = _memory_row(con, record.id)
            if row is not None and row[0] != record.content:
                return "conflict"
        if row is None:
            from memory_pipeline.store.repository import insert_memories  # pandas: only when a memory is written

            insert_memories(con, [record])
            return "renamed" if renamed else "inserted"
        at = datetime.fromisoformat(str(entry.get("at")))
        if row[3] is not None:  # stated again: the value holds now, and the version after it no longer
            validity.restate(con, record.id, at)
        if row[1] != FORGOTTEN:
            return "same" if row[3] is None else "restated"
        revive(con, record.id, str(row[2]), at, "remember")
        return "revived"
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


def _memory_row(con: duckdb.DuckDBPyConnection, memory_id: str) -> tuple[Any, ...] | None:
    """content, lifecycle, archived_by, superseded_by."""
    return con.execute("SELECT content, lifecycle, archived_by, superseded_by FROM memories WHERE id = ?",
                       [memory_id]).fetchone()  # fmt: skip


def _migrated_key(path: Path) -> tuple[str, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return str(path.resolve()), st.st_dev, st.st_ino


_MIGRATED: set[tuple[str, int, int]] = set()  # store files this process has brought to the current schema


def _open_writer(home: Path, lock_timeout_s: float = 0.0) -> tuple[duckdb.DuckDBPyConnection | None, str]:
    """A write connection to the store, migrated (the schema is checked once per store file and process, not on
    every write), or None while it is busy, and what holds it: another process (a night, another gateway worker,
    an import), or it cannot be opened. A read-only connection of this process (a search) is short: waited for a
    little. The first write creates the store."""
    path = Path(home) / "memory.duckdb"
    store = MemoryStore(path, lock_timeout_s=lock_timeout_s)
    deadline = time.monotonic() + max(lock_timeout_s, SAME_PROCESS_WAIT_S)
    while True:
        try:
            key = _migrated_key(path)
            if key is None or key not in _MIGRATED:
                if key is None or _is_empty(path):
                    _create_store(home, store)
                else:
                    store.migrate()
                if (key := _migrated_key(path)) is not None:
                    _MIGRATED.add(key)
            return store._open(), ""
        except (StoreError, duckdb.Error) as exc:
            same_process = isinstance(exc.__cause__ or exc, duckdb.ConnectionException)
            if not same_process or time.monotonic() >= deadline:
                return None, busy_reason(exc)
            time.sleep(0.02)


def _create_store(home: Path, store: MemoryStore) -> None:
    """The first write creates the store, one process at a time (an flock on `spool/create.lock`): when one
    process creates the file and another opens it before its header is written, DuckDB leaves an empty file
    that it refuses for good ("not a valid DuckDB database file"), and every write after it would stay spooled.
    An empty file that no process holds is such a leftover: removed, and the store created anew."""
    with file_lock(Path(home) / CREATE_LOCK):
        if _is_empty(store.path) and not _held(store.path):
            store.path.unlink()
        store.migrate()


def _is_empty(path: Path) -> bool:
    try:
        return os.stat(path).st_size == 0
    except FileNotFoundError:
        return False


def _held(path: Path) -> bool:
    """Another process holds DuckDB's lock on `path` (a POSIX record lock, as DuckDB takes)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # also drops the probe's own lock
    return False


def _no_writes() -> dict[str, int]:
    return {"files": 0, "inserted": 0, "revived": 0, "restated": 0, "forgotten": 0, "renamed": 0, "conflicts": 0,
            "rejected": 0}  # fmt: skip


def _ingest_locked(home: Path, con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """The spool into the store over `con`, in one transaction; then the files to `done/`. The caller holds
    `_lock(home)` and `spool_lock(home)`, so no write is spooled or checked between the files read here and their
    move (the move comes after the commit: a crash between them imports them again, which changes nothing). A
    `remember` whose id the store meanwhile holds with other text is stored under `other_id` (both kept, logged in
    `spool/renamed.jsonl`); a `forget` of a memory no longer active goes to `spool/rejected.jsonl` with why."""
    counts = _no_writes()
    folder = spool_dir(home)
    if not folder.is_dir() or not spool_files(home):
        return counts
    files, entries = claim(home)
    counts["files"] = len(files)
    rejected: list[dict[str, Any]] = []
    renamed: list[dict[str, Any]] = []
    with atomic(con):
        for entry in entries:
            outcome = _apply(con, entry)
            if outcome in ("inserted", "revived", "restated", "forgotten", "renamed"):
                counts[outcome] += 1
            if outcome == "renamed":
                record = entry.get("record") or {}
                stored_as = other_id(str(record.get("id")), str(record.get("content")))
                renamed.append({**entry, "stored_as": stored_as, "why": RENAMED_WHY})
            elif outcome in ("conflict", "not active"):
                counts["conflicts" if outcome == "conflict" else "rejected"] += 1
                why = ("the id and the other id for this text are both stored with other text" if outcome ==
                       "conflict" else "no active memory with this id when the store was free")  # fmt: skip
                rejected.append({**entry, "rejected": why})
    log_rejected(home, rejected)
    log_rejected(home, renamed, RENAMED)
    done = folder / "done"
    done.mkdir(exist_ok=True)
    for path in files:
        os.replace(path, done / path.name)
    fsync_path(folder)
    fsync_path(done)
    return counts


def ingest_writes(home: Path, lock_timeout_s: float = 0.0) -> dict[str, int] | None:
    """Import every spooled write into the store, oldest first, in one transaction, then move the files to
    `done/`. None when the store is busy (the files stay spooled; the next call imports them)."""
    home = Path(home)
    with _lock(home):
        if not spool_dir(home).is_dir() or not spool_files(home):
            return _no_writes()
        with spool_lock(home):
            claim(home)  # before the store is tried: a busy store leaves them claimed, as a later call finds
        con, _busy = _open_writer(home, lock_timeout_s)  # never waited for while the spool's lock is held
        if con is None:
            return None
        try:
            with spool_lock(home):
                return _ingest_locked(home, con)
        except duckdb.Error:
            return None  # rolled back: still claimed, imported by a later call
        finally:
            con.close()


# ------------------------------------------------------------------ the two writes


def remember(home: Path, record: MemoryRecord, import_at: int = 1) -> Remembered:
    """Spool `record` (durable before this returns), then import it if the store is free — over one write
    connection, which also answers whether the id is taken (a connection costs tens of milliseconds). The check
    and the append hold the spool's lock, so no other writer or import, in this process or another, comes
    between them: a conflict is answered as one now. Only when the store cannot be read at all (a night holds
    it) is the id left unchecked against it: the answer says so, and names the id the text is stored under if
    the store holds this id with other text by then.

    `import_at` > 1 (the fleet gateway): the spool is imported only once it holds that many writes; until then
    the record stays spooled (searchable already), and `agent_writes_sensor`, the night or the next full batch
    imports it. Every import changes the store, and each server process then reads its view of the store again:
    one import per batch instead of per write is what keeps a fleet's searches fast while agents write."""
    home = Path(home)
    if not home.is_dir():
        raise WriteError(f"no workspace at {home}: create the folder or set MEMORY_PIPELINE_HOME; {NOTHING_WRITTEN}")
    if import_at > 1 and (home / "memory.duckdb").exists():
        return _remember_batched(home, record, import_at)
    with _lock(home):
        con, busy = _open_writer(home, OTHER_PROCESS_WAIT_S)  # the first write creates the store
        try:
            with spool_lock(home):
                checked, row = False, None
                if con is not None:
                    try:
                        row, checked = _lookup(con, record.id), True
                    except duckdb.Error as exc:  # e.g. a store file replaced since it was migrated
                        _MIGRATED.discard(_migrated_key(home / "memory.duckdb") or ("", 0, 0))
                        con.close()
                        con, busy = None, first_line(exc)
                if not checked:
                    checked, row, _why = _stored(home, record.id)
                answer = _spool_remember(home, record, row, checked, busy)
                if not answer.spooled:
                    return answer
                if con is not None:
                    try:
                        _ingest_locked(home, con)
                        return replace(answer, stored=True, busy="", if_taken="")
                    except duckdb.Error as exc:  # rolled back: still spooled
                        return replace(answer, busy=first_line(exc))
                return answer
        finally:
            if con is not None:
                con.close()


def _lookup(con: duckdb.DuckDBPyConnection, memory_id: str) -> tuple[Any, ...] | None:
    return con.execute("SELECT content, lifecycle, superseded_by FROM memories WHERE id = ?", [memory_id]).fetchone()


def _spool_remember(home: Path, record: MemoryRecord, row: tuple[Any, ...] | None, checked: bool,
                    busy: str) -> Remembered:  # fmt: skip
    """Under the spool's lock: the answer for an id already held (nothing written; an error for other text), or
    the record appended to the spool and the answer for it (not stored yet)."""
    spool = pending(home)
    if (known := _already_held(record, row, spool)) is not None:
        return known
    revived, restated = _is_forgotten(record.id, row, spool), _is_superseded(row)
    append(home, {"op": "remember", "record": record_json(record), "at": now_iso()})
    if_taken = "" if checked else other_id(record.id, record.content)
    return Remembered(record.id, not (revived or restated), False, revived, restated, busy=busy, if_taken=if_taken,
                      spooled=True)  # fmt: skip


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


@contextmanager
def _store_checked(home: Path, memory_id: str) -> Iterator[tuple[bool, tuple[Any, ...] | None, str]]:
    """The block under the spool's lock, given `_stored(home, memory_id)`. A writer of another process (a gateway
    worker's import) holds the store for milliseconds: waited for up to OTHER_PROCESS_WAIT_S — without the spool's
    lock, which that writer may need to finish — before the block runs with the store unread."""
    deadline = time.monotonic() + OTHER_PROCESS_WAIT_S
    while True:
        with spool_lock(home):
            readable, row, busy = _stored(home, memory_id)
            if readable or time.monotonic() >= deadline:
                yield readable, row, busy
                return
        time.sleep(0.02)


def _remember_batched(home: Path, record: MemoryRecord, import_at: int) -> Remembered:
    """`remember` with a batched import: the id is checked over a read-only connection (it never changes the
    store; another worker's import holds it for milliseconds, and is waited for that long), the record spooled,
    and the spool imported when it holds `import_at` writes."""
    with _lock(home), _store_checked(home, record.id) as (readable, row, busy):
        answer = _spool_remember(home, record, row, readable, busy)
        if not answer.spooled:
            return answer
        spool = pending(home)
        waiting = len(spool.records) + len(spool.forgotten)
    if readable and waiting >= import_at and ingest_writes(home, OTHER_PROCESS_WAIT_S) is not None:
        return replace(answer, stored=True, busy="", if_taken="")
    return answer


def _remembered_before(home: Path, memory_id: str) -> bool:
    """An agent's `remember` of `memory_id` already imported (its spool file in `done/`): the store holds it,
    though an index built before it may not. A read of files only, for when the store cannot be read."""
    needle = json.dumps(memory_id)
    for path in sorted((spool_dir(home) / "done").glob("*.jsonl"), reverse=True):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if needle in text and any(e.get("op") == "remember" and isinstance(e.get("record"), dict)
                                  and e["record"].get("id") == memory_id for e in _lines(text)):  # fmt: skip
            return True
    return False


def _lines(text: str) -> Iterator[dict[str, Any]]:
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            yield entry


def forget(home: Path, memory_id: Any, reason: Any, known: Callable[[str], bool | None] | None = None) -> Forgotten:
    """Hide an active memory for good (reversibly): spooled first, like `remember`, its check and append under
    the spool's lock. While another process holds the store, `known` (the search index's read of the id: True,
    False, or None when it cannot tell) decides whether the id names a memory, so an unknown one is refused at
    the call instead of acknowledged and dropped later."""
    home = Path(home)
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise WriteError(f"forget: field 'id': required non-empty string, got {memory_id!r}; {NOTHING_WRITTEN}")
    if not isinstance(reason, str) or not reason.strip():
        raise WriteError(f"forget: field 'reason': required non-empty string (why it is forgotten); "
                         f"{NOTHING_WRITTEN}")  # fmt: skip
    if len(reason) > MAX_REASON_CHARS:
        raise WriteError(f"forget: field 'reason': {len(reason):,} characters, at most {MAX_REASON_CHARS:,}; "
                         f"{NOTHING_WRITTEN}")  # fmt: skip
    memory_id, reason = memory_id.strip(), redact_text(reason.strip())  # the reason is stored and listed
    if not home.is_dir():
        raise WriteError(f"no workspace at {home}: create the folder or set MEMORY_PIPELINE_HOME; {NOTHING_WRITTEN}")
    with _lock(home), _store_checked(home, memory_id) as (readable, row, busy):
        pend = pending(home)
        if memory_id in pend.forgotten:
            raise WriteError(f"forget: memory {memory_id!r} is already forgotten ({pend.forgotten[memory_id]}); "
                             f"{NOTHING_WRITTEN}")  # fmt: skip
        # While a night holds the store its rows cannot be read: the forget is spooled all the same (hidden from
        # search at once) and checked when the store is free; one that names no active memory then is logged in
        # spool/rejected.jsonl and changes nothing.
        if row is None and memory_id not in pend.records and readable:
            raise WriteError(f"forget: no memory with id {memory_id!r}; {NOTHING_WRITTEN}")
        if (not readable and memory_id not in pend.records and known is not None and known(memory_id) is False
                and not _remembered_before(home, memory_id)):  # fmt: skip
            raise WriteError(f"forget: no memory with id {memory_id!r} (the store is busy: {busy or 'another process'}"
                             f" holds it; checked in the search index); {NOTHING_WRITTEN}")  # fmt: skip
        if row is not None and memory_id not in pend.records:  # a remember spooled since decides, not the row
            check_forgettable(_read_only(home)[0], memory_id, row)
        event = uuid.uuid4().hex[:12]
        append(home, {"op": "forget", "id": memory_id, "reason": reason, "event": event, "at": now_iso()})
    done = ingest_writes(home, OTHER_PROCESS_WAIT_S) if readable else None
    return Forgotten(memory_id, reason, stored=done is not None, busy="" if done is not None else busy or
                     "another process holds it")  # fmt: skip
