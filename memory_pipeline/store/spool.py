"""The agents' write spool: `<workspace>/spool/writes/*.jsonl`, one JSON line per `remember` or `forget`,
fsynced before the call answers, so a killed server never loses an acknowledged write. `store.remember` imports
it into the store; search reads what it still holds (`pending`), so a remembered memory is found at once and a
forgotten one hidden at once; `build_record` is what a `remember` spools, validated as `import` validates a line.
Pure logic: no Dagster, no store connection."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_pipeline.store.db import utcnow
from memory_pipeline.store.durable import fsync_path
from memory_pipeline.store.forgotten import NOTHING_WRITTEN, WriteError
from memory_pipeline.store.records import MAX_ID_CHARS, MemoryRecord, RecordError, parse_record

SOURCE = "mcp:remember"
MAX_TEXT_CHARS = 65_536  # one memory; import's limit is a line, this is one agent's note
SPOOL = Path("spool") / "writes"
REJECTED = Path("spool") / "rejected.jsonl"  # outside the spool's folder, so it is never read as writes to make
RENAMED = Path("spool") / "renamed.jsonl"  # acknowledged remembers whose id was taken by then: stored under another
LOCK = Path("spool") / "writes.lock"  # outside the folder too: never listed as a spool file
CREATE_LOCK = Path("spool") / "create.lock"  # the first writers of a workspace create its store one at a time
_GUARD = threading.Lock()


@dataclass
class Pending:
    """What the spool holds that the store does not have yet."""

    records: dict[str, MemoryRecord] = field(default_factory=dict)
    forgotten: dict[str, str] = field(default_factory=dict)  # id -> reason


def default_id(text: str) -> str:
    """Without a client id the text names itself: remembering the same text twice stores it once."""
    return "mem-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


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


def record_json(r: MemoryRecord) -> dict[str, Any]:
    return {"id": r.id, "content": r.content, "importance": r.importance, "categories": r.categories,
            "tags": r.tags, "created_at": r.created_at.isoformat(), "kind": r.kind, "source": r.source}  # fmt: skip


def spool_dir(home: Path) -> Path:
    return Path(home) / SPOOL


def other_id(memory_id: str, text: str) -> str:
    """Where an acknowledged `remember` is stored when its id was taken with other text before the store could
    be checked (a night, or another writer, held it): the id with a mark of the text, so both are kept, and the
    same text lands on the same id whoever imports it."""
    mark = "~" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    return memory_id[: MAX_ID_CHARS - len(mark)] + mark


@contextmanager
def spool_lock(home: Path) -> Iterator[None]:
    """Every process's writers and importers of one workspace, one at a time (an flock on `spool/writes.lock`):
    a writer's check (is the id taken, in the store or the spool?) and its append are never split by an import
    that moves spooled writes into the store, so no write is acknowledged against a view that is already gone.
    Held for milliseconds (an append, or one import transaction); a killed holder's lock goes with it. Never
    held while waiting for the store's own lock."""
    with file_lock(Path(home) / LOCK):
        yield


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on `path` (created if missing) for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def append(home: Path, entry: dict[str, Any]) -> None:
    """One line, fsynced. Under an flock, and only into the file still at the path: an ingest that moved the
    file away (to claim it) never misses a line written into it afterwards."""
    folder = spool_dir(home)
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        fsync_path(folder.parent)
    path = folder / f"{utcnow():%Y%m%d}-{os.getpid()}.jsonl"
    data = line_of(entry).encode("utf-8")
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


_LINE_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


def line_of(entry: dict[str, Any]) -> str:
    """One JSON line, readable text kept as it is but for the characters a reader splitting text into lines
    (`str.splitlines`) would cut at — U+2028, U+2029, U+0085 — written as JSON escapes: a memory holding one
    is still one line to every reader."""
    text = json.dumps(entry, ensure_ascii=False)
    for raw, escaped in _LINE_BREAKS.items():
        text = text.replace(raw, escaped)
    return text + "\n"


def spool_files(home: Path) -> list[Path]:
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
        for line in raw.split(b"\n"):  # JSON text holds no raw newline; str.splitlines would also cut at U+2028
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError:  # not JSON, or not UTF-8
                continue  # a torn last line of a killed writer: never acknowledged
            if isinstance(entry, dict):
                yield entry


def _when(entry: dict[str, Any]) -> str:
    return str(entry.get("at", ""))  # ISO with microseconds: sorts as time does


def now_iso() -> str:
    return utcnow().isoformat(timespec="microseconds")


def parse_entry(entry: dict[str, Any]) -> MemoryRecord | None:
    try:
        return parse_record(entry.get("record"), "spool")
    except RecordError:
        return None


_PENDING: dict[str, tuple[tuple[tuple[str, int, int, int], ...], Pending]] = {}


def pending(home: Path) -> Pending:
    """Spooled writes, in order (a forget after a remember hides it; a remember after a forget shows it again).
    Entries the store already has are filtered by the caller (search dedupes by id against the store's rows).
    Read again only when a spool file changed (every search asks; a gateway's spool holds up to a batch of
    writes)."""
    files, stamp = [], []
    for path in spool_files(home):
        try:
            st = path.stat()
        except FileNotFoundError:
            continue  # claimed or imported meanwhile
        files.append(path)
        stamp.append((str(path), st.st_size, st.st_mtime_ns, st.st_ino))
    key = tuple(stamp)
    with _GUARD:
        cached = _PENDING.get(str(home))
    if cached is not None and cached[0] == key:
        return Pending(dict(cached[1].records), dict(cached[1].forgotten))
    out = _read_pending(files)
    with _GUARD:
        _PENDING[str(home)] = (key, out)
    return Pending(dict(out.records), dict(out.forgotten))


def _read_pending(files: list[Path]) -> Pending:
    out = Pending()
    for entry in sorted(_entries(files), key=_when):
        if entry.get("op") == "remember" and (record := parse_entry(entry)) is not None:
            out.records.setdefault(record.id, record)
            out.forgotten.pop(record.id, None)
        elif entry.get("op") == "forget" and isinstance(entry.get("id"), str):
            out.forgotten[entry["id"]] = str(entry.get("reason", ""))
    return out


def claim(home: Path) -> tuple[list[Path], list[dict[str, Any]]]:
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


def log_rejected(home: Path, entries: list[dict[str, Any]], log: Path = REJECTED) -> None:
    """Spooled writes the store refused when they were imported (a forget of a memory no longer active), or
    stored under another id (`log=RENAMED`), kept beside the spool with why, fsynced."""
    if not entries:
        return
    with open(Path(home) / log, "a", encoding="utf-8") as fh:
        fh.writelines(line_of(e) for e in entries)
        fh.flush()
        os.fsync(fh.fileno())
