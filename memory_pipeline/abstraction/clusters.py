"""ClusterFinder's logic (seed 000 §4.2, seed 004): the embedding clusters of a night from the stored
threshold graph, the table the UI lists them in, and the hubs a writing run records. The `clusters` asset decides
the sources and the pause, and reports; this is what it calls."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from memory_pipeline.embedding.defaults import ClusteringChoice, describe
from memory_pipeline.graph import plan as graph_plan
from memory_pipeline.graph import queries as graph_queries
from memory_pipeline.resources import EmbedderResource, EngineConfig
from memory_pipeline.similarity import clustering, linkage, threshold_graph
from memory_pipeline.similarity.clustering import MemoryCluster
from memory_pipeline.store import edges
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import MemoryStore


def embedding_clusters(
    db: MemoryStore,
    embedder: EmbedderResource,
    engine: EngineConfig,
    eligible_memories: repo.EligibleSet,
    ids: np.ndarray,
    recent: set[str],
    persist: bool,
    choice: ClusteringChoice,
    build: str,
    run_id: str,
    log: Callable[[str], Any],
    warn: Callable[[str], Any],
) -> tuple[list[MemoryCluster], dict[str, Any]]:
    """The embedding source: the components of the (stored, incremental) threshold graph, split by the
    chosen linkage and caps inside each component (similarity/linkage.py). `build` is the run's graph build
    setting (empty: the environment's); the graph is saved back only when `persist`. Returns the clusters and
    the metadata that says how they were found."""
    graph = edges.night_graph(
        db,
        ids,
        eligible_memories.vectors,
        model=embedder.model,
        threshold=choice.threshold,
        mode=threshold_graph.resolve_mode(build),
        persist=persist,
        now=engine.now(),
        run_id=run_id,
    )
    log(f"ClusterFinder: {graph.mode} threshold graph ({graph.reason}): {graph.stats}")
    log(f"ClusterFinder: {describe(choice)}")
    split = linkage.cluster_components(
        eligible_memories.vectors,
        graph.components(engine.min_cluster_size),
        eligible_memories.frame["token_count"].to_numpy(dtype=np.int64),
        engine.linkage_params(choice),
    )
    if split.too_large:
        warn(
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


def cluster_table(found: list[MemoryCluster]) -> pd.DataFrame:
    """One row per cluster as the run's metadata lists them: source, key, size, similarity, category, skip."""
    return pd.DataFrame(
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


def record_hubs(db: MemoryStore, planned: graph_plan.GraphPlan, policy: str, run_id: str, now: datetime) -> None:
    """A writing run's hubs (seed 004 §4): pinned when the policy says so, and recorded for the report."""
    with db.transaction() as con:
        if policy == "pin":
            graph_queries.pin_hubs(con, [h.id for h in planned.hubs if planned.hub_actions[h.id] == "pinned"])
        graph_queries.record_hubs(con, run_id, planned.hubs, planned.hub_actions, now)
