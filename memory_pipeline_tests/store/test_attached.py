"""Read-only reads through one DuckDB instance per process: the store's tables, the lock released on exit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from memory_pipeline.store.attached import attached

WRITE = "import duckdb, sys; c = duckdb.connect(sys.argv[1]); c.execute('INSERT INTO t VALUES (2)'); c.close()"
HOLD = ("import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('holding', flush=True); "
        "sys.stdin.readline(); c.close()")  # fmt: skip


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (x INTEGER)")
    con.execute("INSERT INTO t VALUES (1)")
    con.close()
    return path


def test_reads_the_stores_tables_by_their_names_and_releases_the_lock(db: Path) -> None:
    with attached(db) as con:
        assert con.execute("SELECT sum(x) FROM t").fetchone() == (1,)
        with pytest.raises(duckdb.Error):
            con.execute("INSERT INTO t VALUES (5)")  # read-only
    # another process can write once the block is left (it would fail on DuckDB's lock otherwise)
    subprocess.run([sys.executable, "-c", WRITE, str(db)], check=True, timeout=60)
    with attached(db) as con:  # and the next read sees the write
        assert con.execute("SELECT sum(x) FROM t").fetchone() == (3,)


def test_a_read_that_left_a_transaction_open_or_failed_still_releases_the_lock(db: Path) -> None:
    with attached(db) as con:
        con.execute("BEGIN")
        con.execute("SELECT count(*) FROM t").fetchall()
    with pytest.raises(duckdb.CatalogException), attached(db) as con:
        con.execute("SELECT * FROM no_such_table")
    subprocess.run([sys.executable, "-c", WRITE, str(db)], check=True, timeout=60)  # the lock is free


def test_a_writer_holding_the_lock_raises_what_a_read_only_connect_raises(db: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"  # waited for its lock
        with pytest.raises(duckdb.IOException), attached(db):
            pass
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=60)
    with attached(db) as con:
        assert con.execute("SELECT count(*) FROM t").fetchone() == (1,)


def test_a_file_this_process_has_open_is_read_through_that_connection(db: Path) -> None:
    mine = duckdb.connect(str(db), read_only=True)
    try:
        with attached(db) as con:
            assert con.execute("SELECT sum(x) FROM t").fetchone() == (1,)
    finally:
        mine.close()


def test_a_forked_child_reads_through_an_instance_of_its_own(db: Path) -> None:
    with attached(db) as con:  # the parent's instance exists before the fork
        assert con.execute("SELECT sum(x) FROM t").fetchone() == (1,)
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only when it could read the store
        code = 1
        try:
            with attached(db) as con:
                code = 0 if con.execute("SELECT sum(x) FROM t").fetchone() == (1,) else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0:  # bounded: a child stuck on the parent's lock fails here
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child did not finish reading within 60 s")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(done[1]) == 0
