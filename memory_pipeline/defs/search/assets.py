"""Group `search` (issue 17): the derived search index and the usage spool ingest. Thin: logic is in
memory_pipeline/search/."""

import dagster as dg

from memory_pipeline.operator.run_guard import busy_reason
from memory_pipeline.resources import EmbedderResource, MemoryStoreResource
from memory_pipeline.search.build import build_index, pending_changes
from memory_pipeline.search.usage_ingest import ingest_spool
from memory_pipeline.search.usage_spool import pending_files
from memory_pipeline.store.remember import ingest_writes, spool_dir

GROUP = "search"
STORE_POOL = "memory_store"  # the usage ingest writes the store: one writer at a time, never beside the nightly
# Everything that writes what the index reads: store rows, embeddings, knowledge files, tiers, transcripts.
UPSTREAM = [
    "archive_updates",
    "memory_embeddings",
    "sessions",
    "session_memories/decisions",
    "session_memories/facts",
    "session_memories/lessons",
    "session_memories/people",
    "session_memories/procedures",
    "journals",
    "memory_md",
    "journal_archive",
    "cores",
    "spheres",
    "episodic_summaries",
    "semantic_insights",
]
# Kept current by Dagster itself: eager on any upstream materialisation; upstream daily/dynamic partitions
# that were never built must not hold it back, so the missing-deps guard is dropped.
INDEX_CONDITION = (
    dg.AutomationCondition.eager().without(~dg.AutomationCondition.any_deps_missing()).with_label("eager_allow_missing")
)


class SearchIndexConfig(dg.Config):
    full: bool = False  # True: re-embed everything (a model change or a suspect index)


@dg.asset(
    group_name=GROUP,
    deps=[dg.AssetKey.from_user_string(k) for k in UPSTREAM],
    automation_condition=INDEX_CONDITION,
    kinds={"numpy", "parquet"},
    tags={"component": "SearchIndex", "seed": "001"},
    # The index is seed 001 §7.
    description="Hybrid BM25 (bm25s) + vector index over memories, summaries, knowledge files and transcripts. "
    "Derived and deletable: <workspace>/index/, written two-phase.",
)
def search_index(
    context: dg.AssetExecutionContext,
    config: SearchIndexConfig,
    store: MemoryStoreResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    stats = build_index(store.home_path, embedder.encode, embedder.model, full=config.full)
    context.log.info(
        f"search index {stats.version}: {stats.docs} docs, +{stats.added} ~{stats.updated} -{stats.removed}, "
        f"{stats.embedded} embedded in {stats.seconds:.1f} s"
    )
    return dg.MaterializeResult(
        metadata={
            "docs": stats.docs,
            "added": stats.added,
            "updated": stats.updated,
            "removed": stats.removed,
            "embedded": stats.embedded,
            "seconds": stats.seconds,
            "bytes": dg.MetadataValue.int(stats.bytes),
            "full_rebuild": config.full,
            "version": stats.version,
        }
    )


@dg.asset(
    group_name=GROUP,
    pool=STORE_POOL,
    kinds={"duckdb"},
    tags={"component": "UsageFeedback", "seed": "004"},
    # Usage decay is seed 004 §9.
    description="Hits returned to agents (MCP, CLI --record-usage), spooled as JSONL, imported in one batch as "
    "inclusions for usage decay through the graph domain's usage import.",
)
def search_usage(context: dg.AssetExecutionContext, store: MemoryStoreResource) -> dg.MaterializeResult:
    result = ingest_spool(store.home_path)
    context.log.info(f"usage spool: {result['events']} inclusion event(s) from {result['files']} file(s)")
    return dg.MaterializeResult(metadata=result)


@dg.asset(
    group_name=GROUP,
    pool=STORE_POOL,
    kinds={"duckdb"},
    tags={"component": "AgentWrites"},
    description="Memories agents remembered and forgot over MCP while the store was busy, spooled durably as "
    "JSONL (searchable already) and imported here in one transaction, oldest first.",
)
def agent_writes(context: dg.AssetExecutionContext, store: MemoryStoreResource) -> dg.MaterializeResult:
    result = ingest_writes(store.home_path, lock_timeout_s=300.0)
    if result is None:
        raise dg.Failure("the store stayed busy for 5 minutes; the writes stay spooled for the next run")
    context.log.info(f"agent writes: {result['inserted']} remembered, {result['forgotten']} forgotten, "
                     f"{result['conflicts']} conflicting id(s) kept in spool/writes/rejected.jsonl")  # fmt: skip
    return dg.MaterializeResult(metadata=result)


search_index_rebuild = dg.define_asset_job(
    "search_index_rebuild",
    selection=[search_index],
    config={"ops": {"search_index": {"config": {"full": True}}}},
    description="Full rebuild of the search index: launched by hand, or by search_index_sensor when the index "
    "is missing. Queries fall back to a keyword scan meanwhile; after a failure fix the cause in the step's log "
    "and launch it again (the old index stays in use until a new one is complete).",
)
search_index_update = dg.define_asset_job(
    "search_index_update", selection=[search_index],
    description="Brings the search index up to date with writes no asset announced (CLI imports, hand-edited "
    "files); started by search_index_sensor. A failed update leaves the previous index in use; the sensor asks "
    "again on a later tick, or launch search_index_rebuild.",
)
search_usage_ingest = dg.define_asset_job(
    "search_usage_ingest", selection=[search_usage],
    description="Imports the usage spool (hits returned to agents) into the store for usage decay; started by "
    "search_usage_sensor. A failed import keeps the files it claimed, and the next run (or one launched by hand) "
    "imports them again.",
)

agent_writes_ingest = dg.define_asset_job(
    "agent_writes_ingest", selection=[agent_writes],
    description="Imports agents' spooled remember/forget writes into the store; started by agent_writes_sensor. "
    "A failed import keeps the files it claimed, and the next run imports them again.",
)


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
