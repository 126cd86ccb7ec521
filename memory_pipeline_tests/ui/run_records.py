"""What a Dagster instance recorded about its runs and sensor ticks, reduced to what the run-storm test asserts:
runs of one job that were in flight together, and whether the daemon kept ticking without launching anything.

Every time here is one the instance wrote (a run's creation and end, a tick's timestamp), never the test's own
clock: machine load changes when things happen, not what these records say happened."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

FINISHED = {"SUCCESS", "FAILURE", "CANCELED"}
ASSET_JOB_PREFIX = "__ASSET_JOB"  # the implicit job of asset runs (the automation sensor's, the UI's Materialize)


@dataclass(frozen=True)
class RunSpan:
    """One run, from its creation (queued counts as in flight) to its end; `ended` None while unfinished."""

    run_id: str
    job: str
    status: str
    created: float
    ended: float | None
    launched_by: str

    def describe(self) -> str:
        end = "unfinished" if self.ended is None else f"ended {stamp(self.ended)}"
        return f"{self.job} {self.run_id[:8]} {self.status} ({self.launched_by}): created {stamp(self.created)}, {end}"


@dataclass(frozen=True)
class Tick:
    sensor: str
    timestamp: float
    status: str
    run_ids: tuple[str, ...]
    reason: str


def stamp(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%H:%M:%S")


def job_key(job_name: str, asset_selection: Iterable[str] | None) -> str:
    """The job a run belongs to; the implicit asset job is told apart by what it materialises."""
    if job_name.startswith(ASSET_JOB_PREFIX):
        return f"{job_name}[{','.join(sorted(asset_selection or ()))}]"
    return job_name


def launcher(tags: Mapping[str, str]) -> str:
    for key, label in (("dagster/sensor_name", "sensor"), ("dagster/schedule_name", "schedule")):
        if key in tags:
            return f"{label} {tags[key]}"
    if "dagster/backfill" in tags:
        return f"backfill {tags['dagster/backfill']}"
    return "launched by hand (CLI or UI)"


def created_at(instance: Any, record: Any) -> float:
    """When a run came to be, to the microsecond: its first event (RUN_ENQUEUED for a run the daemon or the UI
    queued). The record's create_timestamp is SQLite's CURRENT_TIMESTAMP, whole seconds, which would make a run
    created in the second its predecessor ended look as if it overlapped it."""
    first = instance.get_records_for_run(record.dagster_run.run_id, limit=1, ascending=True).records
    return float(first[0].timestamp) if first else record.create_timestamp.timestamp()


def run_spans(instance: Any) -> list[RunSpan]:
    out = []
    for record in instance.get_run_records():
        run = record.dagster_run
        status = run.status.value
        ended = None
        if status in FINISHED:
            ended = record.end_time or record.update_timestamp.timestamp()  # canceled while queued: no end_time
        keys = [k.to_user_string() for k in run.asset_selection or ()]
        out.append(RunSpan(run.run_id, job_key(run.job_name, keys), status, created_at(instance, record), ended,
                           launcher(run.tags)))  # fmt: skip
    return sorted(out, key=lambda r: r.created)


def overlapping(spans: Iterable[RunSpan]) -> list[tuple[RunSpan, RunSpan]]:
    """Pairs of runs of one job in flight at the same time: the later one was created before the earlier ended."""
    by_job: dict[str, list[RunSpan]] = {}
    for span in spans:
        by_job.setdefault(span.job, []).append(span)
    pairs = []
    for runs in by_job.values():
        runs.sort(key=lambda r: r.created)
        for i, later in enumerate(runs):
            for earlier in runs[:i]:
                if earlier.ended is None or later.created < earlier.ended:
                    pairs.append((earlier, later))
    return pairs


def sensor_ticks(instance: Any, limit: int = 2000) -> dict[str, list[Tick]]:
    """Every sensor's ticks, oldest first (the automation sensor included)."""
    from dagster._core.scheduler.instigation import InstigatorType

    out: dict[str, list[Tick]] = {}
    for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
        ticks = instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=limit)
        out[state.instigator_name] = sorted(
            (Tick(state.instigator_name, t.timestamp, t.status.value, tuple(t.run_ids or ()), t.skip_reason or "")
             for t in ticks),
            key=lambda t: t.timestamp,
        )  # fmt: skip
    return out


@dataclass(frozen=True)
class Quiet:
    """How long the daemon has been ticking with nothing launched and nothing in flight, by its own records."""

    since: float | None  # the last run's creation or end, whichever is later; None: no run at all
    last_tick: float | None
    first_tick: float | None
    silent: list[str]  # sensors expected to tick that have no tick after `since`
    unfinished: list[RunSpan]

    @property
    def seconds(self) -> float:
        if self.last_tick is None:
            return 0.0
        return self.last_tick - (self.since if self.since is not None else self.last_tick)

    @property
    def observed(self) -> float:
        """Seconds between the first and the last tick the daemon recorded."""
        if self.first_tick is None or self.last_tick is None:
            return 0.0
        return self.last_tick - self.first_tick


def quiet(spans: Sequence[RunSpan], ticks: Mapping[str, Sequence[Tick]], expected: Iterable[str]) -> Quiet:
    moments = [s.created for s in spans] + [s.ended for s in spans if s.ended is not None]
    since = max(moments) if moments else None
    stamps = [t.timestamp for ts in ticks.values() for t in ts]
    floor = since if since is not None else float("-inf")
    silent = sorted(name for name in expected if not any(t.timestamp > floor for t in ticks.get(name, ())))
    return Quiet(since, max(stamps, default=None), min(stamps, default=None), silent,
                 [s for s in spans if s.ended is None])  # fmt: skip
