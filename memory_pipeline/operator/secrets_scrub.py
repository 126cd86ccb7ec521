"""`memory-pipeline doctor --secrets --scrub`: every secret the scan finds is rewritten in place with the redaction
every write applies today (`redaction.redact`, the one redactor), and the workspace is scanned again.

Each place is rewritten whole or not at all, so a failure half-way leaves it as it was and a second scrub finishes
the job: a database file is copied, its rows rewritten in one transaction, and the result copied once more into a
fresh file that replaces the original (DuckDB keeps old values in its free blocks, the fresh copy does not); a
SQLite file is rewritten in one transaction, then vacuumed; a text or Parquet file is written beside itself,
synced and renamed over the original; a git repository's history is exported, its blobs and messages redacted,
imported into a scratch repository, fetched back and every ref moved to it in one transaction, then its reflogs
expired and its unreachable objects pruned. The store is rewritten only under its consolidation lease, so never
under a night. A folder built from the rest (the search index: its files must fit each other) is never rewritten
in place but rebuilt once the rest is scrubbed, by the function its owner hands in (`Derived`). What cannot be
rewritten safely (a pickled step output, another binary file) is named with what the user can do.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from memory_pipeline import redaction
from memory_pipeline.faults import fail_point
from memory_pipeline.operator import secrets_scan as scan_
from memory_pipeline.operator.secrets_scan import DAGSTER_LABEL, STORE, Finding, Scan
from memory_pipeline.store.durable import fsync_path

LEASE_TTL = timedelta(hours=1)  # the outer bound; a scrub that dies is seen gone at once (its pid) on this host
LOCK_WAIT_S = 10.0  # how long to wait for another process to let go of the store's file


class StoreBusy(RuntimeError):
    """A night holds the store (its lease), or another process holds its file: nothing was changed."""


@dataclass(frozen=True)
class Derived:
    """A folder of the workspace built from the rest of it (the search index): rebuilt, never rewritten."""

    folder: str  # relative to the workspace
    name: str  # what the user reads
    rebuild: Callable[[Path], None]  # given the workspace; reads only what is already scrubbed

    def holds(self, place: str) -> bool:
        return place == self.folder or place.startswith(f"{self.folder}/")


@dataclass
class Scrub:
    """What a scrub rewrote (place → secrets), what failed (one line each), what it cannot rewrite safely, and
    the scan afterwards."""

    scrubbed: Counter[str] = field(default_factory=Counter)
    rebuilt: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    unsafe: list[str] = field(default_factory=list)
    after: Scan = field(default_factory=Scan)


def redacted(text: str) -> str:
    """`text` as a write would store it today, whatever MEMORY_PIPELINE_SECRETS says: the user asked for it."""
    return redaction.redact(text, environ={})[0]


def redacted_bytes(data: bytes) -> bytes:
    """Bytes read as UTF-8, every byte that is not kept as it was (surrogateescape), then redacted."""
    text = data.decode("utf-8", errors="surrogateescape")
    new = redacted(text)
    return data if new == text else new.encode("utf-8", errors="surrogateescape")


def redacted_value(value: Any) -> Any:
    """A cell redacted: a string, bytes, or the strings of a (nested) list; anything else as it is."""
    if isinstance(value, str):
        return redacted(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return redacted_bytes(bytes(value))
    if isinstance(value, list | tuple):
        return type(value)(redacted_value(v) for v in value)
    return value


# --- files ---------------------------------------------------------------------------------------------------


def stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


@contextmanager
def replacing(path: Path, read: tuple[int, int] | None = None) -> Iterator[Path]:
    """A temporary file beside `path` to write the new version to; on success it is synced and renamed over
    `path` (its permissions kept), on any failure removed: `path` is either all old or all new. `read`: the
    `stamp` of the version the new one was made from; a file written since is left to the next scrub."""
    tmp = path.with_name(f".{path.name}.scrub.tmp")
    tmp.unlink(missing_ok=True)  # an earlier scrub that died half-way
    try:
        yield tmp
        shutil.copymode(path, tmp)
        with tmp.open("rb+") as f:
            os.fsync(f.fileno())
        fail_point("scrub_replace")  # tests: a failure between the new version written and the rename
        if read is not None and stamp(path) != read:
            raise OSError(f"{path.name} changed while it was scrubbed: run the scrub again")
        os.replace(tmp, path)
        fsync_path(path.parent)
    finally:
        tmp.unlink(missing_ok=True)


def scrub_text(path: Path) -> None:
    read = stamp(path)
    data = path.read_bytes()
    new = redacted_bytes(data)
    if new != data:
        with replacing(path, read) as tmp:
            tmp.write_bytes(new)


def scrub_parquet(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    read = stamp(path)
    table = pq.read_table(path)
    columns = set(scan_.parquet_text_columns(table))
    arrays = [pa.array([redacted_value(v) for v in table.column(f.name).to_pylist()], type=f.type)
              if f.name in columns else table.column(f.name) for f in table.schema]  # fmt: skip
    with replacing(path, read) as tmp:
        pq.write_table(pa.Table.from_arrays(arrays, schema=table.schema), tmp)


# --- databases -----------------------------------------------------------------------------------------------


def _rewrite_rows(con: Any, tables: dict[str, tuple[list[str], str | None]], marker: str) -> None:
    """Every row whose text columns hold a secret, rewritten (`marker` is the parameter placeholder)."""
    for table, (columns, key) in sorted(tables.items()):
        changed = []
        for rowid, _, values in scan_.table_rows(con, table, columns, key):
            new = [redacted_value(v) for v in values]
            if new != list(values):
                changed.append((rowid, {c: n for c, v, n in zip(columns, values, new, strict=True) if n != v}))
        for rowid, cells in changed:
            sets = ", ".join(f"{scan_.quote_name(c)} = {marker}" for c in cells)
            sql = f"UPDATE {scan_.quote_name(table)} SET {sets} WHERE rowid = {marker}"  # noqa: S608
            con.execute(sql, [*cells.values(), rowid])


def scrub_duckdb(path: Path) -> None:
    """The rows rewritten in one transaction on a copy, the copy copied into a fresh file (so no free block
    keeps an old value), and that file renamed over `path`, while a connection to `path` keeps other writers
    out."""
    import duckdb

    held = duckdb.connect(str(path))
    work = path.with_name(f".{path.name}.scrub-work")
    try:
        held.execute("CHECKPOINT")  # everything in the file itself, none of it in the WAL
        for leftover in (work, work.with_name(work.name + ".wal")):
            leftover.unlink(missing_ok=True)
        shutil.copyfile(path, work)
        con = duckdb.connect(str(work))
        try:
            con.begin()
            _rewrite_rows(con, scan_.duckdb_text_columns(con), "?")
            fail_point("scrub_database")  # tests: a failure with half the database rewritten
            con.commit()
            with replacing(path) as tmp:
                tmp.unlink(missing_ok=True)
                con.execute(f"ATTACH '{str(tmp).replace(chr(39), chr(39) * 2)}' AS scrubbed")
                con.execute(f"COPY FROM DATABASE {scan_.quote_name(_catalog(con))} TO scrubbed")
                con.execute("DETACH scrubbed")
        finally:
            con.close()
    finally:
        held.close()
        for leftover in (work, work.with_name(work.name + ".wal")):
            leftover.unlink(missing_ok=True)


def _catalog(con: Any) -> str:
    return str(con.execute("SELECT current_database()").fetchone()[0])


def scrub_sqlite(path: Path) -> None:
    """One transaction (old pages overwritten with zeros as they are freed), then a vacuum and a checkpoint of
    the write-ahead log, so no page keeps an old value."""
    con = sqlite3.connect(path, timeout=LOCK_WAIT_S, isolation_level=None)
    try:
        con.execute("PRAGMA secure_delete = ON")
        con.execute("BEGIN IMMEDIATE")
        try:
            _rewrite_rows(con, scan_.sqlite_text_columns(con), "?")
            fail_point("scrub_database")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
        con.execute("VACUUM")
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()


# --- git -----------------------------------------------------------------------------------------------------


def redacted_stream(stream: bytes) -> bytes:
    """A `git fast-export` stream with every `data` payload (blob, commit or tag message) redacted; a blob
    holding a NUL byte (not text) is left as it is."""
    out: list[bytes] = []
    at = 0
    while at < len(stream):
        end = stream.find(b"\n", at)
        end = len(stream) if end < 0 else end
        line = stream[at:end]
        if line.startswith(b"data ") and not line.startswith(b"data <<"):
            size = int(line[5:])
            body = stream[end + 1 : end + 1 + size]
            new = body if b"\x00" in body else redacted_bytes(body)
            out += [b"data %d\n" % len(new), new]
            at = end + 1 + size
        else:
            out.append(line + b"\n")
            at = end + 1
    return b"".join(out)


NEW_REFS = "refs/scrubbed/"  # where the rewritten history waits until every ref moves to it at once


def _refs(repo: Path, under: str = "refs/") -> dict[str, str]:
    listing = scan_.run_git(repo, "for-each-ref", "--format=%(objectname) %(refname)", under).decode()
    return {ref: sha for sha, _, ref in (line.partition(" ") for line in listing.splitlines())}


def scrub_git(repo: Path) -> None:
    """Every commit whose tree or message holds a secret rewritten (the others keep their ids), every ref moved
    in one transaction — refused when any moved since the export (a commit made meanwhile is never lost) —
    then the old objects pruned for good."""
    git = scan_.run_git
    git_dir = Path(os.path.realpath(repo / git(repo, "rev-parse", "--git-common-dir").decode().strip()))
    head_tree = _tree(repo)
    before = _refs(repo)
    stream = git(repo, "fast-export", "--all", "--signed-tags=strip", "--tag-of-filtered-object=rewrite",
                 "--reencode=no")  # fmt: skip
    try:
        with tempfile.TemporaryDirectory(prefix="scrub-", dir=git_dir) as scratch:
            git(Path(scratch), "init", "--bare", "-q")
            git(Path(scratch), "fast-import", "--quiet", "--force", data=redacted_stream(stream))
            git(repo, "fetch", "--no-tags", "--no-write-fetch-head", "--quiet", scratch, f"+refs/*:{NEW_REFS}*")
        fail_point("scrub_git")  # tests: a failure with the new history written but no ref moved
        moves = [f"update refs/{ref[len(NEW_REFS):]} {sha} {before.get('refs/' + ref[len(NEW_REFS):], '0' * 40)}\n"
                 for ref, sha in _refs(repo, NEW_REFS).items()]  # fmt: skip
        git(repo, "update-ref", "--stdin", data=("start\n" + "".join(moves) + "prepare\ncommit\n").encode())
    finally:
        drops = "".join(f"delete {ref}\n" for ref in _refs(repo, NEW_REFS))
        if drops:
            git(repo, "update-ref", "--stdin", data=drops.encode())
    (git_dir / "ORIG_HEAD").unlink(missing_ok=True)  # may name an old commit
    if head_tree is not None and _tree(repo) != head_tree and git(repo, "rev-parse", "--is-bare-repository") \
            .strip() == b"false":  # fmt: skip
        git(repo, "read-tree", "HEAD")  # the index named the old blobs; the working tree is already scrubbed
    git(repo, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    git(repo, "gc", "--prune=now", "--quiet")


def _tree(repo: Path) -> str | None:
    try:
        return scan_.run_git(repo, "rev-parse", "-q", "--verify", "HEAD^{tree}").decode().strip()
    except OSError:
        return None


# --- the store's lease ---------------------------------------------------------------------------------------


@contextmanager
def store_lease(store_path: Path, holder: str) -> Iterator[None]:
    """The store's consolidation lease for the whole scrub, as a rollback takes it; StoreBusy when a night (or
    another process) holds the store. No store, or one without leases yet: nothing to hold."""
    import duckdb

    from memory_pipeline.store import MemoryStore, lease
    from memory_pipeline.store.db import StoreError, utcnow

    store = MemoryStore(store_path, lock_timeout_s=LOCK_WAIT_S)
    if not store_path.is_file():
        yield
        return
    try:
        with store.transaction() as con:
            if not con.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = 'leases'").fetchall():
                held = None
            else:
                alive = lambda h: lease.holder_alive(h, lease.read_beat(store_path, h.holder))  # noqa: E731
                held = lease.acquire(con, holder, utcnow(), LEASE_TTL, alive)
    except lease.LeaseBusy as busy:
        b = busy.lease
        raise StoreBusy(f"a night holds the memory store ({b.holder}, pid {b.pid} on {b.host} since "
                        f"{b.acquired_at:%Y-%m-%d %H:%M:%S} UTC); scrub when it has finished") from None  # fmt: skip
    except (StoreError, duckdb.Error) as exc:
        raise StoreBusy(f"the memory store cannot be opened for writing ({scan_.first_line(exc)})") from None
    try:
        yield
    finally:
        if held is not None:
            with store.transaction() as con:
                lease.release(con, holder)


# --- the whole workspace -------------------------------------------------------------------------------------


def _path(place: str, home: Path, dagster_home: Path | None) -> Path:
    top, _, rest = place.partition("/")
    if top == DAGSTER_LABEL and dagster_home is not None:
        return dagster_home / rest
    return home / place


def _unsafe_line(place: str) -> str:
    if place.startswith(f"{DAGSTER_LABEL}/storage/"):
        run = place.split("/")[2]
        return (f"{place}: a stored step output cannot be rewritten safely: delete the file, or delete run {run} "
                f"with `dagster run delete {run}`")  # fmt: skip
    return f"{place}: not text, a database or Parquet, so it cannot be rewritten safely: delete it or replace it"


def _scrub_place(place: str, path: Path, found: list[Finding]) -> bool:
    """Rewrite one place; False when it is a kind that cannot be rewritten safely."""
    if any(f.where.startswith("commit ") for f in found):
        scrub_git(path.parent)
        return True
    kind = scan_.file_kind(path)
    rewrite = {"duckdb": scrub_duckdb, "sqlite": scrub_sqlite, "parquet": scrub_parquet, "text": scrub_text}
    if kind not in rewrite:
        return False
    rewrite[kind](path)
    return True


def scrub_workspace(home: Path, dagster_home: Path | None, holder: str, derived: Sequence[Derived] = ()) -> Scrub:
    """Scan, rewrite every place with a finding (the store under its lease; git histories last, after their
    working trees; `derived` folders rebuilt after everything else), and scan again. Raises StoreBusy, having
    changed nothing, when a night holds the store."""
    result = Scrub()
    skipped: dict[str, Path] = {}
    with store_lease(home / STORE, holder):
        before = scan_.scan_workspace(home, dagster_home)
        result.failed += [f"{p} (not read)" for p in before.problems]
        places: dict[str, list[Finding]] = {}
        for f in before.findings:
            places.setdefault(f.place, []).append(f)
        stale = [d for d in derived if any(d.holds(p) for p in places)]
        for place in sorted(places, key=lambda p: (p.endswith(".git"), p)):
            path = _path(place, home, dagster_home)
            try:
                if any(d.holds(place) for d in stale):
                    continue
                if _scrub_place(place, path, places[place]):
                    result.scrubbed[place] = len(places[place])
                else:
                    skipped[place] = path
            except Exception as exc:  # noqa: BLE001 — one place failing leaves it whole; the others go on
                result.failed.append(f"{place}: {scan_.first_line(exc)}")
        for d in stale:
            try:
                d.rebuild(home)
                result.rebuilt.append(f"{d.name} ({d.folder}/)")
            except Exception as exc:  # noqa: BLE001 — said, and the scan after shows what it still holds
                result.failed.append(f"{d.folder}/: {d.name} could not be rebuilt ({scan_.first_line(exc)})")
    result.after = scan_.scan_workspace(home, dagster_home)
    left = {f.place for f in result.after.findings}  # a database's log file is gone once the database is rewritten
    result.unsafe = [_unsafe_line(place) for place in skipped if place in left]
    return result
