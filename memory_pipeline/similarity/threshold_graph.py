"""The threshold graph of the eligible set, kept from night to night (pure logic; the store side is
`memory_pipeline.store.edges`).

Single linkage at threshold t = connected components of the graph whose edges are the eligible pairs with
cosine ≥ t. Whether a pair is an edge depends only on the two vectors (and t): so last night's edges among
memories that are still eligible with the same vector are still exactly right. A night therefore computes
only the edges of memories that are new to the eligible set or whose vector changed, against all eligible
memories (O(new × N)), drops the edges of memories that left the set, and re-derives the components. A
different model, dimension or threshold invalidates every edge: full rebuild.

Nodes have stable integer numbers (`node`), so the persisted edges are two integers each, and a memory is
recognised by its id plus a checksum of its vector.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from memory_pipeline.similarity.clustering import TILE_COLS, TILE_ROWS, components, threshold_edges

INCREMENTAL = "incremental"
FULL = "full"
BUILD_MODES = (INCREMENTAL, FULL)
BUILD_ENV = "MEMORY_PIPELINE_CLUSTER_BUILD"
SCREEN_ENV = "MEMORY_PIPELINE_CLUSTER_SCREEN"  # auto (int8 screen when onnxruntime is installed) | off

_CHECKSUM_ROWS = 65536
_CHECKSUM_SEED = 0x5EED  # fixed: checksums are persisted


def resolve_mode(configured: str = "", environ: Mapping[str, str] | None = None) -> str:
    """The build mode: the run's config if set, else MEMORY_PIPELINE_CLUSTER_BUILD, else incremental."""
    env = os.environ if environ is None else environ
    value = (configured or env.get(BUILD_ENV, "") or INCREMENTAL).strip().lower()
    if value not in BUILD_MODES:
        source = "config `build`" if configured else BUILD_ENV
        raise ValueError(f"{source}={value!r}: expected one of {', '.join(BUILD_MODES)}")
    return value


def screen_available(environ: Mapping[str, str] | None = None) -> bool:
    """Whether edges go through the int8 screen (`screening`, the same edge set, ~2.5× faster here on AMX)."""
    env = os.environ if environ is None else environ
    if env.get(SCREEN_ENV, "auto").strip().lower() in ("off", "0", "false", "no"):
        return False
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def threshold_graph_edges(
    vectors: np.ndarray, threshold: float, tile_rows: int, tile_cols: int, rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The exact edge set, through the int8 screen when it is available, else the float32 tiles."""
    if screen_available():
        from memory_pipeline.similarity.screening import screened_threshold_edges

        return screened_threshold_edges(vectors, threshold, tile_rows, tile_cols, rows=rows)
    return threshold_edges(vectors, threshold, tile_rows, tile_cols, rows=rows)


def vector_checksums(vectors: np.ndarray) -> np.ndarray:
    """A 64-bit checksum of each row's float32 bit pattern: two weighted sums mod 2^32 of the 32-bit words
    (odd random weights, so a change of any one word always shows), then a SplitMix64 finaliser. Any change
    of a vector changes its checksum (bar a ~2^-64 accident)."""
    v = np.ascontiguousarray(vectors, dtype=np.float32)
    n, dim = v.shape if v.ndim == 2 else (0, 0)
    out = np.zeros(n, dtype=np.uint64)
    if n == 0:
        return out
    weights = np.random.default_rng(_CHECKSUM_SEED).integers(0, 2**32, size=(dim, 2), dtype=np.uint64)
    weights = (weights | np.uint64(1)).astype(np.uint32)
    words = v.view(np.uint32)
    with np.errstate(over="ignore"):
        for lo in range(0, n, _CHECKSUM_ROWS):
            lanes = (words[lo : lo + _CHECKSUM_ROWS] @ weights).astype(np.uint64)  # wraps mod 2^32
            h = (lanes[:, 0] << np.uint64(32)) | lanes[:, 1]
            h ^= np.uint64(dim)
            h ^= h >> np.uint64(30)
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(27)
            h *= np.uint64(0x94D049BB133111EB)
            h ^= h >> np.uint64(31)
            out[lo : lo + _CHECKSUM_ROWS] = h
    return out


@dataclass
class StoredGraph:
    """A persisted threshold graph: what it was built for, its nodes and its edges (node numbers, a < b)."""

    model: str
    threshold: float
    dim: int
    nodes: np.ndarray  # int64 node numbers
    memory_ids: np.ndarray  # object (str), aligned with nodes
    checksums: np.ndarray  # uint64, aligned with nodes
    edge_a: np.ndarray  # int64 node numbers
    edge_b: np.ndarray
    next_node: int
    generation: int = 0  # bumped by every save: a delta applies only to the graph it was computed from

    def incompatibility(self, model: str, threshold: float, dim: int) -> str | None:
        """Why this graph cannot be reused for (model, threshold, dim), or None if it can."""
        if self.model != model:
            return f"embedding model changed ({self.model} → {model})"
        if self.threshold != threshold:
            return f"threshold changed ({self.threshold:g} → {threshold:g})"
        if self.dim != dim and self.nodes.size and dim:
            return f"vector dimension changed ({self.dim} → {dim})"
        return None


@dataclass
class GraphUpdate:
    """Tonight's graph over the eligible rows, and the delta that turns the stored graph into it."""

    mode: str  # incremental | full
    reason: str
    n: int
    rows: np.ndarray  # all edges, as eligible-row indices (rows < cols)
    cols: np.ndarray
    node_of_row: np.ndarray  # int64 node number of every eligible row
    # the delta: nodes whose stored edges go (left the set or changed vector); nodes and edges that come
    drop_nodes: np.ndarray
    add_rows: np.ndarray  # eligible rows that become (new) nodes
    add_edge_a: np.ndarray  # node numbers
    add_edge_b: np.ndarray
    next_node: int
    checksums: np.ndarray  # uint64 per eligible row
    stats: dict[str, int | float | str] = field(default_factory=dict)

    def components(self, min_size: int) -> list[np.ndarray]:
        return components(self.n, self.rows, self.cols, min_size)


def _empty() -> np.ndarray:
    return np.zeros(0, dtype=np.int64)


def _lookup(sorted_keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """values[k] where sorted_keys[k] == query, else -1 (vectorised)."""
    if sorted_keys.size == 0:
        return np.full(query.size, -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(sorted_keys, query), sorted_keys.size - 1)
    return np.where(sorted_keys[at] == query, values[at], -1).astype(np.int64, copy=False)


def update_graph(
    stored: StoredGraph | None,
    memory_ids: np.ndarray | list[str],
    vectors: np.ndarray,
    *,
    model: str,
    threshold: float,
    mode: str = INCREMENTAL,
    tile_rows: int = TILE_ROWS,
    tile_cols: int = TILE_COLS,
) -> GraphUpdate:
    """Tonight's threshold graph over the eligible set (`memory_ids`, unique, row-aligned with `vectors`).

    Incremental when a compatible stored graph exists and `mode` is incremental; otherwise a full build.
    Either way the edge set is exactly the one a full build gives (a test checks it night after night).
    """
    if mode not in BUILD_MODES:
        raise ValueError(f"cluster graph build mode must be one of {BUILD_MODES}, got {mode!r}")
    ids = np.asarray(memory_ids, dtype=object)
    n = int(ids.size)
    dim = int(vectors.shape[1]) if vectors.ndim == 2 and n else 0
    checksums = vector_checksums(vectors) if n else np.zeros(0, dtype=np.uint64)
    reason = ""
    if mode == FULL:
        reason = "full rebuild requested"
    elif stored is None:
        reason = "no stored graph"
    else:
        reason = stored.incompatibility(model, threshold, dim) or ""
    if reason or stored is None:
        return _full(stored, ids, vectors, checksums, threshold, reason, tile_rows, tile_cols)
    return _incremental(stored, ids, vectors, checksums, threshold, tile_rows, tile_cols)


def _full(
    stored: StoredGraph | None,
    ids: np.ndarray,
    vectors: np.ndarray,
    checksums: np.ndarray,
    threshold: float,
    reason: str,
    tile_rows: int,
    tile_cols: int,
) -> GraphUpdate:
    n = int(ids.size)
    rows, cols = threshold_graph_edges(vectors, threshold, tile_rows, tile_cols) if n else (_empty(), _empty())
    start = stored.next_node if stored is not None else 0
    node_of_row = np.arange(start, start + n, dtype=np.int64)
    return GraphUpdate(
        mode=FULL,
        reason=reason,
        n=n,
        rows=rows,
        cols=cols,
        node_of_row=node_of_row,
        drop_nodes=stored.nodes.copy() if stored is not None else _empty(),
        add_rows=np.arange(n, dtype=np.int64),
        add_edge_a=node_of_row[rows],
        add_edge_b=node_of_row[cols],
        next_node=start + n,
        checksums=checksums,
        stats={"eligible": n, "computed_rows": n, "edges": int(rows.size), "edges_added": int(rows.size)},
    )


def _incremental(
    stored: StoredGraph,
    ids: np.ndarray,
    vectors: np.ndarray,
    checksums: np.ndarray,
    threshold: float,
    tile_rows: int,
    tile_cols: int,
) -> GraphUpdate:
    n = int(ids.size)
    pos = pd.Index(stored.memory_ids).get_indexer(ids) if stored.nodes.size else np.full(n, -1)
    known = pos >= 0
    same = np.zeros(n, dtype=bool)
    same[known] = stored.checksums[pos[known]] == checksums[known]
    fresh_rows = np.flatnonzero(~same)  # new to the set, or a changed vector
    if 2 * fresh_rows.size > n:  # |fresh| × N products would cost more than the full N²/2
        return _full(
            stored, ids, vectors, checksums, threshold, "most memories are new or changed", tile_rows, tile_cols
        )

    # stored nodes that stay (still eligible, same vector) keep their number and their edges
    node_of_row = np.full(n, -1, dtype=np.int64)
    node_of_row[same] = stored.nodes[pos[same]]
    kept_stored = np.zeros(stored.nodes.size, dtype=bool)
    kept_stored[pos[same]] = True
    drop_nodes = stored.nodes[~kept_stored]
    node_of_row[fresh_rows] = np.arange(stored.next_node, stored.next_node + fresh_rows.size, dtype=np.int64)

    # old edges between kept nodes, mapped to tonight's rows (edges touching a dropped node fall away)
    kept_nodes = node_of_row[same]
    order = np.argsort(kept_nodes, kind="stable")
    sorted_nodes, rows_of_kept = kept_nodes[order], np.flatnonzero(same)[order]
    ra = _lookup(sorted_nodes, rows_of_kept, stored.edge_a)
    rb = _lookup(sorted_nodes, rows_of_kept, stored.edge_b)
    alive = (ra >= 0) & (rb >= 0)
    old_r, old_c = ra[alive], rb[alive]

    new_r, new_c = (
        threshold_graph_edges(vectors, threshold, tile_rows, tile_cols, rows=fresh_rows)
        if fresh_rows.size
        else (_empty(), _empty())
    )
    rows = np.concatenate([np.minimum(old_r, old_c), new_r])
    cols = np.concatenate([np.maximum(old_r, old_c), new_c])
    return GraphUpdate(
        mode=INCREMENTAL,
        reason="stored graph reused",
        n=n,
        rows=rows,
        cols=cols,
        node_of_row=node_of_row,
        drop_nodes=drop_nodes,
        add_rows=fresh_rows,
        add_edge_a=node_of_row[new_r],
        add_edge_b=node_of_row[new_c],
        next_node=stored.next_node + int(fresh_rows.size),
        checksums=checksums,
        stats={
            "eligible": n,
            "computed_rows": int(fresh_rows.size),
            "new": int((~known).sum()),
            "changed": int((known & ~same).sum()),
            "left": int(drop_nodes.size - (known & ~same).sum()),
            "edges": int(rows.size),
            "edges_kept": int(old_r.size),
            "edges_dropped": int(stored.edge_a.size - old_r.size),
            "edges_added": int(new_r.size),
        },
    )
