"""Single-linkage clustering at a cosine threshold, exactly, without an N×N matrix.

Single linkage at threshold t is the connected components of the graph whose edges are the pairs with
cosine ≥ t. We compute that graph tile by tile in float32 (upper triangle only, one reused tile buffer per
thread; row strips spread over one thread per core, each with a single-threaded BLAS, so the numpy
threshold scan of one strip overlaps the GEMM of another),
keep only the edges, and re-check in float64 every pair whose float32 cosine lies within the float32
error bound of the threshold, so the edge set — and the partition — equals the float64 one. Peak memory is
one tile plus the edges, not N².

`threshold_edges(..., rows=Q)` computes only the edges that touch the rows Q (against all rows): that is
what an incremental night needs (O(|Q|·N) instead of O(N²)), see `threshold_graph`.
"""

from __future__ import annotations

import hashlib
import os
import threading
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components

RECHECK_EPS = 1e-6  # the smallest re-check window; the real one grows with the dimension (recheck_window)
RECENT_SKIP_REASON = "fingerprint processed within the last {days:g} days"
# Chosen by measurement (benchmarks/clustering.py --tiles, results in benchmarks/RESULTS.md): the tile's GEMM
# runs at the BLAS's full rate and the tile (float32 + mask, ~40 MiB) stays well inside the memory target.
TILE_ROWS = 2048
TILE_COLS = 4096
_U32 = 2.0**-24  # float32 unit roundoff


def recheck_window(dim: int) -> float:
    """A bound on |float32 cosine − float64 cosine| for `dim`-dimensional rows: normalising each row in
    float32 costs ≤ (d/2 + 3)·u relative per component, the float32 dot product ≤ d·u (any summation order,
    FMA or not), so ≤ (2d + 6)·u in all; we take (2d + 16)·u. Pairs whose float32 cosine is within this of
    the threshold are decided in float64, so no pair can land on the wrong side."""
    return max(RECHECK_EPS, (2 * dim + 16) * _U32)


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Unit rows in float32, a new array (zero rows stay zero and match nothing). Rounding: ≤ (d/2 + 3)·u
    relative per component, inside `recheck_window`'s budget."""
    v = np.array(vectors, dtype=np.float32, copy=True, ndmin=2)
    norms = np.sqrt(np.einsum("ij,ij->i", v, v))
    norms[norms == 0] = np.float32(1)
    v *= (np.float32(1) / norms)[:, None]
    return v


def cosine64(vectors: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The float64 cosine of each pair (rows[k], cols[k]), computed the same way whichever pairs are asked
    for (row-wise normalisation, then a row-wise sum), so a pair always gets the same verdict."""
    a = np.asarray(vectors[rows], dtype=np.float64)
    b = np.asarray(vectors[cols], dtype=np.float64)
    na = np.sqrt((a * a).sum(axis=1))
    nb = np.sqrt((b * b).sum(axis=1))
    na[na == 0] = 1.0
    nb[nb == 0] = 1.0
    return ((a / na[:, None]) * (b / nb[:, None])).sum(axis=1)


class _Bounds:
    """float32 screening bounds around the threshold: accept ≥ hi, re-check [lo, hi), reject < lo."""

    def __init__(self, threshold: float, dim: int) -> None:
        eps = recheck_window(dim)
        self.threshold = float(threshold)
        lo = np.float32(threshold - eps)
        self.lo = lo if float(lo) <= threshold - eps else np.nextafter(lo, np.float32(-np.inf))
        hi = np.float32(threshold + eps)
        self.hi = hi if float(hi) >= threshold + eps else np.nextafter(hi, np.float32(np.inf))


def select_rows(n: int, rows: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """`rows` as sorted unique indices and as a mask over the n rows; (None, None) for a full build."""
    if rows is None:
        return None, None
    rows = np.unique(np.asarray(rows, dtype=np.int64))
    in_rows = np.zeros(n, dtype=bool)
    in_rows[rows] = True
    return rows, in_rows


def taken_once(r: np.ndarray, c: np.ndarray, in_rows: np.ndarray | None) -> np.ndarray:
    """Which of the tile's pairs (r, c) this build reports, so each pair comes out once: the upper triangle
    of a full build; with `rows`, a pair inside them from its smaller end, a pair leaving them always."""
    if in_rows is None:
        return r < c
    return (r != c) & ((r < c) | ~in_rows[c])


def strips(n: int, rows: np.ndarray | None, tile_rows: int) -> Iterator[tuple[np.ndarray | slice, int]]:
    """Row strips: (index or slice, first column to visit)."""
    if rows is None:
        for i0 in range(0, n, tile_rows):
            yield slice(i0, min(n, i0 + tile_rows)), i0
    else:
        for k in range(0, rows.size, tile_rows):
            yield rows[k : k + tile_rows], 0


def _workers() -> int:
    """Strips run on this many threads, each with a single-threaded BLAS (threadpoolctl), so one strip's
    threshold scan overlaps another's GEMM; 1 (one thread, multi-threaded BLAS) without threadpoolctl."""
    try:
        import threadpoolctl  # noqa: F401
    except ImportError:
        return 1
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def threshold_edges(
    vectors: np.ndarray,
    threshold: float,
    tile_rows: int = TILE_ROWS,
    tile_cols: int = TILE_COLS,
    rows: np.ndarray | None = None,
    workers: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """All pairs i < j with cosine(i, j) ≥ threshold (float64 verdict), as two int64 index arrays.

    With `rows` (indices), only the pairs with at least one end in `rows`, each once. `workers`: threads
    (default: one per core when threadpoolctl is installed); the edge set does not depend on it.
    """
    n = int(vectors.shape[0])
    empty = np.zeros(0, dtype=np.int64)
    if n < 2:
        return empty, empty
    v32 = normalise(vectors)
    bounds = _Bounds(threshold, int(v32.shape[1]))
    rows, in_rows = select_rows(n, rows)
    if rows is not None and rows.size == 0:
        return empty, empty
    tr = max(1, min(tile_rows, n if rows is None else rows.size))
    tc = max(1, min(tile_cols, n))
    work = list(strips(n, rows, tr))
    local = threading.local()

    def strip_edges(item: tuple[np.ndarray | slice, int]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        strip, first_col = item
        if not hasattr(local, "sims"):  # one tile per thread, reused: no page faults per tile
            local.sims = np.empty(tr * tc, dtype=np.float32)
            local.mask = np.empty(tr * tc, dtype=bool)
        block = v32[strip]
        row_ids = np.arange(strip.start, strip.stop) if isinstance(strip, slice) else strip
        height = block.shape[0]
        out_r: list[np.ndarray] = []
        out_c: list[np.ndarray] = []
        for j0 in range(first_col, n, tc):
            j1 = min(n, j0 + tc)
            width = j1 - j0
            sims = local.sims[: height * width].reshape(height, width)
            np.matmul(block, v32[j0:j1].T, out=sims)
            mask = local.mask[: height * width].reshape(height, width)
            np.greater_equal(sims, bounds.lo, out=mask)
            flat = np.flatnonzero(mask)
            if flat.size == 0:
                continue
            values = sims.ravel()[flat]
            r = row_ids[flat // width]
            c = flat % width + j0
            keep = taken_once(r, c, in_rows)
            r, c, values = r[keep], c[keep], values[keep]
            near = values < bounds.hi
            if near.any():
                idx = np.flatnonzero(near)
                ok = cosine64(vectors, r[idx], c[idx]) >= bounds.threshold
                drop = idx[~ok]
                if drop.size:
                    keep2 = np.ones(r.size, dtype=bool)
                    keep2[drop] = False
                    r, c = r[keep2], c[keep2]
            if r.size:
                out_r.append(np.minimum(r, c))
                out_c.append(np.maximum(r, c))
        return out_r, out_c

    threads = min(_workers() if workers is None else max(1, workers), len(work))
    if threads > 1:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
            results = list(pool.map(strip_edges, work))
    else:
        results = [strip_edges(item) for item in work]
    out_r = [a for r_list, _ in results for a in r_list]
    out_c = [a for _, c_list in results for a in c_list]
    if not out_r:
        return empty, empty
    return np.concatenate(out_r).astype(np.int64, copy=False), np.concatenate(out_c).astype(np.int64, copy=False)


def components(n: int, rows: np.ndarray, cols: np.ndarray, min_size: int) -> list[np.ndarray]:
    """Connected components with at least `min_size` members, each as sorted indices (in the order of their
    smallest member)."""
    if n == 0:
        return []
    graph = coo_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    big = np.bincount(labels) >= min_size
    members = np.flatnonzero(big[labels])  # only rows of big-enough components: singletons cost nothing
    order = members[np.argsort(labels[members], kind="stable")]  # stable: sorted within each component
    bounds = np.flatnonzero(np.diff(labels[order])) + 1
    return np.split(order, bounds) if order.size else []


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


_EPOCH = datetime(1970, 1, 1)


def _iso_us(microseconds: int) -> str:
    """Naive-UTC microseconds since the epoch → the same ISO text as `_iso`."""
    return (_EPOCH + timedelta(microseconds=microseconds)).isoformat() + "Z"


def cluster_similarities(vectors: np.ndarray, groups: Sequence[np.ndarray], batch_rows: int = 65536) -> np.ndarray:
    """`avg_pairwise_similarity` of every group, vectorised: (‖Σv‖² − Σ‖v‖²) / (m(m − 1)) of unit rows; the
    per-group sums are one sparse (groups × rows) product per batch of rows."""
    out = np.ones(len(groups), dtype=np.float64)
    k = 0
    while k < len(groups):
        j, rows = k, 0
        while j < len(groups) and (j == k or rows + groups[j].size <= batch_rows):
            rows += groups[j].size
            j += 1
        sizes = np.fromiter((g.size for g in groups[k:j]), dtype=np.int64, count=j - k)
        v = normalise(vectors[np.concatenate(groups[k:j])]).astype(np.float64)
        owner = np.repeat(np.arange(j - k), sizes)
        indicator = csr_matrix((np.ones(rows), (owner, np.arange(rows))), shape=(j - k, rows))
        sums = np.asarray(indicator @ v)
        self_dots = np.bincount(owner, weights=np.einsum("ij,ij->i", v, v), minlength=j - k)
        m = sizes.astype(np.float64)
        pairs = np.where(m >= 2, m * (m - 1), 1.0)
        out[k:j] = np.where(m >= 2, (np.einsum("ij,ij->i", sums, sums) - self_dots) / pairs, 1.0)
        k = j
    return out


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
    groups: list[np.ndarray] | None = None,
) -> list[MemoryCluster]:
    """Clusters of the eligible set, largest first; recently processed fingerprints carry a skip reason.

    `frame` has columns id, importance, categories, token_count, created_at in the row order of `vectors`.
    `groups` (row indices per cluster) skips the clustering when the caller already has the components,
    e.g. from an incremental threshold graph.
    """
    recently_processed = recently_processed or set()
    out: list[MemoryCluster] = []
    if groups is None:
        groups = single_linkage(vectors, threshold, min_size)
    if not groups:
        return out
    # per-cluster numbers for all clusters at once (reduceat over the concatenated members): 10^4–10^5
    # clusters at 10^6 memories must cost seconds, not a pandas selection each
    flat = np.concatenate(groups)
    sizes = np.fromiter((g.size for g in groups), dtype=np.int64, count=len(groups))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    id_col = frame["id"].to_numpy(dtype=object)
    categories = frame["categories"].to_numpy(dtype=object)
    total_tokens = np.add.reduceat(frame["token_count"].to_numpy(dtype=np.int64)[flat], starts)
    max_importance = np.maximum.reduceat(frame["importance"].to_numpy(dtype=np.float64)[flat], starts)
    created_us = frame["created_at"].to_numpy().astype("datetime64[us]").astype(np.int64)[flat]
    oldest, newest = np.minimum.reduceat(created_us, starts), np.maximum.reduceat(created_us, starts)
    similarity = cluster_similarities(vectors, groups)
    skip = RECENT_SKIP_REASON.format(days=ttl_days)
    for k, idx in enumerate(groups):
        ids = [str(i) for i in id_col[idx]]
        fp = fingerprint(ids)
        top = top_categories(list(c) if c is not None else [] for c in categories[idx])
        out.append(
            MemoryCluster(
                cluster_id=cluster_id_for(fp),
                fingerprint=fp,
                member_ids=sorted(ids),
                member_count=len(ids),
                avg_similarity=round(float(similarity[k]), 4),
                dominant_category=top[0] if top else "uncategorised",
                top_categories=top,
                total_tokens=int(total_tokens[k]),
                max_importance=float(max_importance[k]),
                oldest_member_at=_iso_us(int(oldest[k])),
                newest_member_at=_iso_us(int(newest[k])),
                skip_reason=skip if fp in recently_processed else None,
            )
        )
    out.sort(key=lambda c: (-c.member_count, c.fingerprint))
    return out
