"""A sensor asks for a run only when no run of the same target is queued or in flight.

Without this, a sensor that ticks every minute while its last run is still queued behind the store's pool (or
still running) requests another, and opening the UI on a busy workspace starts a storm of overlapping runs.
The rule (`in_the_way`) is a plain function over what the instance reports; `busy_reason` asks the instance.
Dagster's run queue adds a second guard: `dagster.yaml` limits every sensor and schedule to one run in flight.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

# Every status of a run that has not finished: queued, being launched, running, or being canceled.
UNFINISHED = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING")


@dataclass(frozen=True)
class ActiveRun:
    run_id: str
    job_name: str
    status: str
    assets: frozenset[str]  # the asset keys it materialises ("a/b" form); empty when it selects none explicitly

    def describe(self) -> str:
        return f"{self.job_name} run {self.run_id[:8]} is {self.status}"


def in_the_way(runs: Iterable[ActiveRun], jobs: Collection[str], assets: Collection[str] = ()) -> list[ActiveRun]:
    """The unfinished runs that target one of `jobs` or materialise one of `assets` (e.g. an automation run)."""
    wanted = set(assets)
    return [r for r in runs if r.status in UNFINISHED and (r.job_name in jobs or r.assets & wanted)]


def active_runs(instance: Any, limit: int = 500) -> list[ActiveRun]:
    """The instance's unfinished runs, newest first."""
    import dagster as dg

    statuses = [dg.DagsterRunStatus(s) for s in UNFINISHED]
    out = []
    for record in instance.get_run_records(filters=dg.RunsFilter(statuses=statuses), limit=limit):
        run = record.dagster_run
        keys = frozenset(k.to_user_string() for k in (run.asset_selection or ()))
        out.append(ActiveRun(run.run_id, run.job_name, run.status.value, keys))
    return out


def busy_reason(instance: Any, jobs: Collection[str], assets: Collection[str] = ()) -> str | None:
    """Why a sensor should not ask for a run of `jobs` now (one line), or None when nothing is in the way."""
    blocking = in_the_way(active_runs(instance), jobs, assets)
    if not blocking:
        return None
    more = f" (and {len(blocking) - 1} more)" if len(blocking) > 1 else ""
    return f"{blocking[0].describe()}{more}: no new request until it ends"
