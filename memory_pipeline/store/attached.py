"""Short read-only reads of a store through one DuckDB instance per process.

Starting a DuckDB instance costs ~11 ms whatever the file (even `:memory:`); attaching a database file to a
running one costs ~2 ms. A process that reads stores again and again — the index update after each write, a
server refreshing its view of an agent's store — attaches the file read-only, reads, and detaches it. Detaching
releases DuckDB's file lock, so a writer in another process is blocked no longer than by a connection of its own.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

_LOCK = threading.Lock()
_NAMES = itertools.count()
_instance: duckdb.DuckDBPyConnection | None = None
_inherited: list[duckdb.DuckDBPyConnection] = []  # a parent's instance in a forked child: kept, never closed there


def _after_fork_in_child() -> None:
    """A forked child (a Celery prefork worker) starts an instance of its own; the parent's, whose threads did not
    survive the fork, is neither used nor closed there."""
    global _LOCK, _instance
    _LOCK = threading.Lock()
    if _instance is not None:
        _inherited.append(_instance)
        _instance = None


os.register_at_fork(after_in_child=_after_fork_in_child)


def _host() -> duckdb.DuckDBPyConnection:
    """This process's in-memory instance, started on first use."""
    global _instance
    with _LOCK:
        if _instance is None:
            _instance = duckdb.connect(":memory:")
        return _instance


@contextmanager
def attached(path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection whose unqualified names are the store's tables, read-only; the file is detached on exit.

    Raises what `duckdb.connect(path, read_only=True)` raises while a writer holds the lock (`duckdb.IOException`),
    so callers wait or give up as they did."""
    name = f"store_{os.getpid()}_{next(_NAMES)}"
    con = _host().cursor()
    try:
        quoted = str(path).replace("'", "''")
        try:
            con.execute(f"ATTACH '{quoted}' AS {name} (READ_ONLY)")
        except duckdb.ResourceInUseException:  # this process has the file open already: share that instance
            own = duckdb.connect(str(path), read_only=True)
            try:
                yield own
            finally:
                own.close()
            return
        try:
            con.execute(f"USE {name}")
            yield con
        finally:
            _detach(con, name)
    finally:
        con.close()


def _detach(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Detach `name`, whatever the reads left behind (an open transaction is rolled back first). If DuckDB still
    refuses, the whole instance is closed: a store left attached would keep its file lock from every writer."""
    global _instance
    for first in ("", "ROLLBACK"):
        try:
            if first:
                con.execute(first)
            con.execute("USE memory")
            con.execute(f"DETACH {name}")
            return
        except duckdb.Error:
            continue
    with _LOCK:
        if _instance is not None:
            _instance.close()
            _instance = None
