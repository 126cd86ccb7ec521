import os
import socket
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memory_pipeline.store import MemoryStore, lease
from memory_pipeline.store import repository as repo
from memory_pipeline.store.backup import list_backups, restore, snapshot

T0 = datetime(2026, 11, 1, 3, 30)


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    s = MemoryStore(tmp_path / "memory.duckdb")
    s.migrate()
    return s


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_second_holder_is_refused_until_release(store: MemoryStore) -> None:
    with store.transaction() as con:
        lease.acquire(con, "run-a", T0, timedelta(hours=1))
    with store.transaction() as con, pytest.raises(lease.LeaseBusy, match="consolidation already running, skipping"):
        lease.acquire(con, "run-b", T0 + timedelta(minutes=5), timedelta(hours=1))
    with store.transaction() as con:
        assert lease.release(con, "run-a")
        assert not lease.release(con, "run-a")
        assert lease.acquire(con, "run-b", T0, timedelta(hours=1)).holder == "run-b"


def test_expired_lease_is_taken_over(store: MemoryStore) -> None:
    with store.transaction() as con:
        lease.acquire(con, "run-a", T0, timedelta(minutes=30))
        taken = lease.acquire(con, "run-b", T0 + timedelta(minutes=31), timedelta(minutes=30))
    assert taken.holder == "run-b"


def test_lease_of_a_dead_process_on_this_host_is_stale(store: MemoryStore) -> None:
    pid = dead_pid()
    with store.transaction() as con:
        con.execute("INSERT INTO leases VALUES ('consolidation', 'killed-run', ?, ?, ?, ?)",
                    [pid, socket.gethostname(), T0, T0 + timedelta(hours=6)])
        assert lease.acquire(con, "run-b", T0 + timedelta(minutes=1), timedelta(hours=1)).holder == "run-b"


def test_lease_of_a_live_process_or_another_host_is_respected(store: MemoryStore) -> None:
    with store.transaction() as con:
        con.execute("INSERT INTO leases VALUES ('consolidation', 'elsewhere', 1, 'other-host', ?, ?)",
                    [T0, T0 + timedelta(hours=6)])
    with store.transaction() as con, pytest.raises(lease.LeaseBusy, match="other-host"):
        lease.acquire(con, "run-b", T0 + timedelta(hours=1), timedelta(hours=1))
    held = lease.Lease("consolidation", "me", os.getpid(), socket.gethostname(), T0, T0)
    assert lease.pid_alive(held)


def add_memory(store: MemoryStore, mid: str) -> None:
    from memory_pipeline.store.records import MemoryRecord

    with store.transaction() as con:
        repo.insert_memories(con, [MemoryRecord(mid, f"memory {mid}", 1.0, T0)])


def test_backup_restore_round_trip_and_retention(store: MemoryStore, tmp_path: Path) -> None:
    backups = tmp_path / "backups"
    add_memory(store, "a")
    first = snapshot(store, backups, "run-1", keep=2)
    add_memory(store, "b")
    snapshot(store, backups, "run-2", keep=2)
    add_memory(store, "c")
    snapshot(store, backups, "run-3", keep=2)
    names = [b.path.name for b in list_backups(backups)]
    assert names == ["memory-run-3.duckdb", "memory-run-2.duckdb"]  # only `keep` are kept, newest first
    assert not first.exists()
    safety = restore(store, backups / "memory-run-2.duckdb", backups, keep=2)
    with store.connect() as con:
        assert sorted(r[0] for r in con.execute("SELECT id FROM memories").fetchall()) == ["a", "b"]
    restore(store, safety, backups, keep=2)  # restore is itself undoable
    with store.connect() as con:
        assert repo.memory_count(con) == 3


def test_restore_of_missing_backup_changes_nothing(store: MemoryStore, tmp_path: Path) -> None:
    add_memory(store, "a")
    with pytest.raises(FileNotFoundError, match="no such backup"):
        restore(store, tmp_path / "nope.duckdb", tmp_path / "backups", keep=2)
    with store.connect() as con:
        assert repo.memory_count(con) == 1
