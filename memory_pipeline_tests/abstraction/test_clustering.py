import hashlib

import numpy as np
import pandas as pd
import pytest

from memory_pipeline.abstraction import clustering


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
