"""A night whose Celery worker was lost whole is failed (and so retried) within a minute, not after the broker's
35-minute visibility timeout: `MEMORY_PIPELINE_CELERY_MODE=runs` (deploy/fleet/dagster-runs-on-workers.yaml).

dagster-celery's `CeleryRunLauncher` answers Dagster's run monitoring from the Celery result backend: STARTED is
"running". A worker killed whole (SIGKILL to it and its pool child, a machine gone) never writes another state, so
the night would look running until the visibility timeout hands its task to another worker (which Dagster then
ignores as a duplicate) or run monitoring's 2 h limit. `FleetCeleryRunLauncher` adds Celery's own liveness
signal to the same health check: the worker that holds the task (its hostname, which the backend records with
STARTED) must answer a `ping`. After `lost_after_checks` checks in a row without an answer (the checks are run
monitoring's, `poll_interval_seconds` apart), the run's task is revoked (a live but silent worker then kills it,
so a retry never overlaps it) and the check reports FAILED: run monitoring fails the run
(`max_resume_run_attempts: 0`) and run_retries starts its retry, whole (ALL_STEPS).

A night whose pool process alone was killed: the worker lives on and answers the ping, and
`task_reject_on_worker_lost` requeues the task, which the worker starts again at once in a new pool process (the
backend then records STARTED with that process's pid). A STARTED task whose pid is not the pid of the process
that started the run (its RUN_START event; else the pid this launcher first saw the task in) has lost the process
that ran the night: FAILED at that check, without waiting for the copy to end (Dagster ignores it as a
duplicate: it returns, and a task that ended while its run did not is FAILED too). Run monitoring checks again
that the run has not finished in the meantime before it fails it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from dagster import Field, IntSource
from dagster._core.events import DagsterEventType
from dagster._core.launcher import CheckRunHealthResult, WorkerStatus
from dagster._core.storage.dagster_run import DagsterRun
from dagster_celery.launcher import CeleryRunLauncher
from dagster_celery.tags import DAGSTER_CELERY_TASK_ID_TAG

LOST_AFTER_CHECKS = 3
PING_TIMEOUT_S = 5
PING_REUSE_S = 10.0  # one broadcast ping serves every run checked in the same monitoring pass


class FleetCeleryRunLauncher(CeleryRunLauncher):
    """`CeleryRunLauncher` whose run-worker health check also asks the task's worker whether it is alive."""

    def __init__(self, *args: Any, lost_after_checks: int = LOST_AFTER_CHECKS,
                 ping_timeout_seconds: int = PING_TIMEOUT_S, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lost_after_checks = max(1, int(lost_after_checks))
        self.ping_timeout_seconds = max(1, int(ping_timeout_seconds))
        self._misses: dict[str, int] = {}
        self._pids: dict[str, int] = {}  # the pool process each STARTED task was first seen running in
        self._answered: tuple[float, frozenset[str]] = (float("-inf"), frozenset())

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {
            **dict(super().config_type()),  # type: ignore[arg-type]
            "lost_after_checks": Field(IntSource, is_required=False, default_value=LOST_AFTER_CHECKS,
                                       description="Health checks in a row the task's worker may miss the ping "
                                       "before its run is failed as lost."),
            "ping_timeout_seconds": Field(IntSource, is_required=False, default_value=PING_TIMEOUT_S,
                                          description="How long a health check waits for the workers' pongs."),
        }

    @classmethod
    def from_config_value(cls, inst_data: Any, config_value: Mapping[str, Any]) -> FleetCeleryRunLauncher:
        return cls(inst_data=inst_data, **config_value)

    def answering_workers(self) -> frozenset[str]:
        """The hostnames of the workers that answer a broadcast ping now (reused for PING_REUSE_S)."""
        at, names = self._answered
        if time.monotonic() - at < PING_REUSE_S:
            return names
        replies = self.celery.control.ping(timeout=float(self.ping_timeout_seconds)) or []
        names = frozenset(name for reply in replies for name in reply)
        self._answered = (time.monotonic(), names)
        return names

    def run_pid(self, run: DagsterRun) -> int | None:
        """The pid of the process that started `run` (its RUN_START event): with a task per night, the worker's
        pool process that runs it. None when unknown."""
        if not self.has_instance:
            return None
        try:
            found = self._instance.get_records_for_run(run.run_id, of_type=DagsterEventType.RUN_START, limit=1)
        except Exception:  # the check goes on with what the backend says
            return None
        for record in found.records:
            event = record.event_log_entry.dagster_event
            if event is not None and event.pid is not None:
                return int(event.pid)
        return None

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        task_id = run.tags.get(DAGSTER_CELERY_TASK_ID_TAG)
        if task_id is None:  # not launched through Celery yet
            return CheckRunHealthResult(WorkerStatus.UNKNOWN, "no Celery task id on the run yet")
        result = self.celery.AsyncResult(task_id)
        state = result.state
        if state == "SUCCESS":  # the task returned, yet the run was still STARTED when run monitoring read it
            self._misses.pop(task_id, None)
            return CheckRunHealthResult(WorkerStatus.FAILED, f"Celery task {task_id} ended but the run did not: "
                                        "its process died and the requeued copy was ignored as a duplicate")
        if state != "STARTED":
            self._misses.pop(task_id, None)
            self._pids.pop(task_id, None)
            return super().check_run_worker_health(run)
        info = result.info if isinstance(result.info, dict) else {}
        worker = str(info.get("hostname") or "")
        pid = info.get("pid")
        first = (self.run_pid(run) or self._pids.setdefault(task_id, pid)) if isinstance(pid, int) else None
        if first is not None and pid != first:  # the night's process died; its requeued copy runs in another
            self._pids.pop(task_id, None)
            self._misses.pop(task_id, None)
            return CheckRunHealthResult(
                WorkerStatus.FAILED, f"the pool process (pid {first}) of Celery worker {worker} running this night "
                f"is gone: the worker started the requeued task {task_id} again in pid {pid}, which Dagster "
                "ignores as a duplicate (the night is retried)")
        if not worker or worker in self.answering_workers():
            self._misses.pop(task_id, None)
            return CheckRunHealthResult(WorkerStatus.RUNNING)
        misses = self._misses[task_id] = self._misses.get(task_id, 0) + 1
        if misses < self.lost_after_checks:
            return CheckRunHealthResult(WorkerStatus.RUNNING,
                                        f"Celery worker {worker} did not answer ({misses}/{self.lost_after_checks})")
        del self._misses[task_id]
        result.revoke(terminate=True)  # a worker that is alive but was silent stops the night: no overlap
        return CheckRunHealthResult(
            WorkerStatus.FAILED, f"Celery worker {worker} running this night answered no ping in "
            f"{misses} health checks in a row: lost (its task {task_id} is revoked; the night is retried)")
