"""ClusterFinder (seed 000): embed the memories, pick the eligible ones, cluster them."""

import functools
import time
from datetime import timedelta
from typing import Any

import dagster as dg

from memory_pipeline.abstraction import clusters as clusters_logic
from memory_pipeline.abstraction.outcomes import EMBED_CHUNK
from memory_pipeline.defs.abstraction import vector_steps
from memory_pipeline.defs.abstraction.common import GROUP
from memory_pipeline.defs.abstraction.versioner import validity_updates
from memory_pipeline.graph import plan as graph_plan
from memory_pipeline.graph import queries as graph_queries
from memory_pipeline.operator.metadata import OWNERS, cluster_size_metadata
from memory_pipeline.operator.progress import ThrottledProgress, encode_in_steps
from memory_pipeline.resources import EmbedderResource, EngineConfig, MemoryStoreResource
from memory_pipeline.resources.store import POOL
from memory_pipeline.similarity.clustering import MemoryCluster
from memory_pipeline.store import night_vectors as night
from memory_pipeline.store import outbox as graph_outbox
from memory_pipeline.store import repository as repo


def _advance(progress: ThrottledProgress, offset: int, n: int) -> None:
    """encode_in_steps counts within one chunk; the progress line counts over all memories."""
    progress.update(offset + n)


class ClusterSelection(dg.Config):
    """Re-run one cluster by id (from a dry run's listing); it bypasses the fingerprint TTL."""

    cluster_id: str = ""


@dg.asset(
    group_name=GROUP, pool=POOL, kinds={"duckdb", "numpy"}, owners=OWNERS, tags={"component": "ClusterFinder"},
    deps=[validity_updates],
)
def memory_embeddings(
    context: dg.AssetExecutionContext, store: MemoryStoreResource, embedder: EmbedderResource, engine: EngineConfig
) -> dg.MaterializeResult:
    """Vectors only for memories that lack one for the configured model: nights cost what is new. With
    imported vectors and no encoder for their model nothing is computed; memories lacking one are listed."""
    db = store.open()
    plan = vector_steps.plan(context.log, db, embedder)
    todo = plan.todo
    started = time.perf_counter()
    done = 0
    context.log.info(f"embedding {len(todo)} memories with {embedder.model}")
    progress = ThrottledProgress(context.log.info, "embedding memories", len(todo))
    for lo in range(0, len(todo), EMBED_CHUNK):
        chunk = todo.iloc[lo : lo + EMBED_CHUNK]
        vectors = encode_in_steps(
            embedder.encode,
            chunk["content"].tolist(),
            2 * embedder.batch_size,
            functools.partial(_advance, progress, lo),
        )
        with db.transaction() as con:
            repo.upsert_embeddings(
                con, embedder.model, chunk["id"].tolist(), vectors, engine.now(), source=embedder.compute_source
            )
        done += len(chunk)
        context.log.info(f"embedded {done}/{len(todo)} memories with {embedder.model}")
    seconds = time.perf_counter() - started
    return dg.MaterializeResult(
        metadata={
            "embedded": done,
            "model": embedder.model,
            "seconds": round(seconds, 2),
            "memories_per_second": round(done / seconds, 1) if done and seconds > 0 else 0.0,
            **vector_steps.plan_metadata(embedder, plan),
        }
    )


@dg.asset(
    group_name=GROUP, kinds={"duckdb"}, owners=OWNERS, tags={"component": "ClusterFinder"}, deps=[memory_embeddings]
)
def eligible_memories(
    context: dg.AssetExecutionContext, store: MemoryStoreResource, embedder: EmbedderResource, engine: EngineConfig
) -> dg.Output[repo.EligibleSet]:
    """Only what may be compressed: not critical, not fresh, not a summary, not archived, pinned or locked."""
    fresh_before = engine.now() - timedelta(hours=engine.freshness_hours)
    with store.open().connect() as con:
        dim = vector_steps.usable_dimension(context.log, con, embedder)  # wrong-dimension vectors: left out, named
        eligible = repo.load_eligible(con, embedder.model, engine.critical_floor, fresh_before, dim=dim)
        reasons = repo.eligibility_counts(con, embedder.model, engine.critical_floor, fresh_before)
        used = vector_steps.clustered_on(con, embedder, eligible)
    context.log.info(f"ClusterFinder: {len(eligible.frame)} eligible memories; vectors {night.describe(used)}")
    return dg.Output(eligible, metadata={"eligible": len(eligible.frame), **reasons, **used})


class ClusterBuild(dg.Config):
    """`build`: incremental (default) reuses the stored threshold graph and computes only the edges of new or
    changed memories; full recomputes every edge. Empty = env MEMORY_PIPELINE_CLUSTER_BUILD, else incremental."""

    build: str = ""
    # graph-preserving compaction (seed 004): override EngineConfig.cluster_source for this run
    # (embedding | keys | both) and restrict key-centred clusters to keys with these prefixes (comma-separated,
    # e.g. "spam:" for the spam-family compaction the trigger sensor requests)
    source: str = ""
    key_prefixes: str = ""
    # single | complete | average for this run; empty = EngineConfig.linkage, else the embedder's default
    linkage: str = ""


@dg.asset(
    group_name=GROUP, pool=POOL, kinds={"numpy", "scipy", "duckdb"}, owners=OWNERS, tags={"component": "ClusterFinder"}
)
def clusters(
    context: dg.AssetExecutionContext,
    config: ClusterBuild,
    store: MemoryStoreResource,
    embedder: EmbedderResource,
    engine: EngineConfig,
    eligible_memories: repo.EligibleSet,
) -> dg.Output[list[MemoryCluster]]:
    """Clusters at the night's threshold and linkage (the embedder's default unless set): the
    components of the threshold graph, split by complete/average linkage and the caps; largest first. The
    graph is kept in the store between nights; only a run that also writes the store (archive_updates)
    saves it back, so the dry run computes the same clusters and writes nothing.

    Clusters around shared keys (tags, paths, tools) as a second source (`cluster_source`), hubs protected per
    `hub_policy`, and no new compaction while too many updates wait for the external search indexes."""
    # Key-centred clusters, hubs and the outbox come from the graph design seed.
    started = time.perf_counter()
    since = engine.now() - timedelta(days=engine.fingerprint_ttl_days)
    choice = engine.clustering_choice(embedder.model, config.linkage)
    settings = graph_plan.GraphSettings.from_engine(
        engine, config.source, [p.strip() for p in config.key_prefixes.split(",") if p.strip()], choice.threshold
    )
    from memory_pipeline.llm.runs import NON_ATTEMPT_PREFIXES

    db = store.open()
    with db.connect() as con:
        recent = repo.recent_fingerprints(con, since, NON_ATTEMPT_PREFIXES)
        open_actions = graph_outbox.open_count(con)
        holders = graph_queries.key_holders(con, engine.hub_top_keys, engine.now().date(), engine.usage_decay)
        vectors_used = vector_steps.clustered_on(con, embedder, eligible_memories)  # model, dim, source
    if open_actions >= engine.outbox_critical:
        reason = (
            f"compaction paused: ops/outbox-critical ({open_actions} open outbox actions ≥ {engine.outbox_critical})"
        )
        context.log.warning(f"ClusterFinder: {reason}")
        return dg.Output([], metadata={"clusters_found": 0, "paused": reason, "outbox_open": open_actions})
    run_assets = context.run.asset_selection or context.job_def.asset_layer.executable_asset_keys
    persist = dg.AssetKey("archive_updates") in run_assets
    ids = eligible_memories.frame["id"].to_numpy(dtype=object)
    if settings.cluster_source == "keys":  # no embedding clusters tonight: the stored graph is left as it is
        found: list[MemoryCluster] = []
        graph_meta: dict[str, Any] = {"graph_build": "not used (cluster_source=keys)"}
    else:
        found, graph_meta = clusters_logic.embedding_clusters(
            db, embedder, engine, eligible_memories, ids, recent, persist, choice, config.build, context.run.run_id,
            context.log.info, context.log.warning,
        )  # fmt: skip
    planned = graph_plan.plan(
        found, eligible_memories.frame, eligible_memories.vectors, holders, settings, engine.now().date(), recent
    )
    found = planned.clusters
    if persist and planned.hubs:
        clusters_logic.record_hubs(db, planned, settings.hubs.policy, context.run.run_id, engine.now())
    seconds = time.perf_counter() - started
    skipped = sum(1 for c in found if c.skip_reason)
    context.log.info(
        f"ClusterFinder: found {len(found)} clusters {planned.by_source} ({skipped} recently processed), "
        f"{len(planned.hubs)} hub(s), in {seconds:.2f}s"
    )
    table = clusters_logic.cluster_table(found)
    return dg.Output(
        found,
        metadata={
            "clusters_found": len(found),
            "recently_processed": skipped,
            "largest": max((c.member_count for c in found), default=0),
            "seconds": round(seconds, 3),
            **graph_meta,
            "cluster_source": settings.cluster_source,
            "key_clusters": planned.by_source.get("keys", 0),
            "hubs": len(planned.hubs),
            **vectors_used,
            "clusters": dg.MetadataValue.md(table.head(50).to_markdown(index=False)) if len(table) else "none",
            **cluster_size_metadata(found),
        },
    )
