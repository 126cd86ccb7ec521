"""The Reporter's work beyond the report's arithmetic (abstraction/report.py): what the store holds of the run,
seed 004's graph section, the report files and the `consolidation_runs` rows — this night's, and those of nights
that died after their last commit, rebuilt. No Dagster: the `report` asset gathers the inputs and shows the
numbers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from memory_pipeline.abstraction.outcomes import ClusterOutcome
from memory_pipeline.abstraction.report import recovered_report
from memory_pipeline.faults import crash_point
from memory_pipeline.graph import queries as graph_queries
from memory_pipeline.similarity.clustering import MemoryCluster
from memory_pipeline.store import lease
from memory_pipeline.store import outbox as graph_outbox
from memory_pipeline.store.db import MemoryStore

# Reasons counted as one whatever their detail: the night's grade of what its distiller wrote, and LLM errors
_COUNTED = ("LLM error", "not faithful to its sources", "statements dropped", "facts not preserved")


def skip_reasons(outcomes: list[ClusterOutcome]) -> dict[str, int]:
    """Skipped clusters by reason: LLM errors, the judge's refusals (unfaithful, statements or facts dropped) and
    ratio floors each counted as one reason whatever their detail (the detail is in `compression_log`)."""
    reasons: dict[str, int] = {}
    for o in outcomes:
        if o.status == "skipped" and o.skip_reason:
            key = o.skip_reason.split(":")[0] if o.skip_reason.startswith(_COUNTED) else o.skip_reason
            key = "compression_ratio below floor" if "below floor" in key else key
            reasons[key] = reasons.get(key, 0) + 1
    return reasons


def refused_by_verifier(outcomes: list[ClusterOutcome]) -> int:
    """Clusters whose distillation the night's verifier refused (not an LLM error, not a ratio floor)."""
    return sum(1 for o in outcomes if o.status == "skipped" and (o.skip_reason or "").startswith(_COUNTED[1:]))


def compaction_paused(con: duckdb.DuckDBPyConnection, critical: int, clusters: list[MemoryCluster]) -> str | None:
    """Why the night found no cluster when it is because compaction is paused (too many open external-index
    actions): not a quiet night but one that could not work, so its verdict is FAIL with this reason."""
    open_actions = graph_outbox.open_count(con)
    if clusters or open_actions < critical:
        return None
    return f"compaction paused: {open_actions} external-index updates waiting (pause at {critical})"


def archived_by_run(con: duckdb.DuckDBPyConnection, run_id: str) -> int:
    """Sources this run archived, from the compression log (what committed, whatever the steps returned)."""
    return int(
        con.execute(
            "SELECT coalesce(sum(member_count), 0) FROM compression_log WHERE run_id = ? AND status = 'compressed'",
            [run_id],
        ).fetchall()[0][0]
    )


def run_linkage(run_config: Mapping[str, Any]) -> str:
    """The run's ClusterFinder `linkage` override (ops config of `clusters`), empty when none."""
    ops = run_config.get("ops") or {}
    return str(((ops.get("clusters") or {}).get("config") or {}).get("linkage") or "")


def graph_section(
    con: duckdb.DuckDBPyConnection, run_id: str, clusters: list[MemoryCluster], outcomes: list[ClusterOutcome]
) -> dict[str, object]:
    """Seed 004 in the run report: clusters per source, hubs, tombstones, outbox, keys dropped by the caps."""
    by_source: dict[str, dict[str, int]] = {}
    for o in outcomes:
        entry = by_source.setdefault(str(o.cluster.extra.get("source", "embedding")), {"found": 0, "compressed": 0})
        entry["compressed"] += o.status == "compressed"
    for c in clusters:
        by_source.setdefault(str(c.extra.get("source", "embedding")), {"found": 0, "compressed": 0})["found"] += 1
    dropped = con.execute(
        """SELECT coalesce(sum(json_array_length(json_extract(compressed_from, '$.dropped_nexus_keys'))), 0),
                  coalesce(sum(json_array_length(json_extract(compressed_from, '$.dropped_tags'))), 0)
           FROM memories WHERE created_by_run = ? AND kind = 'summary' AND lifecycle = 'active'""",
        [run_id],
    ).fetchall()[0]

    def count(sql: str) -> int:
        return int(con.execute(sql, [run_id]).fetchall()[0][0])

    return {
        "clusters_by_source": by_source,
        "hubs": graph_queries.hubs_of_run(con, run_id),
        "tombstones": count("SELECT count(*) FROM tombstones WHERE run_id = ?"),
        "outbox_enqueued": count("SELECT count(*) FROM outbox WHERE run_id = ?"),
        "outbox_open": graph_outbox.open_count(con),
        "nexus_keys_dropped_by_cap": int(dropped[0]),
        "tags_dropped_by_cap": int(dropped[1]),
    }


def write_report(reports_dir: Path, payload: dict[str, object]) -> Path:
    """Write-then-rename, so a crash never leaves half a report."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    path = reports_dir / f"compression-{payload['run_id']}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")
    crash_point("writing_report")
    tmp.replace(path)
    return path


def save_reports(
    db: MemoryStore,
    reports_dir: Path,
    payload: dict[str, Any],
    finished: datetime,
    unreported: list[tuple[str, int, int, datetime, datetime]],
) -> Path:
    """This run's report file and row, and those of the `unreported` nights rebuilt from the store; the run's
    lease is released in the same transaction, so the next night starts only once the report is stored."""
    run_id = str(payload["run_id"])
    path = write_report(reports_dir, payload)
    rebuilt = [recovered_report(*u, by=run_id) for u in unreported]
    for dead in rebuilt:
        write_report(reports_dir, dead)
    with db.transaction() as con:
        con.execute(
            "INSERT OR REPLACE INTO consolidation_runs VALUES (?, ?, ?, ?, ?)",
            [run_id, pd.Timestamp(str(payload["started_at"]).rstrip("Z")).to_pydatetime(), finished,
             payload["verdict"], json.dumps(payload)],
        )  # fmt: skip
        for dead, u in zip(rebuilt, unreported, strict=True):
            con.execute("INSERT OR REPLACE INTO consolidation_runs VALUES (?, ?, ?, ?, ?)",
                        [u[0], u[3], u[4], dead["verdict"], json.dumps(dead)])  # fmt: skip
        lease.release(con, run_id)
    return path
