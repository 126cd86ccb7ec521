"""The Archiver's phase 2 (seed 000 §4.4, seed 004 §5): per cluster, one transaction archives the sources
(importance → 0.5, prior kept), activates the summary, writes the tombstones and outbox actions and logs the
cluster; clusters are committed in batches, and a failing batch falls back to one cluster at a time so a bad
cluster fails alone. No Dagster here: the `archive_updates` asset walks the batches and reports."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import duckdb

from memory_pipeline.abstraction.outcomes import ARCHIVED_IMPORTANCE, ClusterOutcome, stage_error
from memory_pipeline.faults import crash_point
from memory_pipeline.graph import queries as graph_queries
from memory_pipeline.store import outbox as graph_outbox
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import atomic


def phase2(
    con: duckdb.DuckDBPyConnection,
    batch: list[ClusterOutcome],
    critical_floor: float,
    run_id: str,
    now: datetime,
    index_names: list[str],
) -> int:
    """Inside the caller's transaction: archive the sources (importance → 0.5, prior kept), activate the
    summaries, log the clusters. Seed 004 §5 phase 2 in the same transaction: a tombstone per source, and
    (only when external indexes are configured) the outbox actions that keep them in step."""
    done = [(o.cluster, o.summary_id or "", o.distillation) for o in batch if o.distillation is not None]
    archived = repo.archive_clusters(
        con,
        [(c.cluster_id, c.member_ids) for c, _, _ in done],
        archived_importance=ARCHIVED_IMPORTANCE,
        critical_floor=critical_floor,
        now=now,
        run_id=run_id,
    )
    crash_point("inside_phase2")
    repo.activate_summaries(con, [summary_id for _, summary_id, _ in done])
    graph_queries.write_cluster_tombstones(
        con, [(summary_id, c.cluster_id, c.member_ids) for c, summary_id, _ in done], run_id=run_id, now=now
    )
    for c, summary_id, _ in done if index_names else []:
        keys, tags = con.execute("SELECT nexus_keys, tags FROM memories WHERE id = ?", [summary_id]).fetchall()[0]
        graph_outbox.enqueue_compaction(
            con,
            index_names=index_names,
            summary_id=summary_id,
            summary_payload={"kind": "summary", "nexus_keys": list(keys or []), "tags": list(tags or [])},
            source_ids=c.member_ids,
            run_id=run_id,
            now=now,
        )
    entries = [
        repo.ClusterLog(
            c.fingerprint, c.cluster_id, "compressed", c.member_count,
            compressed_memory_id=summary_id, compression_ratio=d.compression_ratio,
        )
        for c, summary_id, d in done
    ]
    repo.log_clusters(con, entries, run_id=run_id, now=now)
    return archived


def commit_batch(
    con: duckdb.DuckDBPyConnection,
    batch: list[ClusterOutcome],
    critical_floor: float,
    run_id: str,
    now: datetime,
    index_names: list[str],
    log: Callable[[str], Any],
    log_error: Callable[[str], Any],
) -> int:
    """Phase 2 for a batch of clusters in one transaction: a 100k night has thousands of clusters and each
    statement has a fixed cost. If anything in the batch fails, it rolls back whole and each cluster is
    committed on its own, so a bad cluster still fails alone and the rest still compress. `log` hears of a
    rolled-back batch, `log_error` of each cluster that fails on its own."""
    if len(batch) > 1:
        try:
            with atomic(con):
                archived = phase2(con, batch, critical_floor, run_id, now, index_names)
        except Exception as exc:
            log(f"Archiver: a batch of {len(batch)} clusters rolled back ({exc}); one by one now")
        else:
            for o in batch:
                o.status = "compressed"
            return archived
    return sum(_commit_cluster(con, o, critical_floor, run_id, now, index_names, log_error) for o in batch)


def _commit_cluster(
    con: duckdb.DuckDBPyConnection,
    o: ClusterOutcome,
    critical_floor: float,
    run_id: str,
    now: datetime,
    index_names: list[str],
    log_error: Callable[[str], Any],
) -> int:
    """One cluster's phase-2 transaction; on failure, the compensating action and a `failed` log entry."""
    c, summary_id = o.cluster, o.summary_id
    assert summary_id is not None
    try:
        with atomic(con):
            archived = phase2(con, [o], critical_floor, run_id, now, index_names)
    except Exception as exc:
        log_error(f"Archiver: cluster {c.cluster_id} rolled back: {exc}")
        with atomic(con):
            repo.discard_pending(con, summary_id)
            repo.log_cluster(
                con,
                fingerprint=c.fingerprint,
                cluster_id=c.cluster_id,
                status="failed",
                member_count=c.member_count,
                run_id=run_id,
                now=now,
                reason=str(exc),
            )
        o.status, o.summary_id = "failed", None
        o.errors.append(stage_error(c.cluster_id, "archive", exc))
        return 0
    o.status = "compressed"
    return archived
