"""A lease in the store itself: one consolidation writes at a time, whoever starts it (Dagster or not).

A holder whose process runs the whole night also beats a heartbeat into a small file beside the store
(`.lease-heartbeats/` in the workspace): every host that can open the store can read it, and writing it needs
no DuckDB lock (DuckDB allows one writer process, and the night itself is that writer). On another host the
holder is alive while its heartbeat is younger than STALE_BEATS beats; a holder without one keeps the old rule
(its process on this host, the lease's expiry elsewhere), and the expiry stays the outer bound for everyone."""

from __future__ import annotations

import json
import os
import re
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

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


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pid_alive(lease: Lease) -> bool:
    """On this host we can tell whether the holder's process still exists; elsewhere we trust the expiry."""
    return lease.host != socket.gethostname() or process_exists(lease.pid)


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
    stop_heartbeat(holder, name)  # this process's beat for it, if any: a released lease needs no proof of life
    rows = con.execute("DELETE FROM leases WHERE name = ? AND holder = ? RETURNING holder", [name, holder]).fetchall()
    return bool(rows)


# ------------------------------------------------------------------------------------------------ heartbeat

HEARTBEAT_DIR = ".lease-heartbeats"
STALE_BEATS = 6  # a heartbeat older than this many of its intervals is a holder that stopped
DEFAULT_HEARTBEAT_S = 15.0


@dataclass(frozen=True)
class Beat:
    """The last sign of life of a lease holder: its host, process and clock, and how often it beats."""

    holder: str
    host: str
    pid: int
    at: datetime  # naive UTC, on the beating host's clock
    every_s: float

    @property
    def stale_after(self) -> timedelta:
        return timedelta(seconds=STALE_BEATS * self.every_s)


def beat_path(store_path: Path, holder: str, name: str = CONSOLIDATION) -> Path:
    return store_path.parent / HEARTBEAT_DIR / f"{name}.{re.sub(r'[^A-Za-z0-9._-]', '_', holder)}.json"


def read_beat(store_path: Path | None, holder: str, name: str = CONSOLIDATION) -> Beat | None:
    """The holder's heartbeat, or None: it never beat (an older holder, or one whose process does not run the
    whole night), or the file cannot be read — then the lease's old rules apply."""
    if store_path is None:
        return None
    try:
        data = json.loads(beat_path(store_path, holder, name).read_text(encoding="utf-8"))
        beat = Beat(str(data["holder"]), str(data["host"]), int(data["pid"]),
                    datetime.fromisoformat(str(data["at"])), float(data["every_s"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return beat if beat.holder == holder and beat.every_s > 0 else None


def write_beat(store_path: Path, holder: str, every_s: float, name: str = CONSOLIDATION) -> Beat:
    """One heartbeat, written whole (a temporary file renamed over the last one): a reader never sees half."""
    beat = Beat(holder, socket.gethostname(), os.getpid(), datetime.now(UTC).replace(tzinfo=None), every_s)
    path = beat_path(store_path, holder, name)
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_name(f".{path.name}.{beat.host}.{beat.pid}.{threading.get_ident()}.tmp")
    record = {"holder": holder, "host": beat.host, "pid": beat.pid, "at": beat.at.isoformat(), "every_s": every_s}
    tmp.write_text(json.dumps(record), encoding="utf-8")
    os.replace(tmp, path)
    return beat


def clear_beats(store_path: Path, keep: str, name: str = CONSOLIDATION) -> None:
    """Remove the heartbeats of earlier holders (the lease is now `keep`'s): their threads, if any live on,
    see their file gone and stop."""
    folder = store_path.parent / HEARTBEAT_DIR
    mine = beat_path(store_path, keep, name).name
    for path in [*folder.glob(f"{name}.*.json"), *folder.glob(f".{name}.*.tmp")] if folder.is_dir() else ():
        if path.name != mine and not path.name.startswith(f".{mine}."):  # a write killed half-way left a .tmp
            path.unlink(missing_ok=True)


def heartbeat_gone(
    beat: Beat, *, now: datetime, this_host: str, pid_exists: Callable[[int], bool] = process_exists
) -> str | None:
    """Why a beating holder is gone, or None while it may be alive. On this host its process decides at once;
    elsewhere its heartbeat's age (`now` naive UTC; the hosts' clocks must agree to well within the window)."""
    if beat.host == this_host:
        return None if pid_exists(beat.pid) else f"its process (pid {beat.pid} on {this_host}) is gone"
    age = (now - beat.at).total_seconds()
    if age <= beat.stale_after.total_seconds():
        return None
    return (
        f"its heartbeat from host {beat.host} stopped at {beat.at:%Y-%m-%d %H:%M:%S} UTC, {age:.0f} s ago "
        f"(stale after {STALE_BEATS} beats of {beat.every_s:g} s)"
    )


def holder_alive(held: Lease, beat: Beat | None, now: datetime | None = None) -> bool:
    """Whether the lease's holder may still be running: its heartbeat when it beats, else `pid_alive`."""
    if beat is None or beat.holder != held.holder:
        return pid_alive(held)
    moment = now or datetime.now(UTC).replace(tzinfo=None)
    return heartbeat_gone(beat, now=moment, this_host=socket.gethostname()) is None


class Heartbeat:
    """A daemon thread that beats for `holder` every `every_s` seconds until stopped, until its file is removed
    (the lease was taken over or released elsewhere), or until `until` (the lease's expiry: the outer bound).
    A write that fails is reported through `warn` (once per run of failures) and tried again next beat."""

    def __init__(
        self, store_path: Path, holder: str, every_s: float, until: datetime,
        warn: Callable[[str], object] = lambda line: None, name: str = CONSOLIDATION,
    ) -> None:
        self.store_path, self.holder, self.every_s, self.until, self.name = store_path, holder, every_s, until, name
        self.warn = warn
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"lease-heartbeat-{holder}", daemon=True)

    def start(self) -> Heartbeat:
        write_beat(self.store_path, self.holder, self.every_s, self.name)  # the first, before the night goes on
        self._thread.start()
        return self

    def stop(self, remove: bool = True) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        if remove:
            beat_path(self.store_path, self.holder, self.name).unlink(missing_ok=True)

    def _loop(self) -> None:
        path, failing = beat_path(self.store_path, self.holder, self.name), False
        while not self._stop.wait(self.every_s):
            if not path.exists() or datetime.now(UTC).replace(tzinfo=None) >= self.until:
                return
            try:
                write_beat(self.store_path, self.holder, self.every_s, self.name)
                failing = False
            except OSError as exc:
                if not failing:
                    self.warn(f"store lease heartbeat: cannot write {path}: {exc}")
                failing = True


_BEATING: dict[tuple[str, str], Heartbeat] = {}  # this process's heartbeats, so that `release` stops them
_BEATING_LOCK = threading.Lock()


def start_heartbeat(
    store_path: Path, holder: str, every_s: float, until: datetime,
    warn: Callable[[str], object] = lambda line: None, name: str = CONSOLIDATION,
) -> Heartbeat:
    """Beat for `holder` from this process (replacing an earlier beat of it here); `release` stops it."""
    stop_heartbeat(holder, name, remove=False)
    beat = Heartbeat(store_path, holder, every_s, until, warn, name).start()
    with _BEATING_LOCK:
        _BEATING[(name, holder)] = beat
    return beat


def stop_heartbeat(holder: str, name: str = CONSOLIDATION, remove: bool = True) -> None:
    with _BEATING_LOCK:
        beat = _BEATING.pop((name, holder), None)
    if beat is not None:
        beat.stop(remove=remove)
