"""Materialisation metadata for the abstraction assets: cluster tables and histograms the UI renders."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, Protocol

import dagster as dg

from memory_pipeline.operator.charts import markdown_table, text_histogram

# Owner badge on every asset of the code location (Dagster accepts emails or `team:` names).
OWNERS = ["team:agent-memory"]
SIZE_EDGES = (3, 4, 5, 6, 8, 12, 20)
RATIO_EDGES = (1.5, 2.0, 3.0, 4.0, 6.0, 10.0)
OUTCOME_COLUMNS = ("cluster_id", "members", "tokens", "ratio", "status", "summary / reason")


class _Cluster(Protocol):
    cluster_id: str
    member_count: int
    total_tokens: int
    dominant_category: str


def cluster_size_metadata(clusters: Sequence[_Cluster]) -> dict[str, Any]:
    """How big tonight's clusters are: a histogram and the median (numeric, so the UI plots it per run)."""
    sizes = [c.member_count for c in clusters]
    return {
        "cluster_sizes": dg.MetadataValue.md(text_histogram("members per cluster", sizes, SIZE_EDGES)),
        "median_cluster_size": float(statistics.median(sizes)) if sizes else 0.0,
    }


def outcome_metadata(outcomes: Sequence[Any]) -> dict[str, Any]:
    """Per cluster: size, source tokens, compression ratio and fate; then ratio and size histograms.
    `outcomes` are abstraction.assets.ClusterOutcome (duck-typed here to avoid an import cycle)."""
    rows = []
    for o in outcomes:
        d = o.distillation
        rows.append(
            {
                "cluster_id": o.cluster.cluster_id,
                "members": o.cluster.member_count,
                "tokens": o.cluster.total_tokens,
                "ratio": round(d.compression_ratio, 2) if d is not None else "",
                "status": o.status,
                "summary / reason": (o.summary_id or "") if d is not None else (o.skip_reason or "")[:80],
            }
        )
    rows.sort(key=lambda r: (r["ratio"] == "", -(r["ratio"] or 0), r["cluster_id"]))
    ratios = [o.distillation.compression_ratio for o in outcomes if o.distillation is not None]
    return {
        "cluster_outcomes": dg.MetadataValue.md(markdown_table(rows, OUTCOME_COLUMNS)),
        "compression_ratios": dg.MetadataValue.md(text_histogram("compression ratio", ratios, RATIO_EDGES)),
        **cluster_size_metadata([o.cluster for o in outcomes]),
        "avg_compression_ratio": round(statistics.fmean(ratios), 3) if ratios else 0.0,
    }
