"""A lease in the store itself: one consolidation writes at a time, whoever starts it (Dagster or not)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb

# DuckDB allows one writer process: every asset or op that writes the store shares this concurrency pool.
POOL = "memory_store"

CONSOLIDATION = "consolidation"
SKIP_MESSAGE = "consolidation already running, skipping"


@dataclass(frozen=True)
class Lease:
    name: str
    holder: str
    pid: int
    host: str
    acquired_at: datetime
    expires_at: datetime


class LeaseBusy(RuntimeError):
    def __init__(self, lease: Lease) -> None:
        super().__init__(
            f"{SKIP_MESSAGE} (held by {lease.holder}, pid {lease.pid} on {lease.host} since "
            f"{lease.acquired_at:%Y-%m-%d %H:%M:%S} UTC)"
        )
        self.lease = lease


def pid_alive(lease: Lease) -> bool:
    """On this host we can tell whether the holder's process still exists; elsewhere we trust the expiry."""
    if lease.host != socket.gethostname():
        return True
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def current(con: duckdb.DuckDBPyConnection, name: str = CONSOLIDATION) -> Lease | None:
    rows = con.execute(
        "SELECT name, holder, pid, host, acquired_at, expires_at FROM leases WHERE name = ?", [name]
    ).fetchall()
    return Lease(*rows[0]) if rows else None


def acquire(
    con: duckdb.DuckDBPyConnection,
    holder: str,
    now: datetime,
    ttl: timedelta,
    is_alive: Callable[[Lease], bool] = pid_alive,
    name: str = CONSOLIDATION,
) -> Lease:
    """Take the lease or raise LeaseBusy. A lease past its expiry, or whose holder is gone, is stale and
    is taken over. Call inside a transaction: DuckDB's write conflict then settles a race."""
    held = current(con, name)
    if held is not None and held.holder != holder and held.expires_at > now and is_alive(held):
        raise LeaseBusy(held)
    lease = Lease(name, holder, os.getpid(), socket.gethostname(), now, now + ttl)
    con.execute("DELETE FROM leases WHERE name = ?", [name])
    con.execute("INSERT INTO leases VALUES (?, ?, ?, ?, ?, ?)", [name, holder, lease.pid, lease.host, now, now + ttl])
    return lease


def release(con: duckdb.DuckDBPyConnection, holder: str, name: str = CONSOLIDATION) -> bool:
    rows = con.execute("DELETE FROM leases WHERE name = ? AND holder = ? RETURNING holder", [name, holder]).fetchall()
    return bool(rows)
