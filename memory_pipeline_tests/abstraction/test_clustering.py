import hashlib

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from memory_pipeline.similarity import clustering


def brute_force_partition(vectors: np.ndarray, threshold: float, min_size: int) -> set[frozenset[int]]:
    """Reference: the full float64 similarity matrix and a union-find."""
    v = vectors.astype(np.float64)
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    sims = v @ v.T
    parent = list(range(len(v)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(v)):
        for j in range(i + 1, len(v)):
            if sims[i, j] >= threshold:
                parent[find(i)] = find(j)
    groups: dict[int, set[int]] = {}
    for i in range(len(v)):
        groups.setdefault(find(i), set()).add(i)
    return {frozenset(g) for g in groups.values() if len(g) >= min_size}


def clustered_vectors(seed: int, n_centres: int, per_centre: int, noise: float, dim: int = 32) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_centres, dim))
    points = np.repeat(centres, per_centre, axis=0) + noise * rng.normal(size=(n_centres * per_centre, dim))
    points = np.vstack([points, rng.normal(size=(per_centre * 2, dim))])
    return points[rng.permutation(len(points))].astype(np.float32)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("tiles", [(7, 13), (2048, 16384)])
def test_single_linkage_equals_brute_force(seed: int, tiles: tuple[int, int]) -> None:
    vectors = clustered_vectors(seed, n_centres=6, per_centre=12, noise=0.45)
    rows, cols = clustering.threshold_edges(vectors, 0.82, tile_rows=tiles[0], tile_cols=tiles[1])
    ours = {frozenset(g.tolist()) for g in clustering.components(len(vectors), rows, cols, 3)}
    expected = brute_force_partition(vectors, 0.82, 3)
    assert ours == expected
    assert len(expected) > 0  # the data really forms clusters


def test_edges_are_upper_triangle_and_above_threshold() -> None:
    vectors = clustered_vectors(3, n_centres=4, per_centre=10, noise=0.4)
    rows, cols = clustering.threshold_edges(vectors, 0.82, tile_rows=5, tile_cols=9)
    assert np.all(rows < cols)
    v = clustering.normalise(vectors).astype(np.float64)
    assert np.all(np.einsum("ij,ij->i", v[rows], v[cols]) >= 0.82)
    assert len(set(zip(rows.tolist(), cols.tolist(), strict=True))) == len(rows)


def test_pair_exactly_at_threshold_is_linked_and_just_below_is_not() -> None:
    angle = np.arccos(0.82)
    a = np.array([1.0, 0.0, 0.0])
    b = np.array([np.cos(angle), np.sin(angle), 0.0])
    c = np.array([np.cos(-angle), np.sin(-angle), 0.0])
    vectors = np.vstack([a, b, c])
    exact = float(np.dot(a, b))
    assert clustering.single_linkage(vectors, exact, 3) != []  # b–a and a–c at exactly the threshold
    # 1e-9 above the float64 similarity: float32 alone cannot tell, the float64 re-check must.
    assert clustering.single_linkage(vectors, exact + 1e-9, 2) == []


def test_min_size_and_singletons() -> None:
    vectors = np.eye(5, dtype=np.float32)
    assert clustering.single_linkage(vectors, 0.82, 1) == [np.array([i]) for i in range(5)]
    assert clustering.single_linkage(vectors, 0.82, 2) == []


def test_fingerprint_is_sha256_of_sorted_ids_and_order_free() -> None:
    fp = clustering.fingerprint(["b", "a", "c"])
    assert fp == clustering.fingerprint(["c", "b", "a"])
    assert fp == hashlib.sha256(b"a\nb\nc").hexdigest()
    assert clustering.cluster_id_for(fp) == clustering.cluster_id_for(clustering.fingerprint(["a", "c", "b"]))
    assert clustering.fingerprint(["a", "b"]) != fp


def test_top_categories_follow_frequency() -> None:
    cats = [["trading"], ["trading"], ["meta"], ["trading"], ["meta"], ["ops"]]
    assert clustering.top_categories(cats) == ["trading", "meta"]


def test_build_clusters_fields_and_ttl_skip() -> None:
    vectors = clustered_vectors(1, n_centres=3, per_centre=6, noise=0.3)
    n = len(vectors)
    frame = pd.DataFrame(
        {
            "id": [f"m{i:03d}" for i in range(n)],
            "importance": np.linspace(0.5, 2.0, n),
            "categories": [["trading"] if i % 2 else ["meta"] for i in range(n)],
            "token_count": [10] * n,
            "created_at": pd.date_range("2026-10-01", periods=n, freq="h"),
        }
    )
    found = clustering.build_clusters(frame, vectors, 0.82, 3)
    assert found, "expected clusters"
    sizes = [c.member_count for c in found]
    assert sizes == sorted(sizes, reverse=True)
    first = found[0]
    assert first.total_tokens == 10 * first.member_count
    assert first.fingerprint == clustering.fingerprint(first.member_ids)
    assert 0.82 <= first.avg_similarity <= 1.0 or first.member_count > 2
    assert first.oldest_member_at <= first.newest_member_at
    again = clustering.build_clusters(frame, vectors, 0.82, 3, recently_processed={first.fingerprint})
    skipped = [c for c in again if c.skip_reason]
    assert [c.fingerprint for c in skipped] == [first.fingerprint]
    assert skipped[0].skip_reason.startswith("fingerprint processed within the last 7 days")


# ------------------------------------------------------------------ equivalence with scikit-learn


def sklearn_partition(vectors: np.ndarray, distance_threshold: float) -> set[frozenset[int]]:
    """AgglomerativeClustering(single, cosine): merges while the cosine distance is < distance_threshold."""
    from sklearn.cluster import AgglomerativeClustering

    labels = AgglomerativeClustering(
        n_clusters=None, linkage="single", metric="cosine", distance_threshold=distance_threshold
    ).fit_predict(np.asarray(vectors, dtype=np.float64))
    groups: dict[int, set[int]] = {}
    for i, label in enumerate(labels.tolist()):
        groups.setdefault(label, set()).add(i)
    return {frozenset(g) for g in groups.values()}


def ours(vectors: np.ndarray, threshold: float, **tiles: int) -> set[frozenset[int]]:
    rows, cols = clustering.threshold_edges(vectors, threshold, **tiles)
    return {frozenset(g.tolist()) for g in clustering.components(len(vectors), rows, cols, 1)}


def float64_cosines(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float64)
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    return v @ v.T


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n_centres=st.integers(1, 6),
    per_centre=st.integers(1, 9),
    noise=st.floats(0.1, 0.9),
    dim=st.sampled_from([3, 8, 32, 384]),
    threshold=st.sampled_from([0.5, 0.82, 0.9, 0.97]),
    as_float32=st.booleans(),
)
def test_partition_equals_scikit_learn_single_linkage(
    seed: int, n_centres: int, per_centre: int, noise: float, dim: int, threshold: float, as_float32: bool
) -> None:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_centres, dim))
    points = np.repeat(centres, per_centre, axis=0) + noise * rng.normal(size=(n_centres * per_centre, dim))
    points = np.vstack([points, rng.normal(size=(3, dim))])  # and a little background
    vectors = points.astype(np.float32) if as_float32 else points
    sims = float64_cosines(vectors)
    off_diagonal = sims[~np.eye(len(sims), dtype=bool)]
    # exact ties are their own test below: scikit-learn merges at distance < t, we link at cosine ≥ t
    assume(not np.any(np.abs(off_diagonal - threshold) < 1e-12))
    expected = sklearn_partition(vectors, 1 - threshold)
    assert ours(vectors, threshold) == expected
    assert ours(vectors, threshold, tile_rows=5, tile_cols=7) == expected


def _pair_at(cosine: float, dim: int, rotate: bool, seed: int = 0) -> np.ndarray:
    """Three vectors: b and c at `cosine` from a (on either side of it), a 3-member chain iff cosine ≥ t."""
    s = np.sqrt(1.0 - cosine * cosine)
    v = np.zeros((3, dim))
    v[0, 0] = 1.0
    v[1, 0], v[1, 1] = cosine, s
    v[2, 0], v[2, 1] = cosine, -s
    if rotate:  # dense vectors, like real embeddings: float32 error ~1e-7 on the cosine
        basis = np.random.default_rng(seed).normal(size=(2, dim))
        basis[0] /= np.linalg.norm(basis[0])
        basis[1] -= basis[1] @ basis[0] * basis[0]
        basis[1] /= np.linalg.norm(basis[1])
        v = v[:, :2] @ basis
    return v


@pytest.mark.parametrize("dim", [2, 384])
@pytest.mark.parametrize(
    ("cosine", "linked"),
    [(0.82, True), (float(np.nextafter(0.82, 0.0)), False), (0.82 + 1e-7, True), (0.82 - 1e-7, False)],
    ids=["exactly", "one-ulp-below", "1e-7-above", "1e-7-below"],
)
def test_fixed_cases_at_and_just_below_the_threshold(dim: int, cosine: float, linked: bool) -> None:
    v = _pair_at(cosine, dim, rotate=False)
    assert np.linalg.norm(v, axis=1).tolist() == [1.0, 1.0, 1.0]  # so the float64 cosine is exactly `cosine`
    assert float64_cosines(v)[0, 1] == cosine
    expected = {frozenset({0, 1, 2})} if linked else {frozenset({0}), frozenset({1}), frozenset({2})}
    assert ours(v, 0.82) == expected
    assert ours(v.astype(np.float32), 0.82) == ours(v.astype(np.float32).astype(np.float64), 0.82)
    # scikit-learn's cut is strict (< distance_threshold): one ulp above 1 − 0.82 is the same rule as ours
    assert sklearn_partition(v, float(np.nextafter(1 - 0.82, 1.0))) == expected
    assert brute_force_partition(v, 0.82, 1) == expected


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("offset", [-3e-7, -1e-7, -2e-8, 2e-8, 1e-7, 3e-7])
def test_dense_float32_pairs_near_the_threshold_follow_float64(seed: int, offset: float) -> None:
    """Rotated into 384 dense dimensions and stored as float32, the pairs' float32 cosines err by ~1e-7:
    the verdict must still be the float64 one (of the float32 values), pair by pair."""
    v32 = _pair_at(0.82 + offset, 384, rotate=True, seed=seed).astype(np.float32)
    sims = float64_cosines(v32)
    expected_edges = {(0, j) for j in (1, 2) if sims[0, j] >= 0.82} | ({(1, 2)} if sims[1, 2] >= 0.82 else set())
    rows, cols = clustering.threshold_edges(v32, 0.82)
    assert set(zip(rows.tolist(), cols.tolist(), strict=True)) == expected_edges


@pytest.mark.parametrize("rows", [None, np.array([0, 5, 17, 40, 41, 99])])
def test_edges_do_not_depend_on_threads(rows: np.ndarray | None) -> None:
    vectors = clustered_vectors(5, n_centres=5, per_centre=20, noise=0.45)
    pairs = {
        workers: set(
            zip(*(a.tolist() for a in clustering.threshold_edges(vectors, 0.82, 8, 16, rows, workers)), strict=True)
        )
        for workers in (1, 2, 3)
    }
    assert pairs[1] == pairs[2] == pairs[3] and pairs[1]
