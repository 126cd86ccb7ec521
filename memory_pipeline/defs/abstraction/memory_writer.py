"""MemoryWriter (seed 000), phase 1: write the summaries."""

import uuid
from datetime import datetime

import dagster as dg
import duckdb
import pandas as pd

from memory_pipeline.defs.abstraction.common import GROUP, SUMMARY_IMPORTANCE_FLOOR, ClusterOutcome, _error
from memory_pipeline.faults import crash_point, hold_point
from memory_pipeline.graph import plan as graph_plan
from memory_pipeline.graph import queries as graph_queries
from memory_pipeline.llm.distill import Distillation
from memory_pipeline.operator.metadata import OWNERS, outcome_metadata
from memory_pipeline.operator.progress import ThrottledProgress, encode_in_steps
from memory_pipeline.resources import EmbedderResource, EngineConfig, MemoryStoreResource
from memory_pipeline.resources.store import POOL
from memory_pipeline.similarity.clustering import MemoryCluster
from memory_pipeline.store import night_vectors as night
from memory_pipeline.store import repository as repo
from memory_pipeline.store.records import MemoryRecord


def _summary_record(
    c: MemoryCluster, d: Distillation, now: datetime, hooks: graph_plan.SummaryHooks | None = None
) -> MemoryRecord:
    """Seed 000 §4.3: top-2 source categories + `compressed`, importance max(sources) floored at 1.0.
    Seed 004 §4.1: the summary also carries the rolled-up tags and nexus keys of its sources (as its own tags
    and keys, so retrieval by key reaches it), and its lineage says what the caps dropped."""
    hooks = hooks or graph_plan.SummaryHooks([], [], [], [])
    return MemoryRecord(
        id="mem-" + uuid.uuid4().hex[:16],
        content=d.abstraction,
        importance=max(SUMMARY_IMPORTANCE_FLOOR, c.max_importance),
        created_at=now,
        categories=[*c.top_categories, "compressed"],
        kind="summary",
        source=f"abstraction:{d.distiller}",
        lifecycle="pending",
        compressed_from={
            "source_ids": c.member_ids,
            "compression_ratio": d.compression_ratio,
            "cluster_size": c.member_count,
            "cluster_id": c.cluster_id,
            "distilled_at": now.isoformat() + "Z",
            "source_date_range": [c.oldest_member_at, c.newest_member_at],
            "distiller": d.distiller,
            "cluster_source": c.extra.get("source", "embedding"),
            **({"compaction_key": c.extra["key"], "window_start": c.extra["window_start"]} if "key" in c.extra else {}),
            **({"hubs": c.extra["hubs"]} if c.extra.get("hubs") else {}),
            "rolled_up_tags": hooks.tags,
            "rolled_up_nexus_keys": hooks.nexus_keys,
            "dropped_tags": hooks.dropped_tags,
            "dropped_nexus_keys": hooks.dropped_nexus_keys,
        },
        tags=hooks.tags,
        nexus_keys=hooks.nexus_keys,
        rolled_up_tags=hooks.tags,
        rolled_up_nexus_keys=hooks.nexus_keys,
    )


def _summaries_hooks(
    con: duckdb.DuckDBPyConnection, engine: EngineConfig, clusters: list[MemoryCluster]
) -> dict[str, graph_plan.SummaryHooks]:
    """Rolled-up tags and keys per cluster id, from the members' rows and the items' degrees in the store."""
    ids = sorted({m for c in clusters for m in c.member_ids})
    rows = repo.fetch_members(con, ids) if ids else pd.DataFrame(columns=["id", "tags", "nexus_keys"])
    members = {
        str(r.id): (list(r.tags) if r.tags is not None else [], list(r.nexus_keys) if r.nexus_keys is not None else [])
        for r in rows.itertuples()
    }
    tag_deg = graph_queries.degrees(con, sorted({t for v in members.values() for t in v[0]}), "tags")
    key_deg = graph_queries.degrees(con, sorted({k for v in members.values() for k in v[1]}), "nexus_keys")
    settings = graph_plan.GraphSettings.from_engine(engine)
    return {c.cluster_id: graph_plan.summary_hooks(c, members, tag_deg, key_deg, settings) for c in clusters}


@dg.asset(group_name=GROUP, pool=POOL, kinds={"duckdb"}, owners=OWNERS, tags={"component": "MemoryWriter"})
def compressed_memories(
    context: dg.AssetExecutionContext,
    store: MemoryStoreResource,
    embedder: EmbedderResource,
    engine: EngineConfig,
    distillations: list[ClusterOutcome],
) -> dg.Output[list[ClusterOutcome]]:
    """Phase 1 of the two-phase commit: each abstraction is written as a *pending* summary with its lineage
    and its vector. Nothing is archived yet, so a crash here leaves only pending rows to reconcile."""
    db = store.open()
    run_id = context.run.run_id
    now = engine.now()
    skipped_logs = [
        repo.ClusterLog(o.cluster.fingerprint, o.cluster.cluster_id, "skipped", o.cluster.member_count, o.skip_reason)
        for o in distillations
        if o.status == "skipped"
    ]
    with db.transaction() as con:
        repo.log_clusters(con, skipped_logs, run_id=run_id, now=now)
    accepted = [o for o in distillations if o.distillation is not None]
    with db.connect() as con:
        hooks = _summaries_hooks(con, engine, [o.cluster for o in accepted])
    records = [
        _summary_record(o.cluster, o.distillation, now, hooks[o.cluster.cluster_id]) for o in accepted if o.distillation
    ]
    progress = ThrottledProgress(context.log.info, "MemoryWriter: embedding summaries", len(records))
    with db.connect() as con:
        vectors, vector_source = night.summary_vectors(
            con,
            embedder.model,
            embedder.summary_method,
            lambda texts: encode_in_steps(embedder.encode, texts, 2 * embedder.batch_size, progress.update),
            embedder.compute_source,
            [r.content for r in records],
            [o.cluster.member_ids for o in accepted if o.distillation],
        )
    context.log.info(f"MemoryWriter: {len(records)} summary vectors by {embedder.summary_method}")
    try:
        with db.transaction() as con:
            repo.insert_memories(con, records, run_id=run_id)
            repo.upsert_embeddings(con, embedder.model, [r.id for r in records], vectors, now, source=vector_source)
    except Exception as exc:
        for o in accepted:
            o.status, o.skip_reason = "failed", f"write failed: {exc}"
            o.errors.append(_error(o.cluster.cluster_id, "write", exc))
        records = []
    for o, r in zip(accepted, records, strict=False):
        o.summary_id = r.id
    context.log.info(f"MemoryWriter: wrote {len(records)} pending summaries")
    written = len(records)
    crash_point("after_phase1")
    hold_point("night_phase1", store.home_path.name)  # tests: a night parked with its pending summaries written
    skipped = sum(1 for o in distillations if o.status == "skipped")
    return dg.Output(
        distillations,
        metadata={
            "pending_written": written,
            "skipped_logged": skipped,
            "summary_embedding": embedder.summary_method,
            **outcome_metadata(distillations),
        },
    )
