"""Queries and writes on the memory store. Plain functions over a DuckDB connection, no Dagster."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from memory_pipeline.store.changes import note_changed
from memory_pipeline.store.dedupe import TWIN_RANK
from memory_pipeline.store.invariants import our_pending
from memory_pipeline.store.records import MemoryRecord

_MEMORY_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("content", pa.string()),
        ("importance", pa.float64()),
        ("categories", pa.list_(pa.string())),
        ("tags", pa.list_(pa.string())),
        ("nexus_keys", pa.list_(pa.string())),
        ("kind", pa.string()),
        ("source", pa.string()),
        ("session_id", pa.string()),
        ("created_at", pa.timestamp("us")),
        ("token_count", pa.int32()),
        ("pinned", pa.bool_()),
        ("locked", pa.bool_()),
        ("lifecycle", pa.string()),
        ("compressed_from", pa.string()),
        ("archived_by", pa.string()),
        ("archived_at", pa.timestamp("us")),
        ("prior_importance", pa.float64()),
        ("created_by_run", pa.string()),
        ("human_authored", pa.bool_()),
        ("rolled_up_tags", pa.list_(pa.string())),
        ("rolled_up_nexus_keys", pa.list_(pa.string())),
        ("summary_of", pa.list_(pa.string())),
    ]
)


def insert_memories(con: duckdb.DuckDBPyConnection, records: Sequence[MemoryRecord], run_id: str | None = None) -> int:
    """Bulk insert; the caller owns the transaction."""
    if not records:
        return 0
    columns: dict[str, list[Any]] = {name: [] for name in _MEMORY_SCHEMA.names}
    for r in records:
        columns["id"].append(r.id)
        columns["content"].append(r.content)
        columns["importance"].append(r.importance)
        columns["categories"].append(r.categories)
        columns["tags"].append(r.tags)
        columns["nexus_keys"].append(r.nexus_keys)
        columns["kind"].append(r.kind)
        columns["source"].append(r.source)
        columns["session_id"].append(r.session_id)
        columns["created_at"].append(r.created_at)
        columns["token_count"].append(r.token_count)
        columns["pinned"].append(r.pinned)
        columns["locked"].append(r.locked)
        columns["lifecycle"].append(r.lifecycle)
        columns["compressed_from"].append(json.dumps(r.compressed_from) if r.compressed_from else None)
        columns["archived_by"].append(r.archived_by)
        columns["archived_at"].append(r.archived_at)
        columns["prior_importance"].append(r.prior_importance)
        columns["created_by_run"].append(run_id)
        columns["human_authored"].append(r.human_authored)
        columns["rolled_up_tags"].append(r.rolled_up_tags)
        columns["rolled_up_nexus_keys"].append(r.rolled_up_nexus_keys)
        columns["summary_of"].append(r.summary_of)
    incoming = pa.table(columns, schema=_MEMORY_SCHEMA)  # noqa: F841 - scanned by DuckDB by name
    con.execute(f"INSERT INTO memories ({', '.join(_MEMORY_SCHEMA.names)}) SELECT * FROM incoming")
    return len(records)


def existing_ids(con: duckdb.DuckDBPyConnection, ids: Sequence[str]) -> set[str]:
    if not ids:
        return set()
    frame = pd.DataFrame({"id": list(ids)})  # noqa: F841 - scanned by DuckDB by name
    return {row[0] for row in con.execute("SELECT m.id FROM memories m JOIN frame f USING (id)").fetchall()}


def memory_count(con: duckdb.DuckDBPyConnection) -> int:
    return int(con.execute("SELECT count(*) FROM memories").fetchall()[0][0])


def active_tokens(con: duckdb.DuckDBPyConnection) -> int:
    """Tokens an agent would inject: active memories only (archived ones are out of context)."""
    return int(
        con.execute("SELECT coalesce(sum(token_count), 0) FROM memories WHERE lifecycle = 'active'").fetchall()[0][0]
    )


# ---------------------------------------------------------------- embeddings


def memories_without_embedding(con: duckdb.DuckDBPyConnection, model: str) -> pd.DataFrame:
    """Memories that still need a vector for `model` (archived ones included: they stay retrievable)."""
    return con.execute(
        """
        SELECT m.id, m.content FROM memories m
        LEFT JOIN embeddings e ON e.memory_id = m.id AND e.model = ?
        WHERE e.memory_id IS NULL AND m.lifecycle <> 'pending'
        ORDER BY m.id
        """,
        [model],
    ).df()


def upsert_embeddings(
    con: duckdb.DuckDBPyConnection,
    model: str,
    ids: Sequence[str],
    vectors: np.ndarray,
    now: datetime,
    source: str = "computed",
) -> int:
    """`source`: computed | plugin | imported | mean_of_members (see memory_pipeline/embedding/spec.py)."""
    if len(ids) == 0:
        return 0
    if vectors.ndim != 2 or vectors.shape[0] != len(ids):
        raise ValueError(f"vectors shape {vectors.shape} does not match {len(ids)} ids")
    dim = int(vectors.shape[1])
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    offsets = pa.array(np.arange(0, (len(ids) + 1) * dim, dim, dtype=np.int32))
    batch = pa.table(  # noqa: F841 - scanned by DuckDB by name
        {
            "memory_id": pa.array(list(ids), pa.string()),
            "model": pa.array([model] * len(ids), pa.string()),
            "dim": pa.array([dim] * len(ids), pa.int32()),
            "vector": pa.ListArray.from_arrays(offsets, flat),
            "created_at": pa.array([now] * len(ids), pa.timestamp("us")),
            "source": pa.array([source] * len(ids), pa.string()),
        }
    )
    con.execute("DELETE FROM embeddings WHERE model = ? AND memory_id IN (SELECT memory_id FROM batch)", [model])
    con.execute(
        "INSERT INTO embeddings (memory_id, model, dim, vector, created_at, source) "
        "SELECT memory_id, model, dim, vector, created_at, source FROM batch"
    )
    return len(ids)


def _vectors_from_arrow(column: pa.ChunkedArray, n: int) -> np.ndarray:
    if n == 0:
        return np.zeros((0, 0), dtype=np.float32)
    flat = column.combine_chunks().flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    return flat.reshape(n, -1)


def vectors_for(con: duckdb.DuckDBPyConnection, model: str, ids: Sequence[str]) -> np.ndarray:
    """Vectors in the order of `ids`; every id must have one."""
    frame = pd.DataFrame({"memory_id": list(ids), "pos": range(len(ids))})  # noqa: F841
    table = con.sql(
        "SELECT e.vector FROM frame f JOIN embeddings e ON e.memory_id = f.memory_id AND e.model = ? ORDER BY f.pos",
        params=[model],
    ).to_arrow_table()
    if table.num_rows != len(ids):
        raise LookupError(f"{len(ids) - table.num_rows} of {len(ids)} memories have no '{model}' embedding")
    return _vectors_from_arrow(table.column("vector"), table.num_rows)


# ---------------------------------------------------------------- eligibility


@dataclass(frozen=True)
class EligibleSet:
    """Memories the engine may compress, with their vectors (row i of `vectors` is `frame.iloc[i]`)."""

    frame: pd.DataFrame
    vectors: np.ndarray

    def __getstate__(self) -> dict[str, object]:
        """Steps hand this to each other through the IO manager. Pickling the frame's list columns costs
        ~10 s at 100k rows (one small array per cell); as Arrow IPC it is 0.3 s."""
        table = pa.Table.from_pandas(self.frame, preserve_index=False)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return {"frame": sink.getvalue(), "vectors": self.vectors}

    def __setstate__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "frame", pa.ipc.open_stream(state["frame"]).read_all().to_pandas())
        object.__setattr__(self, "vectors", state["vectors"])


ELIGIBLE_WHERE = """
    m.lifecycle = 'active' AND m.kind <> 'summary' AND m.compressed_from IS NULL
    AND NOT m.pinned AND NOT m.locked AND m.importance < ? AND m.created_at < ?
"""


def load_eligible(
    con: duckdb.DuckDBPyConnection, model: str, critical_floor: float, fresh_before: datetime, dim: int | None = None
) -> EligibleSet:
    """Exact duplicates that the dedupe step archives are left out here too, so a dry run (which archives
    nothing) finds the same clusters, with the same ids, as the real run. `dim`: only vectors of this length
    (the caller names the others), so vectors of mixed dimensions never reach the reshape."""
    table = con.sql(
        f"""
        WITH twins AS (
            SELECT id, {TWIN_RANK} AS twin_rank FROM memories
            WHERE lifecycle = 'active' AND kind <> 'summary' AND compressed_from IS NULL
        )
        SELECT m.id, m.importance, m.categories, m.token_count, m.created_at, m.tags, m.nexus_keys,
               coalesce(m.human_authored, false) AS human_authored,
               coalesce(m.included_count_decay, 0) AS included_count_decay, m.usage_day, e.vector
        FROM memories m JOIN embeddings e ON e.memory_id = m.id AND e.model = ? AND (? IS NULL OR len(e.vector) = ?)
        JOIN twins t ON t.id = m.id AND t.twin_rank = 1
        WHERE {ELIGIBLE_WHERE}
        ORDER BY m.id
        """,
        params=[model, dim, dim, critical_floor, fresh_before],
    ).to_arrow_table()
    vectors = _vectors_from_arrow(table.column("vector"), table.num_rows)
    frame = table.drop_columns(["vector"]).to_pandas()
    return EligibleSet(frame=frame, vectors=vectors)


def eligibility_counts(
    con: duckdb.DuckDBPyConnection, model: str, critical_floor: float, fresh_before: datetime
) -> dict[str, int]:
    """Why memories are not eligible, for the asset's metadata."""
    row = con.execute(
        """
        SELECT count(*),
          count(*) FILTER (WHERE lifecycle <> 'active'),
          count(*) FILTER (WHERE lifecycle = 'active' AND (kind = 'summary' OR compressed_from IS NOT NULL)),
          count(*) FILTER (WHERE lifecycle = 'active' AND importance >= ?),
          count(*) FILTER (WHERE lifecycle = 'active' AND (pinned OR locked)),
          count(*) FILTER (WHERE lifecycle = 'active' AND created_at >= ?),
          count(*) FILTER (WHERE lifecycle = 'active' AND id NOT IN (SELECT memory_id FROM embeddings WHERE model = ?))
        FROM memories
        """,
        [critical_floor, fresh_before, model],
    ).fetchall()[0]
    keys = ("memories_total", "not_active", "summaries", "critical", "pinned_or_locked", "fresh", "no_embedding")
    return dict(zip(keys, (int(v) for v in row), strict=True))


def recent_fingerprints(
    con: duckdb.DuckDBPyConnection, since: datetime, not_attempts: Sequence[str]
) -> set[str]:
    """Fingerprints attempted since `since`. A skip whose reason starts with one of `not_attempts` (the TTL
    skip itself, a cost-cap deferral, an API error) is not an attempt: logging it must not start the TTL."""
    skipped_without_attempt = " OR ".join("starts_with(coalesce(l.reason, ''), ?)" for _ in not_attempts) or "false"
    rows = con.execute(
        f"""
        SELECT DISTINCT l.cluster_fingerprint FROM compression_log l
        WHERE l.created_at >= ? AND l.status <> 'rolled_back'
          AND NOT (l.status = 'skipped' AND ({skipped_without_attempt}))
          AND NOT EXISTS (SELECT 1 FROM compression_log r WHERE r.cluster_fingerprint = l.cluster_fingerprint
                          AND r.status = 'rolled_back' AND r.created_at >= l.created_at)
        """,
        [since, *not_attempts],
    ).fetchall()
    return {r[0] for r in rows}


def fetch_members(con: duckdb.DuckDBPyConnection, ids: Sequence[str]) -> pd.DataFrame:
    frame = pd.DataFrame({"id": list(ids), "pos": range(len(ids))})  # noqa: F841
    return con.execute("SELECT m.* FROM frame f JOIN memories m USING (id) ORDER BY f.pos").df()


# ---------------------------------------------------------------- two-phase commit


@dataclass(frozen=True)
class ClusterLog:
    """One compression_log row."""

    fingerprint: str
    cluster_id: str
    status: str
    member_count: int
    reason: str | None = None
    compressed_memory_id: str | None = None
    compression_ratio: float | None = None


def log_clusters(con: duckdb.DuckDBPyConnection, entries: Sequence[ClusterLog], *, run_id: str, now: datetime) -> None:
    """Many compression_log rows in one statement (a 100k night logs thousands)."""
    if not entries:
        return
    n = len(entries)
    rows = pa.table(  # noqa: F841 - scanned by name below; arrow keeps None as NULL where pandas would make NaN
        {
            "id": pa.array([uuid.uuid4().hex for _ in entries], pa.string()),
            "fingerprint": pa.array([e.fingerprint for e in entries], pa.string()),
            "cluster_id": pa.array([e.cluster_id for e in entries], pa.string()),
            "compressed_memory_id": pa.array([e.compressed_memory_id for e in entries], pa.string()),
            "status": pa.array([e.status for e in entries], pa.string()),
            "reason": pa.array([e.reason for e in entries], pa.string()),
            "member_count": pa.array([e.member_count for e in entries], pa.int64()),
            "compression_ratio": pa.array([e.compression_ratio for e in entries], pa.float64()),
            "run_id": pa.array([run_id] * n, pa.string()),
            "created_at": pa.array([now] * n, pa.timestamp("us")),
        }
    )
    con.execute("INSERT INTO compression_log SELECT * FROM rows")


def log_cluster(
    con: duckdb.DuckDBPyConnection,
    *,
    fingerprint: str,
    cluster_id: str,
    status: str,
    member_count: int,
    run_id: str,
    now: datetime,
    reason: str | None = None,
    compressed_memory_id: str | None = None,
    compression_ratio: float | None = None,
) -> None:
    entry = ClusterLog(fingerprint, cluster_id, status, member_count, reason, compressed_memory_id, compression_ratio)
    log_clusters(con, [entry], run_id=run_id, now=now)


def archive_sources(
    con: duckdb.DuckDBPyConnection,
    member_ids: Sequence[str],
    *,
    cluster_id: str,
    archived_importance: float,
    critical_floor: float,
    now: datetime,
    run_id: str,
) -> int:
    """Phase 2, step 1, for one cluster (see `archive_clusters`)."""
    return archive_clusters(
        con,
        [(cluster_id, member_ids)],
        archived_importance=archived_importance,
        critical_floor=critical_floor,
        now=now,
        run_id=run_id,
    )


# what a source must be for the Archiver to archive it (the critical floor as the one parameter); the retention
# check reads the same predicate to know what a night would archive before it does
ARCHIVABLE = ("lifecycle = 'active' AND kind <> 'summary' AND compressed_from IS NULL AND NOT pinned AND NOT locked"
              " AND importance < ?")


def archive_clusters(
    con: duckdb.DuckDBPyConnection,
    clusters: Sequence[tuple[str, Sequence[str]]],
    *,
    archived_importance: float,
    critical_floor: float,
    now: datetime,
    run_id: str,
) -> int:
    """Phase 2, step 1, for (cluster_id, member_ids) pairs in one statement. Guards re-check what
    ClusterFinder filtered: a row that changed since is refused, and then the whole call fails naming the first
    cluster that lost a source (the caller's transaction rolls back)."""
    ids = [m for _, members in clusters for m in members]
    owners = [cid for cid, members in clusters for _ in members]
    if len(set(ids)) != len(ids):
        twice = next(m for m, k in Counter(ids).items() if k > 1)
        raise RuntimeError(f"memory {twice} is a source of more than one cluster in the same commit")
    frame = pd.DataFrame({"id": ids, "cluster_id": owners})  # noqa: F841
    rows = con.execute(
        """
        UPDATE memories SET prior_importance = importance, importance = ?, lifecycle = 'archived',
               archived_by = frame.cluster_id, archived_at = ?, archived_by_run = ?
        FROM frame
        WHERE memories.id = frame.id AND """ + ARCHIVABLE + """
        RETURNING memories.id
        """,
        [archived_importance, now, run_id, critical_floor],
    ).fetchall()
    note_changed(con, [str(r[0]) for r in rows])
    if len(rows) != len(ids):
        done = {r[0] for r in rows}
        for cid, members in clusters:
            lost = sum(1 for m in members if m not in done)
            if lost:
                raise RuntimeError(
                    f"cluster {cid}: {lost} of {len(members)} sources are no longer archivable (changed since "
                    "clustering)"
                )
    return len(rows)


def activate_summary(con: duckdb.DuckDBPyConnection, summary_id: str) -> None:
    activate_summaries(con, [summary_id])


def activate_summaries(con: duckdb.DuckDBPyConnection, summary_ids: Sequence[str]) -> None:
    frame = pd.DataFrame({"id": list(summary_ids)})  # noqa: F841
    rows = con.execute(
        "UPDATE memories SET lifecycle = 'active' WHERE id IN (SELECT id FROM frame) AND lifecycle = 'pending' "
        "RETURNING id"
    ).fetchall()
    note_changed(con, [str(r[0]) for r in rows])
    if len(rows) != len(summary_ids):
        missing = sorted(set(summary_ids) - {r[0] for r in rows})
        raise RuntimeError(f"summary {missing[0]} is not pending")


def discard_pending(con: duckdb.DuckDBPyConnection, summary_id: str) -> None:
    """Compensating action for a failed phase 2: the pending summary a run wrote, and its vector, go. A row
    without `created_by_run` was not written by a run (an import never marks one) and is never deleted."""
    deleted = con.execute(
        f"DELETE FROM memories WHERE id = ? AND {our_pending()} RETURNING id", [summary_id]
    ).fetchall()
    if deleted:
        con.execute("DELETE FROM embeddings WHERE memory_id = ?", [summary_id])


def reconcile_pending(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str]]:
    """Pending summaries left by an interrupted run: activate those whose sources were archived for their
    cluster in a committed transaction, remove the rest (they were never active). Returns (activated, removed).
    Only rows a run of ours wrote as pending (`created_by_run` set, with lineage) are considered."""
    rows = con.execute(
        f"""
        SELECT s.id, bool_and(coalesce(m.lifecycle = 'archived'
                              AND m.archived_by = json_extract_string(s.compressed_from, '$.cluster_id'), false))
        FROM memories s
        LEFT JOIN memories m ON list_contains(
            CAST(json_extract_string(s.compressed_from, '$.source_ids[*]') AS VARCHAR[]), m.id)
        WHERE {our_pending("s")}
        GROUP BY s.id ORDER BY s.id
        """
    ).fetchall()
    activated = [r[0] for r in rows if r[1]]
    removed = [r[0] for r in rows if not r[1]]
    for summary_id in activated:
        activate_summary(con, summary_id)
    for summary_id in removed:
        discard_pending(con, summary_id)
    return activated, removed


# ---------------------------------------------------------------- atoms


def all_atoms(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Atoms that count: those a rolled-back run created are retired, not matched."""
    return con.execute("SELECT * FROM atoms WHERE coalesce(status, 'active') = 'active' ORDER BY created_at, id").df()


def strengthen_atom(
    con: duckdb.DuckDBPyConnection, atom_id: str, delta: float, summary_id: str, run_id: str, now: datetime
) -> float:
    """+delta capped at 1.0. The delta actually applied is recorded, so a rollback restores it exactly."""
    current = float(con.execute("SELECT confidence FROM atoms WHERE id = ?", [atom_id]).fetchall()[0][0])
    applied = min(1.0, current + delta) - current
    con.execute("UPDATE atoms SET confidence = ?, updated_at = ? WHERE id = ?", [current + applied, now, atom_id])
    con.execute(
        "INSERT INTO atom_sources VALUES (?, ?, ?, 'strengthened', ?, ?)", [atom_id, summary_id, run_id, applied, now]
    )
    return applied


def create_atom(
    con: duckdb.DuckDBPyConnection,
    fields: dict[str, str],
    confidence: float,
    origin: str,
    summary_id: str,
    run_id: str,
    now: datetime,
) -> str:
    atom_id = "atom-" + uuid.uuid4().hex[:16]
    con.execute(
        "INSERT INTO atoms (id, subject, action, outcome, consequences, confidence, origin, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            atom_id,
            fields["subject"],
            fields["action"],
            fields["outcome"],
            fields["consequences"],
            confidence,
            origin,
            now,
            now,
        ],
    )
    con.execute(
        "INSERT INTO atom_sources VALUES (?, ?, ?, 'created', ?, ?)", [atom_id, summary_id, run_id, confidence, now]
    )
    return atom_id


def summaries_of_run(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    return con.execute(
        "SELECT id, content, compressed_from FROM memories WHERE created_by_run = ? AND kind = 'summary' "
        "AND lifecycle = 'active' ORDER BY id",
        [run_id],
    ).df()


def since_days(now: datetime, days: float) -> datetime:
    return now - timedelta(days=days)


def unreported_runs(con: duckdb.DuckDBPyConnection, run_id: str) -> list[tuple[str, int, int, datetime, datetime]]:
    """Runs other than `run_id` that compressed clusters but never finished their row in consolidation_runs
    (they died after their last commit, before their report): (run id, clusters, members archived, first and
    last compression time)."""
    rows = con.execute(
        """SELECT run_id, count(*), coalesce(sum(member_count), 0), min(created_at), max(created_at)
           FROM compression_log
           WHERE status = 'compressed' AND run_id <> ?
             AND run_id NOT IN (SELECT run_id FROM consolidation_runs WHERE finished_at IS NOT NULL)
           GROUP BY run_id ORDER BY min(created_at)""",
        [run_id],
    ).fetchall()
    return [(str(r[0]), int(r[1]), int(r[2]), r[3], r[4]) for r in rows]
