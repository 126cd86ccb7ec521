"""Runs left in flight by a UI (or CLI) that stopped: `memory-pipeline ui` resolves them when it starts and again
after it stops, saying so in one line.

A run the instance still shows as STARTED, STARTING or CANCELING is over when the process executing it is gone:
its pid is the CLI's tag `memory_pipeline/pid` (with `memory_pipeline/host`), else the pid Dagster's own engine
events record ("Started process for run (pid: …)", the executor's step events). Such a run is marked failed
(canceled, when it was being canceled). A run with no known pid, or on another host, is left to Dagster's run
monitoring (`dagster.yaml`: a run that does not start within `start_timeout_seconds` is failed by the daemon).
QUEUED runs are Dagster's queue's: the daemon starts them, one per sensor or schedule at a time.
`verdict` is the plain rule; the rest reads and writes a DagsterInstance.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memory_pipeline.operator.recovery import HOST_TAG, PID_TAG, process_exists

IN_FLIGHT = ("STARTED", "STARTING", "CANCELING")


@dataclass(frozen=True)
class InFlight:
    run_id: str
    job_name: str
    status: str
    pid: int | None
    host: str | None  # None: this host (a run the UI launched from this DAGSTER_HOME)


def verdict(run: InFlight, *, this_host: str, pid_exists: Callable[[int], bool] = process_exists) -> str | None:
    """Why the run cannot still be running (one phrase), or None when it may be."""
    if run.status not in IN_FLIGHT or run.pid is None:
        return None
    if run.host is not None and run.host != this_host:
        return None
    return None if pid_exists(run.pid) else f"its process (pid {run.pid}) is gone"


def _int(text: object) -> int | None:
    return int(text) if isinstance(text, str) and text.isdigit() else None


def engine_pid(instance: Any, run_id: str) -> int | None:
    """The pid Dagster's latest engine event for the run names (the run worker, or the in-process executor)."""
    import dagster as dg

    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ENGINE_EVENT, ascending=False, limit=50
    ).records
    for record in records:
        event = record.event_log_entry.dagster_event
        data = event.engine_event_data if event is not None else None
        value = data.metadata.get("pid") if data is not None else None
        pid = _int(getattr(value, "value", None))
        if pid is not None:
            return pid
    return None


def in_flight(instance: Any) -> list[InFlight]:
    import dagster as dg

    statuses = [dg.DagsterRunStatus(s) for s in IN_FLIGHT]
    out = []
    for record in instance.get_run_records(filters=dg.RunsFilter(statuses=statuses)):
        run = record.dagster_run
        pid = _int(run.tags.get(PID_TAG)) or engine_pid(instance, run.run_id)
        out.append(InFlight(run.run_id, run.job_name, run.status.value, pid, run.tags.get(HOST_TAG)))
    return out


def reconcile(instance: Any, pid_exists: Callable[[int], bool] = process_exists) -> str:
    """Mark every in-flight run whose process is gone as failed (or canceled); return one line saying what
    was done, or an empty string when nothing was left in flight."""
    import dagster as dg

    this_host = socket.gethostname()
    ended: list[str] = []
    for run in in_flight(instance):
        reason = verdict(run, this_host=this_host, pid_exists=pid_exists)
        if reason is None:
            continue
        current = instance.get_run_by_id(run.run_id)
        if current is None or current.is_finished:
            continue
        message = f"marked {'canceled' if run.status == 'CANCELING' else 'failed'} by memory-pipeline ui: {reason}"
        if run.status == "CANCELING":
            instance.report_run_canceled(current, message)
        else:
            instance.report_run_failed(current, message)
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        ended.append(f"{run.job_name} {run.run_id[:8]}")
    queued = len(instance.get_run_ids(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.QUEUED])))
    parts = []
    if ended:
        parts.append(f"marked {len(ended)} run(s) left in flight as ended, their process gone: {', '.join(ended)}")
    if queued:
        parts.append(f"{queued} queued run(s) start as the run queue allows")
    return "; ".join(parts)
