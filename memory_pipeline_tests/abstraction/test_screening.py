import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.similarity import clustering, screening


def edge_set(rows: np.ndarray, cols: np.ndarray) -> set[tuple[int, int]]:
    assert rows.dtype == np.int64 and cols.dtype == np.int64
    pairs = list(zip(rows.tolist(), cols.tolist(), strict=True))
    assert len(set(pairs)) == len(pairs)  # each edge once
    return set(pairs)


def exact(vectors: np.ndarray, threshold: float) -> set[tuple[int, int]]:
    return edge_set(*clustering.threshold_edges(vectors, threshold))


def screened(vectors: np.ndarray, threshold: float, **kw: object) -> set[tuple[int, int]]:
    return edge_set(*screening.screened_threshold_edges(vectors, threshold, **kw))


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def clustered(rng: np.random.Generator, n_centres: int, per_centre: int, dim: int) -> np.ndarray:
    """Clusters whose spreads straddle 0.82 (like benchmarks/data.py), plus background."""
    centres = unit(rng.normal(size=(n_centres, dim)))
    spread = rng.uniform(0.3, 0.6, size=(n_centres, 1))
    owner = np.repeat(np.arange(n_centres), per_centre)
    points = centres[owner] + spread[owner] * rng.normal(size=(owner.size, dim)) / np.sqrt(dim)
    return np.vstack([points, rng.normal(size=(n_centres, dim))])


def pairs_at(cosines: np.ndarray, dim: int, rng: np.random.Generator) -> np.ndarray:
    """Two rows per cosine, dense in `dim` dimensions, whose float64 cosine is the given one up to ~1e-16."""
    out = []
    for cosine in cosines:
        basis = np.linalg.qr(rng.normal(size=(dim, 2)))[0].T
        out += [basis[0], cosine * basis[0] + np.sqrt(1 - cosine * cosine) * basis[1]]
    return np.array(out)


def test_hand_encoded_model_computes_the_exact_integer_product() -> None:
    rng = np.random.default_rng(0)
    screen = screening._Screen(37, 53)
    a = rng.integers(-127, 128, size=(37, 384)).astype(np.int16)
    b = rng.integers(-127, 128, size=(384, 53)).astype(np.int8)
    a[0] = 127  # the extremes a saturating kernel would get wrong
    b[:, 0] = 127
    got = screen.product((a + 128).astype(np.uint8), b)
    assert got.dtype == np.int32
    assert np.array_equal(got, a.astype(np.int64) @ b.astype(np.int64))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("as_float32", [True, False])
def test_equals_exact_build_on_clustered_data_with_pairs_at_the_threshold(seed: int, as_float32: bool) -> None:
    rng = np.random.default_rng(seed)
    t = 0.82
    below = float(np.nextafter(t, 0.0))
    # at the threshold and just around it, and across the whole screening window (±0.04), so pairs land in
    # all three of the screen's verdicts: rejected, re-checked in float64, accepted
    planted = np.r_[[t, t, below, below, t + 1e-7, t - 1e-7, t + 3e-7, t - 3e-7], np.linspace(t - 0.04, t + 0.04, 41)]
    v = np.vstack([clustered(rng, 30, 12, 384), pairs_at(planted, 384, rng)])
    v = v[rng.permutation(len(v))]
    v = v.astype(np.float32) if as_float32 else v
    stats: dict[str, float] = {}
    want = exact(v, t)
    got = screened(v, t, tile_rows=64, tile_cols=96, stats=stats)
    assert got == want
    assert len(want) > 100
    assert stats["rechecked"] > 0 and stats["candidates"] >= len(want)
    assert 0 < stats["margin"] < 0.1


def test_fixed_pairs_at_and_just_below_the_threshold() -> None:
    """The float64 verdict decides, for exact ties too: a pair at exactly 0.82 is an edge, one ulp below is not
    (axis-aligned rows, so the float64 cosine is exactly the planted value)."""
    t = 0.82
    for cosine, linked in ((t, True), (float(np.nextafter(t, 0.0)), False), (t + 1e-7, True), (t - 1e-7, False)):
        v = np.zeros((3, 384))
        v[0, 0] = 1.0
        v[1, 0], v[1, 1] = cosine, np.sqrt(1 - cosine * cosine)
        v[2, 5] = 1.0
        assert clustering.cosine64(v, np.array([0]), np.array([1]))[0] == cosine
        assert screened(v, t) == exact(v, t) == ({(0, 1)} if linked else set())


def test_threads_tiles_and_odd_rows() -> None:
    rng = np.random.default_rng(7)
    odd = [np.zeros((2, 64)), np.full((1, 64), np.nan), np.full((1, 64), np.inf), np.full((1, 64), 1e39)]
    v = np.vstack([clustered(rng, 20, 10, 64), *odd])  # 1e39: finite in float64, not in float32
    v = v[rng.permutation(len(v))]
    want = exact(v, 0.82)
    assert want
    for workers in (1, 2, 3):
        for tiles in ((7, 13), (64, 1000), (2048, 4096)):
            assert screened(v, 0.82, tile_rows=tiles[0], tile_cols=tiles[1], workers=workers) == want
    # a low threshold: zero rows have cosine 0 to everything and match it, as in the exact build; rows that
    # overflow float32 match nothing there, though their float64 cosine is finite
    assert screened(v, 0.0) == exact(v, 0.0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n_centres=st.integers(1, 6),
    per_centre=st.integers(1, 9),
    dim=st.sampled_from([3, 8, 32, 384]),
    threshold=st.sampled_from([0.5, 0.82, 0.9, 0.97]),
    as_float32=st.booleans(),
    tiles=st.sampled_from([(3, 5), (16, 16), (2048, 4096)]),
)
def test_property_equals_exact_build(
    seed: int, n_centres: int, per_centre: int, dim: int, threshold: float, as_float32: bool, tiles: tuple[int, int]
) -> None:
    rng = np.random.default_rng(seed)
    v = clustered(rng, n_centres, per_centre, dim)
    if rng.random() < 0.5:  # and pairs right at the threshold
        v = np.vstack([v, pairs_at(np.array([threshold, np.nextafter(threshold, 0.0)]), dim, rng)])
    v = v.astype(np.float32) if as_float32 else v
    assert screened(v, threshold, tile_rows=tiles[0], tile_cols=tiles[1]) == exact(v, threshold)


def test_small_inputs_and_bad_threshold() -> None:
    empty = screening.screened_threshold_edges(np.zeros((1, 8)), 0.82)
    assert empty[0].size == 0 and empty[1].size == 0 and empty[0].dtype == np.int64
    with pytest.raises(ValueError, match="threshold"):
        screening.screened_threshold_edges(np.ones((3, 8)), float("nan"))


def test_missing_onnxruntime_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ImportError, match="pip install onnxruntime"):
        screening.screened_threshold_edges(np.eye(4, 8), 0.82)


def test_an_inexact_int8_kernel_is_refused() -> None:
    """A kernel that saturates u8×s8 pair sums at int16 (older CPUs) would break the bound: refused."""

    class Saturating:
        def product(self, a_u8: np.ndarray, b_t: np.ndarray) -> np.ndarray:
            u, b = a_u8.astype(np.int64), b_t.astype(np.int64)  # vpmaddubsw: u8 × s8, pairs summed into int16
            pairs = np.clip(u[:, 0::2, None] * b[0::2] + u[:, 1::2, None] * b[1::2], -(2**15), 2**15 - 1)
            return (pairs.sum(axis=1) - 128 * b.sum(axis=0)).astype(np.int32)  # then the zero point's share

    with pytest.raises(RuntimeError, match="not exact"):
        screening.check_exact_integer_product(Saturating(), 9, 11, 16)  # type: ignore[arg-type]


def test_rows_subset_equals_the_exact_incremental_edges() -> None:
    vectors = clustered(np.random.default_rng(11), 30, 40, 64)
    rows = np.random.default_rng(2).choice(len(vectors), 170, replace=False)
    exact_rows = clustering.threshold_edges(vectors, 0.82, rows=rows)
    got = screening.screened_threshold_edges(vectors, 0.82, tile_rows=64, tile_cols=256, rows=rows)
    assert edge_set(*got) == edge_set(*exact_rows) and len(got[0]) == len(exact_rows[0]) > 100
    assert np.all(got[0] < got[1])
    assert screening.screened_threshold_edges(vectors, 0.82, rows=np.zeros(0, dtype=np.int64))[0].size == 0
    one = np.array([int(rows[0])])  # a night with one new memory: a one-row strip
    got_one = screening.screened_threshold_edges(vectors, 0.82, tile_rows=64, tile_cols=256, rows=one)
    assert edge_set(*got_one) == edge_set(*clustering.threshold_edges(vectors, 0.82, rows=one))
