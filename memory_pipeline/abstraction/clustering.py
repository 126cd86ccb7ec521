"""Single-linkage clustering at a cosine threshold, exactly, without an N×N matrix.

Single linkage at threshold t is the connected components of the graph whose edges are the pairs with
cosine ≥ t. We compute that graph tile by tile in float32 over the upper triangle, keep only the edges,
and re-check pairs within `RECHECK_EPS` of the threshold in float64 so the partition equals the float64
one. Peak memory is one tile, not N².
"""

from __future__ import annotations

import hashlib
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

RECHECK_EPS = 1e-6
RECENT_SKIP_REASON = "fingerprint processed within the last {days:g} days"
TILE_ROWS = 2048
TILE_COLS = 16384


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Unit rows in float32 (zero rows stay zero and match nothing)."""
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    norms[norms == 0] = np.float32(1)
    return v / norms


def threshold_edges(
    vectors: np.ndarray, threshold: float, tile_rows: int = TILE_ROWS, tile_cols: int = TILE_COLS
) -> tuple[np.ndarray, np.ndarray]:
    """All pairs i < j with cosine(i, j) ≥ threshold, as two index arrays."""
    v32 = normalise(vectors)
    n = v32.shape[0]
    v64: np.ndarray | None = None
    lo = np.float32(threshold - RECHECK_EPS)
    rows_out: list[np.ndarray] = []
    cols_out: list[np.ndarray] = []
    for i0 in range(0, n, tile_rows):
        i1 = min(n, i0 + tile_rows)
        block = v32[i0:i1]
        for j0 in range(i0, n, tile_cols):
            j1 = min(n, j0 + tile_cols)
            sims = block @ v32[j0:j1].T
            width = j1 - j0
            flat = np.flatnonzero(sims >= lo)
            if flat.size == 0:
                continue
            r = flat // width
            c = flat % width
            values = sims.ravel()[flat]
            r += i0
            c += j0
            upper = r < c
            r, c, values = r[upper], c[upper], values[upper]
            near = np.abs(values - np.float32(threshold)) <= np.float32(RECHECK_EPS)
            if near.any():
                if v64 is None:
                    v64 = np.asarray(vectors, dtype=np.float64)
                    norms = np.linalg.norm(v64, axis=1, keepdims=True)
                    norms[norms == 0] = 1.0
                    v64 = v64 / norms
                exact = np.einsum("ij,ij->i", v64[r[near]], v64[c[near]])
                keep = np.ones(r.size, dtype=bool)
                keep[np.flatnonzero(near)] = exact >= threshold
                r, c = r[keep], c[keep]
            rows_out.append(r.astype(np.int64))
            cols_out.append(c.astype(np.int64))
    if not rows_out:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    return np.concatenate(rows_out), np.concatenate(cols_out)


def components(n: int, rows: np.ndarray, cols: np.ndarray, min_size: int) -> list[np.ndarray]:
    """Connected components with at least `min_size` members, each as sorted indices."""
    if n == 0:
        return []
    graph = coo_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    bounds = np.flatnonzero(np.diff(sorted_labels)) + 1
    groups = np.split(order, bounds)
    return [np.sort(g) for g in groups if g.size >= min_size]


def single_linkage(vectors: np.ndarray, threshold: float, min_size: int) -> list[np.ndarray]:
    rows, cols = threshold_edges(vectors, threshold)
    return components(vectors.shape[0], rows, cols, min_size)


def fingerprint(member_ids: Iterable[str]) -> str:
    """SHA-256 of the sorted member ids: the same cluster always has the same fingerprint."""
    return hashlib.sha256("\n".join(sorted(member_ids)).encode("utf-8")).hexdigest()


def cluster_id_for(fp: str) -> str:
    """A UUID derived from the fingerprint, so a cluster listed by a dry run can be re-run by id."""
    return str(uuid.UUID(fp[:32]))


def top_categories(category_lists: Iterable[Sequence[str]], k: int = 2) -> list[str]:
    counts = Counter(c for cats in category_lists for c in cats if c != "compressed")
    return [name for name, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


@dataclass
class MemoryCluster:
    """Seed 000 §6 MemoryCluster, plus why it is skipped (if it is)."""

    cluster_id: str
    fingerprint: str
    member_ids: list[str]
    member_count: int
    avg_similarity: float
    dominant_category: str
    top_categories: list[str]
    total_tokens: int
    max_importance: float
    oldest_member_at: str
    newest_member_at: str
    skip_reason: str | None = None
    extra: dict[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _iso(ts: object) -> str:
    return pd.Timestamp(ts).to_pydatetime().isoformat() + "Z"


def avg_pairwise_similarity(vectors: np.ndarray) -> float:
    v = normalise(vectors)
    m = v.shape[0]
    if m < 2:
        return 1.0
    total = float(np.square(v.sum(axis=0, dtype=np.float64)).sum()) - float(
        np.einsum("ij,ij->", v, v, dtype=np.float64)
    )
    return total / (m * (m - 1))


def build_clusters(
    frame: pd.DataFrame,
    vectors: np.ndarray,
    threshold: float,
    min_size: int,
    recently_processed: set[str] | None = None,
    ttl_days: float = 7.0,
) -> list[MemoryCluster]:
    """Clusters of the eligible set, largest first; recently processed fingerprints carry a skip reason.

    `frame` has columns id, importance, categories, token_count, created_at in the row order of `vectors`.
    """
    recently_processed = recently_processed or set()
    out: list[MemoryCluster] = []
    for idx in single_linkage(vectors, threshold, min_size):
        members = frame.iloc[idx]
        ids = [str(i) for i in members["id"]]
        fp = fingerprint(ids)
        cats = [list(c) if c is not None else [] for c in members["categories"]]
        top = top_categories(cats)
        out.append(
            MemoryCluster(
                cluster_id=cluster_id_for(fp),
                fingerprint=fp,
                member_ids=sorted(ids),
                member_count=len(ids),
                avg_similarity=round(avg_pairwise_similarity(vectors[idx]), 4),
                dominant_category=top[0] if top else "uncategorised",
                top_categories=top,
                total_tokens=int(members["token_count"].sum()),
                max_importance=float(members["importance"].max()),
                oldest_member_at=_iso(members["created_at"].min()),
                newest_member_at=_iso(members["created_at"].max()),
                skip_reason=(RECENT_SKIP_REASON.format(days=ttl_days) if fp in recently_processed else None),
            )
        )
    out.sort(key=lambda c: (-c.member_count, c.fingerprint))
    return out
