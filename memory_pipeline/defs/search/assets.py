"""Group `search`: the derived search index, the usage spool ingest and agents' spooled writes, with
their jobs; the sensors that start them are in sensors.py. Thin: logic is in memory_pipeline/search/."""

import dagster as dg

from memory_pipeline.resources import EmbedderResource, MemoryStoreResource
from memory_pipeline.search.build import build_index
from memory_pipeline.search.usage_ingest import ingest_spool
from memory_pipeline.store.remember import ingest_writes

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
                     f"{result['conflicts']} conflicting id(s) kept in spool/rejected.jsonl")  # fmt: skip
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
