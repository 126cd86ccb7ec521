"""Store reads and writes of graph-preserving compaction: key degrees, key holders for hub detection,
tombstones, hub records, and the connectivity proof. Plain functions over a DuckDB connection; the caller
owns the transaction. No Dagster."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

import duckdb
import pandas as pd

from memory_pipeline.graph.hubs import Hub, KeyHolder
from memory_pipeline.graph.usage import UsageState, decayed_as_of

DEDUPE_PREFIX = "dedupe:"


def degrees(con: duckdb.DuckDBPyConnection, items: Sequence[str], column: str) -> dict[str, int]:
    """How many active memories carry each item (`column`: nexus_keys or tags)."""
    if column not in ("nexus_keys", "tags") or not items:
        return {}
    wanted = pd.DataFrame({"item": sorted(set(items))})  # noqa: F841 - scanned by DuckDB
    rows = con.execute(
        f"""SELECT w.item, count(*) FROM (SELECT unnest({column}) AS item FROM memories WHERE lifecycle = 'active') k
            JOIN wanted w USING (item) GROUP BY 1"""
    ).fetchall()
    return {r[0]: int(r[1]) for r in rows}


def key_holders(con: duckdb.DuckDBPyConnection, top_k: int, as_of: date, factor: float) -> list[KeyHolder]:
    """Active memories carrying one of the `top_k` most carried keys (ties: key name)."""
    rows = con.execute(
        """
        WITH k AS (SELECT id, unnest(nexus_keys) AS key FROM memories WHERE lifecycle = 'active'),
        top AS (SELECT key FROM k GROUP BY key ORDER BY count(*) DESC, key LIMIT ?)
        SELECT m.id, m.nexus_keys, coalesce(m.included_count_decay, 0), m.usage_day, m.importance, m.created_at
        FROM memories m WHERE m.lifecycle = 'active'
          AND len(list_intersect(m.nexus_keys, (SELECT list(key) FROM top))) > 0
        ORDER BY m.id
        """,
        [top_k],
    ).fetchall()
    return [
        KeyHolder(
            r[0], tuple(r[1] or ()), decayed_as_of(UsageState(0, float(r[2]), r[3]), as_of, factor), float(r[4]), r[5]
        )
        for r in rows
    ]


def write_tombstones(
    con: duckdb.DuckDBPyConnection,
    member_ids: Sequence[str],
    *,
    summary_id: str,
    cluster_id: str,
    run_id: str,
    now: datetime,
) -> int:
    return write_cluster_tombstones(con, [(summary_id, cluster_id, member_ids)], run_id=run_id, now=now)


def write_cluster_tombstones(
    con: duckdb.DuckDBPyConnection, clusters: Sequence[tuple[str, str, Sequence[str]]], *, run_id: str, now: datetime
) -> int:
    """One tombstone per archived source of each (summary_id, cluster_id, member_ids), with the tags and keys
    it had (what the roll-up must keep)."""
    frame = pd.DataFrame(  # noqa: F841
        [(m, summary_id, cluster_id) for summary_id, cluster_id, members in clusters for m in members],
        columns=["id", "summary_id", "cluster_id"],
    )
    rows = con.execute(
        """INSERT INTO tombstones (memory_id, replaced_by_summary_id, cluster_id, run_id, archived_at, tags, nexus_keys)
           SELECT m.id, f.summary_id, f.cluster_id, ?, ?, m.tags, m.nexus_keys
           FROM memories m JOIN frame f USING (id) RETURNING memory_id""",
        [run_id, now],
    ).fetchall()
    return len(rows)


def record_hubs(
    con: duckdb.DuckDBPyConnection, run_id: str, hubs: Sequence[Hub], action: dict[str, str], now: datetime
) -> None:
    for h in hubs:
        con.execute(
            "INSERT INTO graph_hubs VALUES (?, ?, ?, ?, ?, ?)",
            [run_id, h.id, h.centrality, list(h.keys), action.get(h.id, "left active"), now],
        )


def pin_hubs(con: duckdb.DuckDBPyConnection, ids: Sequence[str]) -> list[str]:
    """Policy `pin`: the hub becomes pinned (never eligible again until someone unpins it)."""
    if not ids:
        return []
    frame = pd.DataFrame({"id": list(ids)})  # noqa: F841
    rows = con.execute(
        "UPDATE memories SET pinned = true WHERE id IN (SELECT id FROM frame) AND lifecycle = 'active' "
        "AND NOT pinned RETURNING id"
    ).fetchall()
    return sorted(r[0] for r in rows)


def hubs_of_run(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, object]]:
    rows = con.execute(
        "SELECT memory_id, centrality, hot_keys, action FROM graph_hubs WHERE run_id = ? "
        "ORDER BY centrality DESC, memory_id",
        [run_id],
    ).fetchall()
    return [{"id": r[0], "centrality": int(r[1]), "keys": list(r[2]), "action": r[3]} for r in rows]


def explicit_rollup_members(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Summaries an active explicit rollup lists in `summary_of` (archived into it on purpose)."""
    rows = con.execute(
        "SELECT DISTINCT unnest(summary_of) FROM memories WHERE summary_of IS NOT NULL AND lifecycle = 'active'"
    ).fetchall()
    return {r[0] for r in rows}


def sources_under_rollups(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Sources of summaries that an active explicit rollup archived: listed through the rollup's chain."""
    lower = explicit_rollup_members(con)
    if not lower:
        return set()
    frame = pd.DataFrame({"id": sorted(lower)})  # noqa: F841
    rows = con.execute(
        """SELECT DISTINCT unnest(CAST(json_extract_string(s.compressed_from, '$.source_ids[*]') AS VARCHAR[]))
           FROM memories s JOIN frame f USING (id)"""
    ).fetchall()
    return {r[0] for r in rows}


@dataclass
class Connectivity:
    sources_checked: int = 0
    items_checked: int = 0
    lost: list[tuple[str, str]] = field(default_factory=list)  # (source id, "key:…" or "tag:…")
    dropped_by_cap: list[tuple[str, str]] = field(default_factory=list)
    legacy_sources: int = 0  # archived under a summary written before roll-ups existed: not provable

    @property
    def passed(self) -> bool:
        return not self.lost


def connectivity(con: duckdb.DuckDBPyConnection) -> Connectivity:
    """Every tag and nexus key that reached an archived source must be reachable from an active summary: on
    the summary that lists the source (or on the explicit rollup above it), or listed there as dropped by
    the cap. An exact-duplicate archive must have every item on its kept twin (dedupe carries them there);
    one archived before dedupe carried keys (no tombstone) is counted as legacy."""
    summaries = {
        r[0]: {
            "lifecycle": r[1],
            "keys": set(r[2] or ()),
            "tags": set(r[3] or ()),
            "rolled": r[4] is not None,
            "lineage": json.loads(r[5]) if r[5] else {},
        }
        for r in con.execute(
            """SELECT id, lifecycle, nexus_keys, tags, rolled_up_nexus_keys, compressed_from FROM memories
               WHERE compressed_from IS NOT NULL AND lifecycle IN ('active', 'archived')"""
        ).fetchall()
    }
    parent: dict[str, str] = {}
    for r in con.execute(
        "SELECT id, summary_of FROM memories WHERE summary_of IS NOT NULL AND lifecycle = 'active' ORDER BY id"
    ).fetchall():
        for lower in r[1]:
            parent.setdefault(lower, r[0])
    listed_by: dict[str, list[str]] = {}
    for sid in sorted(summaries):
        for src in summaries[sid]["lineage"].get("source_ids", []):
            listed_by.setdefault(src, []).append(sid)
    out = Connectivity()
    rows = con.execute(
        f"""SELECT id, nexus_keys, tags FROM memories WHERE lifecycle = 'archived' AND compressed_from IS NULL
            AND NOT starts_with(coalesce(archived_by, ''), '{DEDUPE_PREFIX}') ORDER BY id"""
    ).fetchall()
    twins = con.execute(
        f"""SELECT m.id, m.nexus_keys, m.tags, k.nexus_keys, k.tags, t.memory_id IS NOT NULL FROM memories m
            LEFT JOIN memories k ON k.id = substr(m.archived_by, {len(DEDUPE_PREFIX) + 1})
            LEFT JOIN (SELECT DISTINCT memory_id FROM tombstones WHERE reverted_at IS NULL
                       AND starts_with(cluster_id, '{DEDUPE_PREFIX}')) t ON t.memory_id = m.id
            WHERE m.lifecycle = 'archived' AND starts_with(coalesce(m.archived_by, ''), '{DEDUPE_PREFIX}')
            ORDER BY m.id"""
    ).fetchall()
    for mid, keys, tags, twin_keys, twin_tags, carried in twins:
        if not carried:
            out.legacy_sources += 1
            continue
        out.sources_checked += 1
        for item, reached in [("key:" + k, k in set(twin_keys or ())) for k in keys or ()] + [
            ("tag:" + t, t in set(twin_tags or ())) for t in tags or ()
        ]:
            out.items_checked += 1
            if not reached:
                out.lost.append((mid, item))
    for mid, keys, tags in rows:
        chains = []
        for sid in listed_by.get(mid, []):
            s = summaries[sid]
            if s["lifecycle"] == "active":
                chains.append([sid])
            elif sid in parent and summaries.get(parent[sid], {}).get("lifecycle") == "active":
                chains.append([sid, parent[sid]])
        if not chains:
            continue  # no active summary at all: lineage_consistent reports it
        if not all(summaries[c[0]]["rolled"] for c in chains):
            out.legacy_sources += 1
            continue
        reach_keys: set[str] = set()
        reach_tags: set[str] = set()
        dropped: set[str] = set()
        for chain in chains:  # reachable = on the active top of the chain; dropped = by any cap on the way
            reach_keys |= summaries[chain[-1]]["keys"]
            reach_tags |= summaries[chain[-1]]["tags"]
            for sid in chain:
                s = summaries[sid]
                dropped |= {"key:" + k for k in s["lineage"].get("dropped_nexus_keys", [])}
                dropped |= {"tag:" + t for t in s["lineage"].get("dropped_tags", [])}
        out.sources_checked += 1
        items = [("key:" + k, k in reach_keys) for k in keys or ()] + [
            ("tag:" + t, t in reach_tags) for t in tags or ()
        ]
        for item, reached in items:
            out.items_checked += 1
            if reached:
                continue
            (out.dropped_by_cap if item in dropped else out.lost).append((mid, item))
    return out
