"""`rollups_sensor`: adds the next Core partitions and requests one run for them in the same tick once 8
sessions past the last Core exist; a Sphere once its 8 Cores are built; and an assignment run when new sessions
arrive, so every session gets its `compression_meta` and the counters file follows. A job with a run queued or
in flight is not requested again (its keys wait for a later tick). Reads the store only."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import duckdb
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from memory_pipeline.defs.rollups.assets import rollup_assign, rollup_cores, rollup_spheres
from memory_pipeline.defs.rollups.partitions import CORES, SPHERES, cores_partitions, spheres_partitions
from memory_pipeline.operator.run_guard import busy_reason
from memory_pipeline.resources import MemoryStoreResource
from memory_pipeline.rollups.counters import (
    CORES_PER_SPHERE,
    SESSIONS_PER_CORE,
    contiguous_ranges,
    core_index,
    core_key_at,
    sphere_index,
    sphere_key,
)
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.db import StoreError


@dataclass(frozen=True)
class StoreState:
    sessions: int
    assigned: int
    built_cores: frozenset[str]


def read_state(path: Path) -> StoreState | None:
    """What the store holds, read without writing (no migration): None if there is no store yet."""
    if not path.exists():
        return None
    with MemoryStore(path, lock_timeout_s=20).connect() as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if "sessions" not in tables:
            return StoreState(0, 0, frozenset())
        sessions = con.execute("SELECT count(*) FROM sessions").fetchall()[0][0]
        assigned, built = 0, frozenset[str]()
        if "compression_meta" in tables:
            assigned = con.execute("SELECT count(*) FROM compression_meta").fetchall()[0][0]
            built = frozenset(r[0] for r in con.execute("SELECT core_id FROM rollup_cores").fetchall())
    return StoreState(int(sessions), int(assigned), built)


def plan(
    state: StoreState, core_keys: Sequence[str], sphere_keys: Sequence[str], cursor: dict[str, int]
) -> tuple[list[str], list[str], bool]:
    """(Core keys to add, Sphere keys to add, whether to request an assignment run)."""
    closable = state.sessions // SESSIONS_PER_CORE
    known = set(core_keys)
    new_cores = [k for k in (core_key_at(i) for i in range(closable)) if k not in known]
    complete_spheres = []
    s = 0
    while all(core_key_at(s * CORES_PER_SPHERE + c) in state.built_cores for c in range(CORES_PER_SPHERE)):
        complete_spheres.append(sphere_key(s))
        s += 1
    new_spheres = [k for k in complete_spheres if k not in set(sphere_keys)]
    assign = state.sessions > state.assigned and state.sessions != cursor.get("sessions") and not new_cores
    return new_cores, new_spheres, assign


def range_requests(job: str, keys: Sequence[str], index: Callable[[str], int]) -> list[dg.RunRequest]:
    """One run per contiguous range of keys (the assets' single-run backfill policy builds a range in one run),
    so the 11 Cores a large import closes at once are one run, not 11."""
    out = []
    for first, last in contiguous_ranges(list(keys), index):
        if first == last:
            out.append(dg.RunRequest(run_key=first, job_name=job, partition_key=first))
        else:
            tags = {ASSET_PARTITION_RANGE_START_TAG: first, ASSET_PARTITION_RANGE_END_TAG: last}
            out.append(dg.RunRequest(run_key=f"{first}..{last}", job_name=job, tags=tags))
    return out


@dg.sensor(
    jobs=[rollup_assign, rollup_cores, rollup_spheres],
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Every minute, counts the store's sessions: every 8 sessions a new Core partition, every 8 Cores "
    "a Sphere, and rollup_assign for new sessions. Partitions added in one tick are built by one run, and no job "
    "is requested while a run of it is queued or in flight (the keys wait for the next tick). A tick that skips "
    "with 'memory store unreadable' retries on its own; a missing store means MEMORY_PIPELINE_HOME points at the "
    "wrong folder.",
)
def rollups_sensor(context: dg.SensorEvaluationContext, store: MemoryStoreResource) -> dg.SensorResult | dg.SkipReason:
    """Every 8 sessions a Core, every 8 Cores a Sphere, on dynamic partitions."""  # seed 002
    cursor = json.loads(context.cursor) if context.cursor else {}
    try:
        state = read_state(store.home_path / "memory.duckdb")
    except (StoreError, duckdb.Error) as exc:
        return dg.SkipReason(f"memory store unreadable now: {exc}")
    if state is None:
        return dg.SkipReason(f"no memory store in {store.home_path}")
    core_keys = context.instance.get_dynamic_partitions(CORES)
    sphere_keys = context.instance.get_dynamic_partitions(SPHERES)
    new_cores, new_spheres, assign = plan(state, core_keys, sphere_keys, cursor)
    wanted = {rollup_cores.name: bool(new_cores), rollup_spheres.name: bool(new_spheres), rollup_assign.name: assign}
    # A job with a run queued or in flight is not asked again: what it would get is planned again next tick.
    blocked = {job: why for job, on in wanted.items() if on and (why := busy_reason(context.instance, [job]))}
    busy = list(blocked.values())
    new_cores = [] if rollup_cores.name in blocked else new_cores
    new_spheres = [] if rollup_spheres.name in blocked else new_spheres
    assign = assign and rollup_assign.name not in blocked
    sessions_seen = cursor.get("sessions") if rollup_assign.name in blocked else state.sessions
    new_cursor = json.dumps({"sessions": sessions_seen, "cores": len(core_keys) + len(new_cores)}, sort_keys=True)
    if not (new_cores or new_spheres or assign):
        context.update_cursor(new_cursor)
        if busy:
            return dg.SkipReason("; ".join(busy))
        return dg.SkipReason(
            f"{state.sessions} sessions, {len(core_keys)} Cores, {len(sphere_keys)} Spheres: nothing to add "
            f"({SESSIONS_PER_CORE - state.sessions % SESSIONS_PER_CORE} sessions to the next Core)"
        )
    runs = range_requests(rollup_cores.name, new_cores, core_index)
    runs += range_requests(rollup_spheres.name, new_spheres, sphere_index)
    if assign:
        runs.append(dg.RunRequest(run_key=f"assign-{state.sessions}", job_name=rollup_assign.name))
    requests = []
    if new_cores:
        requests.append(cores_partitions.build_add_request(new_cores))
    if new_spheres:
        requests.append(spheres_partitions.build_add_request(new_spheres))
    return dg.SensorResult(run_requests=runs, dynamic_partitions_requests=requests, cursor=new_cursor)
