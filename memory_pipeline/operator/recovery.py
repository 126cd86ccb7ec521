"""Free the store's concurrency-pool slot of a run that is gone, whichever host it ran on, and wait visibly.

A run SIGKILLed mid-step stays STARTED in the Dagster instance and keeps its `memory_store` slot: every later
run would wait for it forever (Dagster's in-process executor polls without a word). Before a CLI run starts we
look at every run that holds or waits for a slot and decide whether it is still alive:

- the instance says it ended (e.g. the daemon's run monitoring failed it) → its slots are freed;
- it holds the store's lease and beats its heartbeat (store/lease.py: a night whose process runs all of it):
  on this host, alive while the beating process is; elsewhere, while its last beat is younger than
  STALE_BEATS beats (6 × MEMORY_PIPELINE_LEASE_HEARTBEAT_SECONDS), and never past the lease's expiry;
- it holds the lease without a heartbeat: on this host, alive while the lease's process is (for runs the CLI
  started, whose lease pid is the run's own process); elsewhere, alive until the lease expires
  (MEMORY_PIPELINE_LEASE_TTL_HOURS);
- no lease: a CLI run on this host is alive while its process (tag `memory_pipeline/pid`) is; any other run
  until its start + the lease TTL.

A stale run is marked failed in the instance and its slots are freed. A live holder makes us wait, with a
line at least every 30 s naming it, and give up after MEMORY_PIPELINE_POOL_WAIT_MINUTES.
The decision (`stale_reason`) is a plain function; the rest talks to a DagsterInstance.
"""

from __future__ import annotations

import ctypes
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.store.lease import Beat, Lease, heartbeat_gone, read_beat
from memory_pipeline.store.lease import process_exists as process_exists  # re-exported: reconcile uses it

PID_TAG, HOST_TAG = "memory_pipeline/pid", "memory_pipeline/host"
LOG_EVERY_S = 30.0
POLL_S = 2.0


class PoolWaitTimeout(UserError):
    """Another run held the store's pool slot for longer than MEMORY_PIPELINE_POOL_WAIT_MINUTES."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=1)


@dataclass(frozen=True)
class Holder:
    """A run that holds (or waits for) a slot of the pool, with what we know about its liveness."""

    run_id: str
    finished_status: str | None  # SUCCESS / FAILURE / CANCELED when the instance says it ended; None otherwise
    started_at: datetime | None  # naive UTC
    pid: int | None  # from our tag: the process of a CLI (in-process) run
    host: str | None
    lease: Lease | None  # the store's lease, when this run holds it
    beat: Beat | None = None  # the lease's heartbeat, when this run holds the lease and beats

    def describe(self, now: datetime | None = None) -> str:
        where = f"pid {self.pid} on {self.host}" if self.pid else (f"on {self.lease.host}" if self.lease else "")
        since = f"since {self.started_at:%Y-%m-%d %H:%M:%S} UTC" if self.started_at else "start unknown"
        beat = ""
        if self.beat is not None:
            age = ((now or datetime.now(UTC).replace(tzinfo=None)) - self.beat.at).total_seconds()
            beat = f"heartbeat from {self.beat.host} {max(age, 0):.0f} s ago"
        return f"run {self.run_id} ({', '.join(p for p in (where, since, beat) if p)})"


def stale_reason(
    holder: Holder,
    *,
    this_host: str,
    now: datetime,
    ttl: timedelta,
    pid_exists: Callable[[int], bool] = process_exists,
) -> str | None:
    """Why the holder is gone, or None while it may still be running. `now` is naive UTC."""
    if holder.finished_status is not None:
        return f"the run ended ({holder.finished_status}) without freeing its slot"
    lease = holder.lease
    if lease is not None and holder.beat is not None:  # a beating holder: its heartbeat, within the TTL
        if lease.expires_at <= now:
            return f"its store lease from host {lease.host} expired at {lease.expires_at:%Y-%m-%d %H:%M:%S} UTC"
        return heartbeat_gone(holder.beat, now=now, this_host=this_host, pid_exists=pid_exists)
    if lease is not None and lease.host != this_host:
        if lease.expires_at <= now:
            return f"its store lease from host {lease.host} expired at {lease.expires_at:%Y-%m-%d %H:%M:%S} UTC"
        return None
    if holder.pid and holder.host == this_host:
        return None if pid_exists(holder.pid) else f"its process (pid {holder.pid} on {this_host}) is gone"
    if lease is not None:
        expired = lease.expires_at <= now
        return f"its store lease expired at {lease.expires_at:%Y-%m-%d %H:%M:%S} UTC" if expired else None
    if holder.started_at is not None and holder.started_at + ttl <= now:
        return f"it started at {holder.started_at:%Y-%m-%d %H:%M:%S} UTC, longer ago than the lease TTL"
    return None


def _naive_utc(ts: float | None) -> datetime | None:
    return datetime.fromtimestamp(ts, UTC).replace(tzinfo=None) if ts else None


def store_lease(store_path: Path | None) -> Lease | None:
    """The store's consolidation lease, or None (no store, or it cannot be read right now)."""
    if store_path is None or not store_path.exists():
        return None
    from memory_pipeline.store import MemoryStore, lease

    try:
        with MemoryStore(store_path, lock_timeout_s=5.0).connect() as con:
            return lease.current(con)
    except Exception:  # noqa: BLE001 - a locked or damaged store tells us nothing about liveness
        return None


def holders(instance: Any, pool: str, store_path: Path | None, exclude: str | None = None) -> list[Holder]:
    """Every run holding or waiting for a slot of `pool`, claimed ones first."""
    info = instance.event_log_storage.get_concurrency_info(pool)
    claimed = [s.run_id for s in info.claimed_slots]
    waiting = [s.run_id for s in info.pending_steps]
    held = store_lease(store_path)
    out: list[Holder] = []
    for run_id in dict.fromkeys([*claimed, *waiting]):
        if run_id == exclude:
            continue
        record = next(iter(instance.get_run_records(filters=_filter(run_id), limit=1)), None)
        run = record.dagster_run if record is not None else None
        status = None if run is not None and not run.is_finished else (run.status.value if run else "DELETED")
        pid = run.tags.get(PID_TAG) if run is not None else None
        started = _naive_utc(record.start_time or record.create_timestamp.timestamp()) if record else None
        out.append(
            Holder(
                run_id=run_id,
                finished_status=status,
                started_at=started,
                pid=int(pid) if pid and pid.isdigit() else None,
                host=run.tags.get(HOST_TAG) if run is not None else None,
                lease=held if held is not None and held.holder == run_id else None,
                beat=read_beat(store_path, run_id) if held is not None and held.holder == run_id else None,
            )
        )
    return out


def _filter(run_id: str) -> Any:
    import dagster as dg

    return dg.RunsFilter(run_ids=[run_id])


def free_stale(
    instance: Any,
    pool: str,
    store_path: Path | None,
    ttl: timedelta,
    log: Callable[[str], object],
    exclude: str | None = None,
) -> list[Holder]:
    """Free the slots of gone runs (marking unfinished ones failed); return the holders that may be alive."""
    this_host, now = socket.gethostname(), datetime.now(UTC).replace(tzinfo=None)
    alive = []
    for holder in holders(instance, pool, store_path, exclude):
        reason = stale_reason(holder, this_host=this_host, now=now, ttl=ttl)
        if reason is None:
            alive.append(holder)
            continue
        if holder.finished_status is None:
            run = instance.get_run_by_id(holder.run_id)
            if run is not None and not run.is_finished:
                instance.report_run_failed(run, f"marked failed by memory-pipeline: {reason}")
        instance.event_log_storage.free_concurrency_slots_for_run(holder.run_id)
        log(f"freed the {pool} slot of run {holder.run_id}: {reason}")
    return alive


def give_up_message(waited: float, pool: str, names: str) -> str:
    return (
        f"gave up after {waited:.0f} s waiting for the store's `{pool}` slot, held by {names}: if that run is dead, "
        "mark it failed in the Dagster UI (Runs → Terminate) or wait for its lease to expire; "
        "MEMORY_PIPELINE_POOL_WAIT_MINUTES sets how long to wait"
    )


def wait_for_pool(
    instance: Any,
    pool: str,
    store_path: Path | None,
    *,
    ttl: timedelta,
    timeout_s: float,
    log: Callable[[str], object],
    exclude: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] = time.sleep,
    log_every_s: float = LOG_EVERY_S,
) -> None:
    """Return once no live run holds a slot of `pool` (freeing gone runs' slots on the way); log what we wait
    for at least every `log_every_s`; raise PoolWaitTimeout after `timeout_s`."""
    started = clock()
    last_log = -float("inf")
    while True:
        alive = free_stale(instance, pool, store_path, ttl, log, exclude)
        info = instance.event_log_storage.get_concurrency_info(pool)
        limit = info.limit if info.limit is not None else 1
        busy = [h for h in alive if h.run_id in {s.run_id for s in info.claimed_slots}]
        if len(busy) < max(limit, 1):
            return
        waited = clock() - started
        names = "; ".join(h.describe() for h in busy)
        if waited >= timeout_s:
            raise PoolWaitTimeout(give_up_message(waited, pool, names))
        if clock() - last_log >= log_every_s:
            last_log = clock()
            log(f"waiting for the store's `{pool}` slot, held by {names}; waited {waited:.0f} s of {timeout_s:.0f} s")
        sleep(min(POLL_S, max(timeout_s - waited, 0.05)))


class PoolWaitAbort(BaseException):  # noqa: N818 - not an error of its own: PoolWatch turns it into PoolWaitTimeout
    """Raised asynchronously in the main thread to stop a run that waited too long for its slot."""


class PoolWatch:
    """While a run launched from here waits for a slot inside Dagster's executor (which polls without a word),
    a thread frees gone runs' slots, says whom the run waits for at least every `log_every_s`, and interrupts
    the run (KeyboardInterrupt in the main thread) after `timeout_s`; `timed_out` then holds the message.
    The pre-launch `wait_for_pool` makes this rare: it covers a holder that appears between the two."""

    def __init__(
        self,
        instance: Any,
        pool: str,
        run_id: str,
        store_path: Path | None,
        *,
        ttl: timedelta,
        timeout_s: float,
        log: Callable[[str], object],
        check_every_s: float = 5.0,
        log_every_s: float = LOG_EVERY_S,
    ) -> None:
        self.instance, self.pool, self.run_id, self.store_path = instance, pool, run_id, store_path
        self.ttl, self.timeout_s, self.log = ttl, timeout_s, log
        self.check_every_s, self.log_every_s = check_every_s, log_every_s
        self.timed_out: str | None = None
        self._main_ident = threading.main_thread().ident or 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="memory-pipeline-pool-watch", daemon=True)

    def __enter__(self) -> PoolWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _abort_main(self) -> None:
        """Raise PoolWaitAbort in the main thread, which spins in Dagster's claim loop. Not a signal: Dagster's
        execution defers SIGINT (and so `_thread.interrupt_main`) to checkpoints that this loop never reaches."""
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(self._main_ident), ctypes.py_object(PoolWaitAbort)
        )

    def _waiting(self, instance: Any) -> bool:
        info = instance.event_log_storage.get_concurrency_info(self.pool)
        return any(s.run_id == self.run_id and s.assigned_timestamp is None for s in info.pending_steps)

    def _loop(self) -> None:
        import dagster as dg

        waiting_since: float | None = None
        last_log = -float("inf")
        with dg.DagsterInstance.from_ref(self.instance.get_ref()) as instance:  # its own connections
            while not self._stop.wait(self.check_every_s):
                try:
                    if not self._waiting(instance):
                        waiting_since = None
                        continue
                    waiting_since = waiting_since if waiting_since is not None else time.monotonic()
                    alive = free_stale(instance, self.pool, self.store_path, self.ttl, self.log, exclude=self.run_id)
                    names = "; ".join(h.describe() for h in alive) or "a run that has just freed it"
                    waited = time.monotonic() - waiting_since
                    if waited >= self.timeout_s and alive:
                        self.timed_out = give_up_message(waited, self.pool, names)
                        self._abort_main()
                        return
                    if time.monotonic() - last_log >= self.log_every_s:
                        last_log = time.monotonic()
                        self.log(f"run {self.run_id} waits for the store's `{self.pool}` slot, held by {names}; "
                                 f"waited {waited:.0f} s of {self.timeout_s:.0f} s")
                except Exception as exc:  # noqa: BLE001 - the watch must never break the run it watches
                    self.log(f"(pool watch: {exc})")
