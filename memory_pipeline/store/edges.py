"""The persisted threshold graph (migration 4): load it, and write a night's delta. No Dagster here.

Tables: `cluster_graph` (one row, name 'eligible': model, threshold, dim, counts, next node number),
`cluster_graph_nodes` (node, memory_id, checksum of the vector) and `cluster_graph_edges` (a < b, node
numbers). The caller owns the transaction, so the three tables always change together.
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import numpy as np
import pyarrow as pa

from memory_pipeline.similarity.threshold_graph import FULL, INCREMENTAL, GraphUpdate, StoredGraph, update_graph
from memory_pipeline.store.db import MemoryStore

GRAPH_NAME = "eligible"


def load_graph(con: duckdb.DuckDBPyConnection) -> StoredGraph | None:
    """The stored graph, or None if there is none yet."""
    meta = con.execute(
        "SELECT model, threshold, dim, next_node, generation FROM cluster_graph WHERE name = ?", [GRAPH_NAME]
    ).fetchall()
    if not meta:
        return None
    model, threshold, dim, next_node, generation = meta[0]
    nodes = con.sql("SELECT node, memory_id, checksum FROM cluster_graph_nodes").to_arrow_table()
    edges = con.sql("SELECT a, b FROM cluster_graph_edges").to_arrow_table()
    return StoredGraph(
        model=str(model),
        threshold=float(threshold),
        dim=int(dim),
        nodes=_ints(nodes.column("node")),
        memory_ids=np.asarray(nodes.column("memory_id").to_pylist(), dtype=object),
        checksums=nodes.column("checksum").to_numpy().astype(np.uint64, copy=False),
        edge_a=_ints(edges.column("a")),
        edge_b=_ints(edges.column("b")),
        next_node=int(next_node),
        generation=int(generation),
    )


def _ints(column: pa.ChunkedArray) -> np.ndarray:
    return column.to_numpy().astype(np.int64, copy=False)


def save_graph(
    con: duckdb.DuckDBPyConnection,
    update: GraphUpdate,
    memory_ids: np.ndarray | list[str],
    *,
    model: str,
    threshold: float,
    dim: int,
    now: datetime,
    run_id: str | None = None,
    base_generation: int | None = None,
) -> None:
    """Apply a night's delta (or replace the graph, after a full build). The caller owns the transaction.

    An incremental delta was computed from the stored graph of generation `base_generation`; if the store
    now holds another one (a concurrent writer), the whole of tonight's graph replaces it instead."""
    ids = np.asarray(memory_ids, dtype=object)
    current = con.execute("SELECT generation FROM cluster_graph WHERE name = ?", [GRAPH_NAME]).fetchall()
    generation = int(current[0][0]) + 1 if current else 1
    whole = update.mode == FULL or not current or int(current[0][0]) != base_generation
    add_rows, edge_a, edge_b = update.add_rows, update.add_edge_a, update.add_edge_b
    if whole:
        con.execute("DELETE FROM cluster_graph_edges")
        con.execute("DELETE FROM cluster_graph_nodes")
        add_rows = np.arange(update.n, dtype=np.int64)
        edge_a, edge_b = update.node_of_row[update.rows], update.node_of_row[update.cols]
    elif update.drop_nodes.size:
        dropped = pa.table({"node": pa.array(update.drop_nodes, pa.int64())})  # noqa: F841 - scanned by name
        con.execute("DELETE FROM cluster_graph_edges WHERE a IN (SELECT node FROM dropped)")
        con.execute("DELETE FROM cluster_graph_edges WHERE b IN (SELECT node FROM dropped)")
        con.execute("DELETE FROM cluster_graph_nodes WHERE node IN (SELECT node FROM dropped)")
    if add_rows.size:
        added = pa.table(  # noqa: F841 - scanned by name
            {
                "node": pa.array(update.node_of_row[add_rows], pa.int64()),
                "memory_id": pa.array(ids[add_rows].tolist(), pa.string()),
                "checksum": pa.array(update.checksums[add_rows], pa.uint64()),
            }
        )
        con.execute("INSERT INTO cluster_graph_nodes SELECT node, memory_id, checksum FROM added")
    if edge_a.size:
        new_edges = pa.table(  # noqa: F841 - scanned by name
            {"a": pa.array(edge_a, pa.int64()), "b": pa.array(edge_b, pa.int64())}
        )
        con.execute("INSERT INTO cluster_graph_edges SELECT a, b FROM new_edges")
    con.execute(
        "INSERT OR REPLACE INTO cluster_graph VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            GRAPH_NAME,
            model,
            float(threshold),
            int(dim),
            update.n,
            int(update.rows.size),
            update.next_node,
            generation,
            update.mode,
            run_id,
            now,
        ],
    )


def clear_graph(con: duckdb.DuckDBPyConnection) -> None:
    """Forget the stored graph (the next night rebuilds it in full)."""
    con.execute("DELETE FROM cluster_graph_edges")
    con.execute("DELETE FROM cluster_graph_nodes")
    con.execute("DELETE FROM cluster_graph WHERE name = ?", [GRAPH_NAME])


def night_graph(
    store: MemoryStore,
    memory_ids: np.ndarray | list[str],
    vectors: np.ndarray,
    *,
    model: str,
    threshold: float,
    mode: str,
    persist: bool,
    now: datetime,
    run_id: str | None = None,
) -> GraphUpdate:
    """Tonight's threshold graph of the eligible set: incremental from the stored graph when it can be,
    full otherwise; written back only when `persist` (a dry run reads the stored graph, writes nothing)."""
    stored = None
    if mode == INCREMENTAL:
        with store.connect() as con:
            stored = load_graph(con)
    update = update_graph(stored, memory_ids, vectors, model=model, threshold=threshold, mode=mode)
    if persist:
        dim = int(vectors.shape[1]) if vectors.ndim == 2 and vectors.shape[0] else 0
        with store.transaction() as con:
            save_graph(
                con,
                update,
                memory_ids,
                model=model,
                threshold=threshold,
                dim=dim,
                now=now,
                run_id=run_id,
                base_generation=stored.generation if stored is not None else None,
            )
    return update
