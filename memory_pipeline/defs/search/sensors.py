"""The search group's sensors: an index update when writes no asset announced pile up (a full build when the
index is missing), and the imports of the usage spool and of agents' spooled writes when they hold anything."""

import dagster as dg

from memory_pipeline.defs.search.assets import (
    agent_writes_ingest,
    search_index_rebuild,
    search_index_update,
    search_usage_ingest,
)
from memory_pipeline.operator.run_guard import busy_reason
from memory_pipeline.resources import MemoryStoreResource
from memory_pipeline.search.build import pending_changes
from memory_pipeline.search.usage_spool import pending_files
from memory_pipeline.store.spool import spool_dir

INDEX_JOBS = (search_index_update.name, search_index_rebuild.name)


@dg.sensor(
    jobs=[search_index_update, search_index_rebuild],
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Requests an index update when the index is missing (deleted: a full build) or when writes "
    "that no asset announced (CLI imports, hand-edited files) have piled up; never while a run building the "
    "index is queued or in flight. Queries see such writes at once anyway.",
)
def search_index_sensor(context: dg.SensorEvaluationContext, store: MemoryStoreResource) -> dg.SensorResult:
    home = store.home_path
    if not home.is_dir():
        return dg.SensorResult(skip_reason=f"no workspace at {home}")
    busy = busy_reason(context.instance, INDEX_JOBS, ["search_index"])  # the automation's runs build it too
    if busy:
        return dg.SensorResult(skip_reason=busy)
    pending = pending_changes(home)
    if pending is None:
        return dg.SensorResult(
            run_requests=[
                dg.RunRequest(
                    run_key=f"missing-{context.cursor or 0}",
                    job_name=search_index_rebuild.name,
                    run_config={"ops": {"search_index": {"config": {"full": True}}}},
                )
            ],
            cursor=str(int(context.cursor or 0) + 1),
        )
    if pending["busy"] or not (pending["store_rows"] or pending["files"]):
        return dg.SensorResult(skip_reason="index up to date" if not pending["busy"] else "store busy")
    key = f"delta-{pending['store_rows']}-{pending['files']}-{context.cursor or 0}"
    request = dg.RunRequest(run_key=key, job_name=search_index_update.name)
    return dg.SensorResult(run_requests=[request], cursor=str(int(context.cursor or 0) + 1))


@dg.sensor(
    job=search_usage_ingest,
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Imports the usage spool when it holds hits, unless an import is already queued or in flight; "
    "the run waits for the store pool like every writer.",
)
def search_usage_sensor(context: dg.SensorEvaluationContext, store: MemoryStoreResource) -> dg.SensorResult:
    files = pending_files(store.home_path)
    if not files:
        return dg.SensorResult(skip_reason="usage spool empty")
    busy = busy_reason(context.instance, [search_usage_ingest.name], ["search_usage"])
    if busy:
        return dg.SensorResult(skip_reason=busy)
    stamp = max(f.stat().st_mtime_ns for f in files)
    return dg.SensorResult(run_requests=[dg.RunRequest(run_key=f"usage-{stamp}")])


@dg.sensor(
    job=agent_writes_ingest,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Imports agents' spooled writes when there are any, unless an import is already queued or in "
    "flight; the run waits for the store pool like every writer.",
)
def agent_writes_sensor(context: dg.SensorEvaluationContext, store: MemoryStoreResource) -> dg.SensorResult:
    folder = spool_dir(store.home_path)
    files = sorted(folder.glob("*.jsonl")) + sorted(folder.glob("claimed/*.jsonl")) if folder.is_dir() else []
    if not files:
        return dg.SensorResult(skip_reason="no spooled writes")
    busy = busy_reason(context.instance, [agent_writes_ingest.name], ["agent_writes"])
    if busy:
        return dg.SensorResult(skip_reason=busy)
    stamp = max(f.stat().st_mtime_ns for f in files)
    return dg.SensorResult(run_requests=[dg.RunRequest(run_key=f"writes-{stamp}")])
