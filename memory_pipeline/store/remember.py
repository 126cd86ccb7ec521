"""Agents' own writes (issue 30): `remember` a memory and `forget` one, over MCP, without becoming a second
writer beside the night.

Every write is made durable first: one JSON line appended to `<workspace>/spool/writes/*.jsonl` and fsynced
before the call answers, so a killed server never loses an acknowledged write. The spool is then imported into
the store at once when the store is free (`ingest_writes`), or later — by the next write, or by the
`memory_writes` asset — while a night holds DuckDB's single write lock. Search reads what is still spooled
(`pending`), so a remembered memory is searchable at once and a forgotten one hidden at once.

`remember` validates its record exactly as `import` does (`parse_record`) and is idempotent on the id: the same
id with the same text is a no-op; the same id with other text is an error naming both. `forget` moves an active
memory to lifecycle `forgotten` (read by nothing: search, context and the night's invariants see only active
and archived rows), stamps `archived_by`/`archived_at`, and writes a tombstone holding the reason. Nothing is
deleted; `restore` (the operator's `memory-pipeline forgotten restore ID`) makes it active again and marks the
tombstone reverted. Pure logic: no Dagster."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from memory_pipeline.errors import UserError
from memory_pipeline.store.changes import note_changed
from memory_pipeline.store.db import MemoryStore, StoreError, atomic, utcnow
from memory_pipeline.store.durable import fsync_path
from memory_pipeline.store.records import MemoryRecord, RecordError, parse_record

SPOOL = Path("spool") / "writes"
FORGOTTEN = "forgotten"  # the lifecycle; `archived_by` is "forgotten:<event>", the tombstone's cluster_id too
SOURCE = "mcp:remember"
MAX_TEXT_CHARS = 65_536  # one memory; import's limit is a line, this is one agent's note
MAX_REASON_CHARS = 1_000
NOTHING_WRITTEN = "nothing was written"
SAME_PROCESS_WAIT_S = 2.0  # how long a write waits for this process's own readers before leaving it spooled
OTHER_PROCESS_WAIT_S = 0.5  # ... and for another process's: a search of another gateway worker frees the store in
# milliseconds; a night holds it for minutes, and then the write stays spooled after this wait
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


class WriteError(UserError, ValueError):
    """A write the caller must change: one line naming the field or the id; nothing was written."""


@dataclass(frozen=True)
class Remembered:
    id: str
    created: bool  # false: the same id with the same text was already there (nothing written)
    stored: bool  # true: in the store now; false: spooled while the store is busy (searchable all the same)


@dataclass(frozen=True)
class Forgotten:
    id: str
    reason: str
    stored: bool


@dataclass
class Pending:
    """What the spool holds that the store does not have yet."""

    records: dict[str, MemoryRecord] = field(default_factory=dict)
    forgotten: dict[str, str] = field(default_factory=dict)  # id -> reason


def _lock(home: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(Path(home).resolve()), threading.Lock())


def spool_dir(home: Path) -> Path:
    return Path(home) / SPOOL


def default_id(text: str) -> str:
    """Without a client id the text names itself: remembering the same text twice stores it once."""
    return "mem-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def _short(text: str, n: int = 60) -> str:
    one = " ".join(text.split())
    return repr(one if len(one) <= n else one[: n - 1] + "…")


# ------------------------------------------------------------------ validation


def build_record(
    text: Any,
    category: Any = None,
    importance: Any = None,
    tags: Any = None,
    memory_id: Any = None,
    now: datetime | None = None,
) -> MemoryRecord:
    """The record `remember` would store, validated as `import` validates a line."""
    if isinstance(text, str) and len(text) > MAX_TEXT_CHARS:
        raise WriteError(f"remember: field 'text': {len(text):,} characters, at most {MAX_TEXT_CHARS:,}; "
                         f"{NOTHING_WRITTEN}")  # fmt: skip
    if category is not None and not isinstance(category, str):
        raise WriteError(f"remember: field 'category': expected a string, got {category!r}; {NOTHING_WRITTEN}")
    if memory_id is None and isinstance(text, str):
        memory_id = default_id(text)
    obj = {
        "id": memory_id,
        "content": text,
        "importance": importance,
        "categories": [category] if category and category.strip() else None,
        "tags": tags,
        "created_at": (now or utcnow()).isoformat(),
        "kind": "observation",
        "source": SOURCE,
    }
    try:
        return parse_record(obj, "remember")
    except RecordError as exc:
        name = {"content": "text"}.get(exc.field_name, exc.field_name)
        raise WriteError(f"remember: field '{name}': {exc.problem}; {NOTHING_WRITTEN}") from None


def _record_json(r: MemoryRecord) -> dict[str, Any]:
    return {"id": r.id, "content": r.content, "importance": r.importance, "categories": r.categories,
            "tags": r.tags, "created_at": r.created_at.isoformat(), "kind": r.kind, "source": r.source}  # fmt: skip


# ------------------------------------------------------------------ the spool


def _append(home: Path, entry: dict[str, Any]) -> None:
    """One line, fsynced. Under an flock, and only into the file still at the path: an ingest that moved the
    file away (to claim it) never misses a line written into it afterwards."""
    folder = spool_dir(home)
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        fsync_path(folder.parent)
    path = folder / f"{utcnow():%Y%m%d}-{os.getpid()}.jsonl"
    data = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
    while True:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                continue  # claimed meanwhile: write into a new file
            os.write(fd, data)
            os.fsync(fd)
            if os.fstat(fd).st_size == len(data):
                fsync_path(folder)  # a new file: its name is durable too
            return
        finally:
            os.close(fd)


def _spool_files(home: Path) -> list[Path]:
    folder = spool_dir(home)
    if not folder.is_dir():
        return []
    return sorted(folder.glob("claimed/*.jsonl")) + sorted(folder.glob("*.jsonl"))


def _entries(paths: list[Path]) -> Iterator[dict[str, Any]]:
    for path in paths:
        try:
            raw = path.read_bytes()
        except OSError:
            continue  # claimed and moved while listed: the ingest has it
        for line in raw.decode("utf-8", "replace").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line of a killed writer: never acknowledged
            if isinstance(entry, dict):
                yield entry


def _when(entry: dict[str, Any]) -> str:
    return str(entry.get("at", ""))  # ISO with microseconds: sorts as time does


def _now_iso() -> str:
    return utcnow().isoformat(timespec="microseconds")


def _parse_entry(entry: dict[str, Any]) -> MemoryRecord | None:
    try:
        return parse_record(entry.get("record"), "spool")
    except RecordError:
        return None


_PENDING: dict[str, tuple[tuple[tuple[str, int, int, int], ...], Pending]] = {}


def pending(home: Path) -> Pending:
    """Spooled writes, in order (a forget after a remember hides it). Entries the store already has are
    filtered by the caller (search dedupes by id against the store's rows). Read again only when a spool file
    changed (every search asks; a gateway's spool holds up to a batch of writes)."""
    files, stamp = [], []
    for path in _spool_files(home):
        try:
            st = path.stat()
        except FileNotFoundError:
            continue  # claimed or imported meanwhile
        files.append(path)
        stamp.append((str(path), st.st_size, st.st_mtime_ns, st.st_ino))
    key = tuple(stamp)
    with _LOCKS_GUARD:
        cached = _PENDING.get(str(home))
    if cached is not None and cached[0] == key:
        return Pending(dict(cached[1].records), dict(cached[1].forgotten))
    out = _read_pending(files)
    with _LOCKS_GUARD:
        _PENDING[str(home)] = (key, out)
    return Pending(dict(out.records), dict(out.forgotten))


def _read_pending(files: list[Path]) -> Pending:
    out = Pending()
    for entry in sorted(_entries(files), key=_when):
        if entry.get("op") == "remember" and (record := _parse_entry(entry)) is not None:
            out.records.setdefault(record.id, record)
        elif entry.get("op") == "forget" and isinstance(entry.get("id"), str):
            out.forgotten[entry["id"]] = str(entry.get("reason", ""))
    return out


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
    """(store readable, the row: content, lifecycle, kind, compressed_from, summary_of, archived_by,
    archived_at)."""
    con = _read_only(home)
    if con is None:
        return False, None
    try:
        row = con.execute(
            "SELECT content, lifecycle, kind, compressed_from, summary_of, archived_by, archived_at "
            "FROM memories WHERE id = ?",
            [memory_id],
        ).fetchone()
    except duckdb.Error:
        return False, None
    finally:
        con.close()
    return True, row


def _forget_reason(con: duckdb.DuckDBPyConnection, memory_id: str) -> str:
    row = con.execute(
        "SELECT reason FROM tombstones WHERE memory_id = ? AND run_id = 'forget' AND reverted_at IS NULL "
        "ORDER BY archived_at DESC LIMIT 1",
        [memory_id],
    ).fetchone()
    return str(row[0]) if row and row[0] else ""


def _apply(con: duckdb.DuckDBPyConnection, entry: dict[str, Any]) -> str:
    """One spooled write into the store (the caller's transaction): 'inserted', 'same', 'conflict',
    'forgotten', 'skipped'."""
    if entry.get("op") == "remember":
        record = _parse_entry(entry)
        if record is None:
            return "skipped"
        row = con.execute("SELECT content FROM memories WHERE id = ?", [record.id]).fetchone()
        if row is not None:
            return "same" if row[0] == record.content else "conflict"
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
            return "skipped"
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


def _claim(home: Path) -> tuple[list[Path], list[dict[str, Any]]]:
    """Every spool file moved to `claimed/` (a writer that opened one before the move finishes first) and their
    entries, oldest first."""
    folder = spool_dir(home)
    claimed = folder / "claimed"
    claimed.mkdir(exist_ok=True)
    for path in sorted(folder.glob("*.jsonl")):
        os.replace(path, claimed / f"{time.time_ns()}-{path.stem}.{uuid.uuid4().hex[:8]}.jsonl")
    files = sorted(claimed.glob("*.jsonl"))
    entries: list[dict[str, Any]] = []
    for path in files:
        with open(path, "rb") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            entries.extend(_entries([path]))
    entries.sort(key=_when)  # stable: one file's lines keep their order; files interleave by time
    return files, entries


def _ingest_locked(home: Path, con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """The spool into the store over `con` (this process holds `_lock(home)`), in one transaction; then the files
    to `done/`. A `remember` whose id the store meanwhile holds with other text goes to `rejected.jsonl`."""
    folder = spool_dir(home)
    if not folder.is_dir() or not _spool_files(home):
        return {"files": 0, "inserted": 0, "forgotten": 0, "conflicts": 0}
    files, entries = _claim(home)
    counts = {"files": len(files), "inserted": 0, "forgotten": 0, "conflicts": 0}
    conflicts: list[dict[str, Any]] = []
    with atomic(con):
        for entry in entries:
            outcome = _apply(con, entry)
            if outcome in ("inserted", "forgotten"):
                counts[outcome] += 1
            elif outcome == "conflict":
                counts["conflicts"] += 1
                conflicts.append(entry)
    if conflicts:
        with open(folder / "rejected.jsonl", "a", encoding="utf-8") as fh:
            fh.writelines(json.dumps(e, ensure_ascii=False) + "\n" for e in conflicts)
            fh.flush()
            os.fsync(fh.fileno())
    done = folder / "done"
    done.mkdir(exist_ok=True)
    for path in files:
        os.replace(path, done / path.name)
    fsync_path(folder)
    return counts


def ingest_writes(home: Path, lock_timeout_s: float = 0.0) -> dict[str, int] | None:
    """Import every spooled write into the store, oldest first, in one transaction, then move the files to
    `done/`. None when the store is busy (the files stay spooled; the next call imports them). A `remember`
    whose id the store meanwhile holds with other text is kept in `rejected.jsonl` beside the spool."""
    home = Path(home)
    with _lock(home):
        if not spool_dir(home).is_dir() or not _spool_files(home):
            return {"files": 0, "inserted": 0, "forgotten": 0, "conflicts": 0}
        _claim(home)  # claimed before the store is tried: a busy store leaves them claimed, as a later call finds
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
                    row = con.execute("SELECT content FROM memories WHERE id = ?", [record.id]).fetchone()
                except duckdb.Error:  # e.g. a store file replaced since it was migrated: checked again next time
                    _MIGRATED.discard(_migrated_key(home / "memory.duckdb") or ("", 0, 0))
                    con.close()
                    con = None
            if (known := _already_held(record, row, pending(home))) is not None:
                return known
            _append(home, {"op": "remember", "record": _record_json(record), "at": _now_iso()})
            if con is None and not store_exists:
                con = _open_writer(home, OTHER_PROCESS_WAIT_S)  # the first write creates the store
            if con is None:
                return Remembered(record.id, created=True, stored=False)  # busy: spooled, searchable already
            try:
                _ingest_locked(home, con)
            except duckdb.Error:
                return Remembered(record.id, created=True, stored=False)  # rolled back: still spooled
            return Remembered(record.id, created=True, stored=True)
        finally:
            if con is not None:
                con.close()


def _already_held(record: MemoryRecord, row: tuple[Any, ...] | None, spool: Pending) -> Remembered | None:
    """The answer when the id is taken — in the store (`row`, its content first) or in the spool: nothing to
    write for the same text, an error naming both for another; None when the id is free."""
    held = row[0] if row is not None else None
    if held is None and (spooled := spool.records.get(record.id)) is not None:
        held = spooled.content
    if held is None:
        return None
    if held == record.content:
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
        _append(home, {"op": "remember", "record": _record_json(record), "at": _now_iso()})
        waiting = len(spool.records) + len(spool.forgotten) + 1
    if readable and waiting >= import_at:
        return Remembered(record.id, created=True, stored=ingest_writes(home, OTHER_PROCESS_WAIT_S) is not None)
    return Remembered(record.id, created=True, stored=False)


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
        if row is None and memory_id not in pend.records:
            if not readable and (home / "memory.duckdb").exists():
                raise WriteError(f"forget: the store is busy (a night is running) and memory {memory_id!r} is not "
                                 f"among the writes waiting for it; try again later; {NOTHING_WRITTEN}")  # fmt: skip
            raise WriteError(f"forget: no memory with id {memory_id!r}; {NOTHING_WRITTEN}")
        if row is not None:
            _check_forgettable(home, memory_id, row)
        event = uuid.uuid4().hex[:12]
        _append(home, {"op": "forget", "id": memory_id, "reason": reason, "event": event,
                       "at": _now_iso()})  # fmt: skip
    done = ingest_writes(home, OTHER_PROCESS_WAIT_S) if readable else None
    return Forgotten(memory_id, reason, stored=done is not None)


def _check_forgettable(home: Path, memory_id: str, row: tuple[Any, ...]) -> None:
    _content, lifecycle, kind, compressed_from, summary_of, archived_by, archived_at = row
    if lifecycle == FORGOTTEN:
        con = _read_only(home)
        why = ""
        if con is not None:
            try:
                why = _forget_reason(con, memory_id)
            finally:
                con.close()
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
        con.execute(
            "UPDATE tombstones SET reverted_at = ?, reverted_by = ? WHERE memory_id = ? AND cluster_id = ? "
            "AND reverted_at IS NULL",
            [utcnow(), by, memory_id, row[1]],
        )
        con.execute(
            "UPDATE memories SET lifecycle = 'active', archived_by = NULL, archived_at = NULL WHERE id = ?",
            [memory_id],
        )
        note_changed(con, [memory_id])
    return memory_id
