"""Summary-of-summary (seed 004 §6): refused by default. The engine never compacts a summary (eligibility
excludes them, archive_sources refuses them); a higher-level rollup happens only when someone names the
summaries explicitly, with `summary_of: [ids]` provenance and a higher member threshold than a cluster's.
The lower summaries are archived into the rollup (with tombstones) in one transaction. No Dagster."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime

import duckdb
import pandas as pd

from memory_pipeline.graph import queries, rollup
from memory_pipeline.store import repository as repo
from memory_pipeline.store.changes import note_changed
from memory_pipeline.store.records import MemoryRecord

ARCHIVED_IMPORTANCE = 0.5


class SummaryOfSummaryRefused(ValueError):
    """The request does not meet the explicit-rollup rules; nothing was written."""


def check_request(con: duckdb.DuckDBPyConnection, summary_ids: Sequence[str], min_sources: int) -> pd.DataFrame:
    """The named summaries' rows, or SummaryOfSummaryRefused saying why."""
    ids = sorted(set(summary_ids))
    if not ids:
        raise SummaryOfSummaryRefused(
            "summary-of-summary is never automatic: name the summaries to roll up (summary_of: [ids])"
        )
    if len(ids) < min_sources:
        raise SummaryOfSummaryRefused(
            f"a higher-level rollup needs at least {min_sources} summaries (summary_rollup_min_sources), got {len(ids)}"
        )
    rows = repo.fetch_members(con, ids)
    found = set(rows["id"])
    missing = [i for i in ids if i not in found]
    if missing:
        raise SummaryOfSummaryRefused(f"no such memory: {', '.join(missing)}")
    bad = rows[(rows["kind"] != "summary") | (rows["lifecycle"] != "active")]
    if len(bad):
        raise SummaryOfSummaryRefused(
            "only active summaries can be rolled up: "
            + ", ".join(f"{r.id} (kind={r.kind}, lifecycle={r.lifecycle})" for r in bad.itertuples())
        )
    return rows


def write_rollup(
    con: duckdb.DuckDBPyConnection,
    rows: pd.DataFrame,
    *,
    content: str,
    distiller: str,
    compression_ratio: float,
    run_id: str,
    now: datetime,
    k: int = rollup.K_DEFAULT,
    per_namespace: int = rollup.PER_NAMESPACE_DEFAULT,
) -> MemoryRecord:
    """Inside the caller's transaction: the rollup summary (active), the lower summaries archived into it,
    tombstones for them. Returns the rollup record."""
    ids = sorted(rows["id"].tolist())
    tag_lists = [list(t) if t is not None else [] for t in rows["tags"]]
    key_lists = [list(k_) if k_ is not None else [] for k_ in rows["nexus_keys"]]
    tags = rollup.roll_up(tag_lists, namespace="tags", k=k, per_namespace=per_namespace)
    keys = rollup.roll_up(key_lists, namespace="keys", k=k, per_namespace=per_namespace)
    cluster_id = "rollup-" + uuid.uuid4().hex[:12]
    record = MemoryRecord(
        id="mem-" + uuid.uuid4().hex[:16],
        content=content,
        importance=max(1.0, float(rows["importance"].max())),
        created_at=now,
        categories=["compressed", "rollup"],
        kind="summary",
        source=f"abstraction:{distiller}",
        lifecycle="active",
        compressed_from={
            "source_ids": ids,
            "summary_of": ids,
            "level": 2,
            "cluster_id": cluster_id,
            "cluster_source": "explicit summary rollup",
            "compression_ratio": compression_ratio,
            "distiller": distiller,
            "rolled_up_tags": tags.kept,
            "rolled_up_nexus_keys": keys.kept,
            "dropped_tags": tags.dropped,
            "dropped_nexus_keys": keys.dropped,
        },
        tags=tags.kept,
        nexus_keys=keys.kept,
        rolled_up_tags=tags.kept,
        rolled_up_nexus_keys=keys.kept,
        summary_of=ids,
    )
    repo.insert_memories(con, [record], run_id=run_id)
    frame = pd.DataFrame({"id": ids})  # noqa: F841
    archived = con.execute(
        """UPDATE memories SET prior_importance = importance, importance = ?, lifecycle = 'archived',
                  archived_by = ?, archived_at = ?, archived_by_run = ?
           WHERE id IN (SELECT id FROM frame) AND lifecycle = 'active' AND kind = 'summary' RETURNING id""",
        [ARCHIVED_IMPORTANCE, cluster_id, now, run_id],
    ).fetchall()
    note_changed(con, [str(r[0]) for r in archived])
    if len(archived) != len(ids):
        raise SummaryOfSummaryRefused(f"{len(ids) - len(archived)} of the summaries changed meanwhile; nothing written")
    queries.write_tombstones(con, ids, summary_id=record.id, cluster_id=cluster_id, run_id=run_id, now=now)
    repo.log_cluster(
        con,
        fingerprint="rollup:" + json.dumps(ids),
        cluster_id=cluster_id,
        status="compressed",
        member_count=len(ids),
        run_id=run_id,
        now=now,
        compressed_memory_id=record.id,
        compression_ratio=compression_ratio,
    )
    return record
