"""MemoryWriter's logic (seed 000 §4.3, phase 1; seed 004 §4.1): a cluster's abstraction as a *pending* summary
row — categories, importance, lineage, and the tags and nexus keys rolled up from its sources — and the one
transaction that writes the night's summaries with their vectors. Nothing is archived here, so a crash leaves
only pending rows to reconcile. The `compressed_memories` asset logs, embeds and reports."""

from __future__ import annotations

import uuid
from datetime import datetime

import duckdb
import numpy as np
import pandas as pd

from memory_pipeline.abstraction.outcomes import SUMMARY_IMPORTANCE_FLOOR, ClusterOutcome, stage_error
from memory_pipeline.distillation.distill import Distillation
from memory_pipeline.graph import plan as graph_plan
from memory_pipeline.graph import queries as graph_queries
from memory_pipeline.resources import EngineConfig
from memory_pipeline.similarity.clustering import MemoryCluster
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import MemoryStore
from memory_pipeline.store.records import MemoryRecord


def summary_record(
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


def summaries_hooks(
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


def write_pending(
    db: MemoryStore,
    accepted: list[ClusterOutcome],
    records: list[MemoryRecord],
    model: str,
    vectors: np.ndarray,
    vector_source: str,
    now: datetime,
    run_id: str,
) -> int:
    """The summaries and their vectors in one transaction; each outcome learns its summary's id. If the write
    fails every accepted cluster is marked failed with the reason, and nothing is written."""
    try:
        with db.transaction() as con:
            repo.insert_memories(con, records, run_id=run_id)
            repo.upsert_embeddings(con, model, [r.id for r in records], vectors, now, source=vector_source)
    except Exception as exc:
        for o in accepted:
            o.status, o.skip_reason = "failed", f"write failed: {exc}"
            o.errors.append(stage_error(o.cluster.cluster_id, "write", exc))
        records = []
    for o, r in zip(accepted, records, strict=False):
        o.summary_id = r.id
    return len(records)
