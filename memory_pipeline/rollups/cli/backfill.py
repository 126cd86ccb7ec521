"""Backfill: on a workspace with many sessions and no rollups, build every Core and then every Sphere, in
order, as Dagster runs (so the instance records them): assignment, one single-run backfill per contiguous
range of missing Cores, then the same for Spheres. Already built partitions are left as they are."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import dagster as dg
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from memory_pipeline.defs.rollups.partitions import CORES, SPHERES
from memory_pipeline.rollups import repository
from memory_pipeline.rollups.counters import (
    CORES_PER_SPHERE,
    contiguous_ranges,
    core_index,
    core_key_at,
    sphere_index,
    sphere_key,
)
from memory_pipeline.store import MemoryStore


@dataclass
class BackfillSummary:
    sessions: int = 0
    assigned: int = 0
    cores_built: list[str] = field(default_factory=list)
    spheres_built: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    failed: str | None = None


def _run(defs: dg.Definitions, instance: dg.DagsterInstance, job: str, first: str, last: str, tags: dict) -> Any:
    run_tags = {**tags}
    if first == last:
        return defs.resolve_job_def(job).execute_in_process(
            instance=instance, partition_key=first, tags=run_tags, raise_on_error=False
        )
    run_tags |= {ASSET_PARTITION_RANGE_START_TAG: first, ASSET_PARTITION_RANGE_END_TAG: last}
    return defs.resolve_job_def(job).execute_in_process(instance=instance, tags=run_tags, raise_on_error=False)


def backfill(
    defs: dg.Definitions, instance: dg.DagsterInstance, store: MemoryStore, tags: dict[str, str] | None = None
) -> BackfillSummary:
    tags = tags or {}
    summary = BackfillSummary()
    result = defs.resolve_job_def("rollup_assign").execute_in_process(
        instance=instance, tags=tags, raise_on_error=False
    )
    summary.runs.append(result.run_id)
    if not result.success:
        summary.failed = f"rollup_assign run {result.run_id} failed"
        return summary
    with store.connect() as con:
        summary.sessions, summary.assigned, _, _ = repository.counts(con)
        built = {k for k, _, _ in repository.built_cores(con)}
    closable = [core_key_at(i) for i in range(summary.assigned // 8)]
    known = set(instance.get_dynamic_partitions(CORES))
    instance.add_dynamic_partitions(CORES, [k for k in closable if k not in known])
    for first, last in contiguous_ranges([k for k in closable if k not in built], core_index):
        result = _run(defs, instance, "rollup_cores", first, last, tags)
        summary.runs.append(result.run_id)
        if not result.success:
            summary.failed = f"rollup_cores run {result.run_id} ({first}…{last}) failed"
            return summary
        summary.cores_built += [core_key_at(i) for i in range(core_index(first), core_index(last) + 1)]
    with store.connect() as con:
        built_cores = {k for k, _, _ in repository.built_cores(con)}
        built_spheres = {k for k, _, _ in repository.built_spheres(con)}
    complete = []
    s = 0
    while all(core_key_at(s * CORES_PER_SPHERE + c) in built_cores for c in range(CORES_PER_SPHERE)):
        complete.append(sphere_key(s))
        s += 1
    known = set(instance.get_dynamic_partitions(SPHERES))
    instance.add_dynamic_partitions(SPHERES, [k for k in complete if k not in known])
    for first, last in contiguous_ranges([k for k in complete if k not in built_spheres], sphere_index):
        result = _run(defs, instance, "rollup_spheres", first, last, tags)
        summary.runs.append(result.run_id)
        if not result.success:
            summary.failed = f"rollup_spheres run {result.run_id} ({first}…{last}) failed"
            return summary
        summary.spheres_built += [sphere_key(i) for i in range(sphere_index(first), sphere_index(last) + 1)]
    return summary
