"""ClusterFinder (seed 000): embed the memories, pick the eligible ones, cluster them."""

import functools
import time
from datetime import timedelta
from typing import Any

import dagster as dg
import numpy as np
import pandas as pd

from memory_pipeline.defs.abstraction import vector_steps
from memory_pipeline.defs.abstraction.common import EMBED_CHUNK, GROUP
from memory_pipeline.defs.abstraction.cortex_dedupe import exact_duplicates
from memory_pipeline.embedding.defaults import ClusteringChoice, describe
from memory_pipeline.graph import plan as graph_plan
from memory_pipeline.graph import queries as graph_queries
from memory_pipeline.operator.metadata import OWNERS, cluster_size_metadata
from memory_pipeline.operator.progress import ThrottledProgress, encode_in_steps
from memory_pipeline.resources import EmbedderResource, EngineConfig, MemoryStoreResource
from memory_pipeline.resources.store import POOL
from memory_pipeline.similarity import clustering, linkage, threshold_graph
from memory_pipeline.similarity.clustering import MemoryCluster
from memory_pipeline.store import edges
from memory_pipeline.store import night_vectors as night
from memory_pipeline.store import outbox as graph_outbox
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import MemoryStore


def _advance(progress: ThrottledProgress, offset: int, n: int) -> None:
    """encode_in_steps counts within one chunk; the progress line counts over all memories."""
    progress.update(offset + n)


class ClusterSelection(dg.Config):
    """Re-run one cluster by id (from a dry run's listing); it bypasses the fingerprint TTL."""

    cluster_id: str = ""


@dg.asset(
    group_name=GROUP, pool=POOL, kinds={"duckdb", "numpy"}, owners=OWNERS, tags={"component": "ClusterFinder"},
    deps=[exact_duplicates],
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
    # issue 20: single | complete | average for this run; empty = EngineConfig.linkage, else the embedder's default
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

    Key-centred clusters as a second source (`cluster_source`), hubs protected per `hub_policy`, and no new
    compaction while the outbox of external-index actions is critical."""
    # The threshold per embedder is issue 20; key-centred clusters, hubs and the outbox are seed 004.
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
        found, graph_meta = _embedding_clusters(
            context, config, db, embedder, engine, eligible_memories, ids, recent, persist, choice
        )
    planned = graph_plan.plan(
        found, eligible_memories.frame, eligible_memories.vectors, holders, settings, engine.now().date(), recent
    )
    found = planned.clusters
    if persist and planned.hubs:
        with db.transaction() as con:
            if settings.hubs.policy == "pin":
                graph_queries.pin_hubs(con, [h.id for h in planned.hubs if planned.hub_actions[h.id] == "pinned"])
            graph_queries.record_hubs(con, context.run.run_id, planned.hubs, planned.hub_actions, engine.now())
    seconds = time.perf_counter() - started
    skipped = sum(1 for c in found if c.skip_reason)
    context.log.info(
        f"ClusterFinder: found {len(found)} clusters {planned.by_source} ({skipped} recently processed), "
        f"{len(planned.hubs)} hub(s), in {seconds:.2f}s"
    )
    table = pd.DataFrame(
        [
            {
                "cluster_id": c.cluster_id,
                "source": c.extra.get("source", "embedding"),
                "key": c.extra.get("key", ""),
                "members": c.member_count,
                "avg_similarity": c.avg_similarity,
                "category": c.dominant_category,
                "tokens": c.total_tokens,
                "skip": c.skip_reason or "",
            }
            for c in found
        ]
    )
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


def _embedding_clusters(
    context: dg.AssetExecutionContext,
    config: ClusterBuild,
    db: MemoryStore,
    embedder: EmbedderResource,
    engine: EngineConfig,
    eligible_memories: repo.EligibleSet,
    ids: np.ndarray,
    recent: set[str],
    persist: bool,
    choice: ClusteringChoice,
) -> tuple[list[MemoryCluster], dict[str, Any]]:
    """The embedding source: the components of the (stored, incremental) threshold graph, split by the
    chosen linkage and caps inside each component (similarity/linkage.py)."""
    graph = edges.night_graph(
        db,
        ids,
        eligible_memories.vectors,
        model=embedder.model,
        threshold=choice.threshold,
        mode=threshold_graph.resolve_mode(config.build),
        persist=persist,
        now=engine.now(),
        run_id=context.run.run_id,
    )
    context.log.info(f"ClusterFinder: {graph.mode} threshold graph ({graph.reason}): {graph.stats}")
    context.log.info(f"ClusterFinder: {describe(choice)}")
    split = linkage.cluster_components(
        eligible_memories.vectors,
        graph.components(engine.min_cluster_size),
        eligible_memories.frame["token_count"].to_numpy(dtype=np.int64),
        engine.linkage_params(choice),
    )
    if split.too_large:
        context.log.warning(
            f"ClusterFinder: {len(split.too_large)} component(s) of {split.too_large} memories exceed "
            f"COMPRESSION_LINKAGE_MAX_COMPONENT={engine.linkage_max_component} and stay unclustered tonight; "
            "raise the threshold or the limit"
        )
    found = clustering.build_clusters(
        eligible_memories.frame,
        eligible_memories.vectors,
        choice.threshold,
        engine.min_cluster_size,
        recent,
        engine.fingerprint_ttl_days,
        groups=split.groups,
    )
    return found, {
        "similarity_threshold": choice.threshold,
        "linkage": choice.linkage,
        "clustering_default": describe(choice),
        "max_cluster_members": engine.max_cluster_members,
        "max_cluster_tokens": engine.max_cluster_tokens,
        **split.metadata(),
        "graph_build": graph.mode,
        "graph_engine": str(graph.stats.get("engine", "")),
        "graph_engine_reason": str(graph.stats.get("engine_reason", "")),
        "graph_rows_computed": int(graph.stats.get("computed_rows", 0)),
        "graph_edges": int(graph.rows.size),
    }
