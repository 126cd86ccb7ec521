"""Reconstruction (seed 001 §8.7) as a backfill: each day of the range is one run of `journal_daily`, then each
week touched is one run of `journal_weekly`. Runs are recorded in the Dagster instance like the UI's backfill
runs; steps of a day run in separate processes (multiprocess executor) and wait for DuckDB's single writer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

import dagster as dg

from memory_pipeline.journals.assets import EXTRACTOR_KEYS, SESSIONS
from memory_pipeline.journals.extractors import select

PARTITION_TAG = "dagster/partition"  # what execute_job reads to run one partition


@dataclass
class ReconstructResult:
    days: list[str] = field(default_factory=list)
    weeks: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)


def daily_selection(extractors: Sequence[str] | None) -> list[dg.AssetKey]:
    names = [e.name for e in select(extractors)]
    return [SESSIONS, *(EXTRACTOR_KEYS[n] for n in names), dg.AssetKey("journals")]


def week_keys(start: date, end: date) -> list[str]:
    """Weekly partition keys (weeks start on Sunday) of the weeks that contain a day of [start, end]."""
    first = start - timedelta(days=(start.weekday() + 1) % 7)
    keys = []
    while first <= end:
        keys.append(first.isoformat())
        first += timedelta(days=7)
    return keys


def free_finished_slots(instance: dg.DagsterInstance, pool: str) -> list[str]:
    """Pool slots still claimed by runs that have ended (a run interrupted mid-step keeps its slot, which would
    block every later store writer); the daemon's run monitoring does this for the runs it launched."""
    freed = []
    info = instance.event_log_storage.get_concurrency_info(pool)
    for run_id in {slot.run_id for slot in info.claimed_slots} | {step.run_id for step in info.pending_steps}:
        run = instance.get_run_by_id(run_id)
        if run is None or run.is_finished:
            instance.event_log_storage.free_concurrency_slots_for_run(run_id)
            freed.append(run_id)
    return freed


def reconstruct(
    instance: dg.DagsterInstance,
    start: date,
    end: date,
    extractors: Sequence[str] | None = None,
    multiprocess: bool = True,
    weekly: bool = True,
    echo: Callable[[str], object] = print,
) -> ReconstructResult:
    from memory_pipeline.journals.jobs import journal_daily_job, journal_weekly_job
    from memory_pipeline.journals.partitions import daily_partitions, weekly_partitions

    if end < start:
        raise ValueError(f"--to {end} is before --from {start}")
    from memory_pipeline.abstraction.assets import POOL

    selection = daily_selection(extractors)
    for run_id in free_finished_slots(instance, POOL):
        echo(f"  freed the store pool slot of ended run {run_id}")
    valid_days = set(daily_partitions.get_partition_keys(dynamic_partitions_store=instance))
    out = ReconstructResult()
    day = start
    tags = {"memory_pipeline/reconstruct": f"{start}..{end}"}
    daily = dg.reconstructable(journal_daily_job)
    while day <= end:
        key = day.isoformat()
        day += timedelta(days=1)
        if key not in valid_days:
            echo(f"  {key}: not a complete partition yet (or before MEMORY_PIPELINE_JOURNAL_START); skipped")
            continue
        run_config = {} if multiprocess else {"execution": {"config": {"in_process": {}}}}
        with dg.execute_job(
            daily, instance, run_config=run_config, tags={**tags, PARTITION_TAG: key}, asset_selection=selection
        ) as result:
            ok = result.success
            out.run_ids.append(result.run_id)
        if not ok:
            free_finished_slots(instance, POOL)
        (out.days if ok else out.failed).append(key)
        echo(f"  {key}: {'ok' if ok else 'FAILED'} (run {result.run_id})")
    if weekly:
        weekly_job = dg.reconstructable(journal_weekly_job)
        valid_weeks = set(weekly_partitions.get_partition_keys(dynamic_partitions_store=instance))
        for key in week_keys(start, end):
            if key not in valid_weeks:
                echo(f"  week {key}: not complete yet; skipped")
                continue
            with dg.execute_job(
                weekly_job, instance, run_config={"execution": {"config": {"in_process": {}}}},
                tags={**tags, PARTITION_TAG: key},
            ) as result:
                ok = result.success
                out.run_ids.append(result.run_id)
            (out.weeks if ok else out.failed).append(f"week {key}")
            echo(f"  week {key}: {'ok' if ok else 'FAILED'} (run {result.run_id})")
    return out
