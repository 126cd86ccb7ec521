"""QueryBM25 leaves the commonest terms out of the dense sums: its scores and its best rows must be the plain sum's."""

import numpy as np
import pytest

from memory_pipeline.search.bm25 import QueryBM25


def plain(q: QueryBM25) -> list[np.ndarray]:
    """Every term scattered over every row: what search summed before."""
    out = [np.zeros(n, np.float32) for n in q.rows]
    for t, found in q.postings.items():
        for s, docs, tf in found:
            f = tf.astype(np.float32)
            out[s][docs] += np.float32(q.idf[t]) * f / (f + q.norm(s)[docs])
    for s, alive in enumerate(q.alive):
        if alive is not None:
            out[s][~alive] = 0.0
    return out


def make(seed: int, rows: list[int], shares: list[float], dead: float) -> QueryBM25:
    rng = np.random.default_rng(seed)
    norms = [rng.uniform(0.5, 3.0, n).astype(np.float32) for n in rows]
    alive = [rng.random(n) >= dead if dead else None for n in rows]
    postings, idf = {}, {}
    live = sum(int(a.sum()) if a is not None else n for a, n in zip(alive, rows, strict=True))
    for i, share in enumerate(shares):
        found, df = [], 0
        for s, n in enumerate(rows):
            docs = np.flatnonzero(rng.random(n) < share).astype(np.int32)
            if len(docs):
                found.append((s, docs, rng.integers(1, 4, len(docs)).astype(np.uint16)))
                df += len(docs) if alive[s] is None else int(alive[s][docs].sum())  # live documents, as the index
        postings[f"t{i}"], idf[f"t{i}"] = found, float(np.log(1 + (live - df + 0.5) / (df + 0.5)))
    return QueryBM25(idf, postings, rows, alive, lambda s: norms[s])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("shares", "dead"), [([0.001, 0.004, 0.6, 0.85], 0.0),  # rare words beside common ones
                                              ([0.9, 0.7], 0.1),  # only common words: nothing can be proven
                                              ([0.0005, 0.3], 0.2)])  # fmt: skip
def test_best_rows_and_scores_are_the_plain_sums(seed: int, shares: list[float], dead: float) -> None:
    q = make(seed, [20_000, 3_000, 500], shares, dead)
    dense = plain(q)
    for c in (10, 200, 2_000):
        got = q.best(c)
        flat = np.concatenate(dense)
        want = np.sort(flat[flat > 0])[::-1][:c]
        mine = np.sort([dense[s][r] for s, r in got])[::-1]
        np.testing.assert_allclose(mine, want, rtol=1e-5)  # the same best scores (ties may swap rows)
        for s, r in got:
            assert q.alive[s] is None or q.alive[s][r]
    for s, n in enumerate(q.rows):
        rows = np.random.default_rng(seed).integers(0, n, 300)
        np.testing.assert_allclose(q.of(s, rows), dense[s][rows], rtol=1e-5, atol=1e-7)


def test_the_common_words_stay_out_of_the_dense_sums_when_the_rare_ones_decide() -> None:
    q = make(1, [50_000], [0.001, 0.002, 0.8], 0.0)
    assert q._looked_up == ["t2"]
    q.best(20)
    assert q._looked_up == ["t2"]  # proven without scattering the word in 80 % of the rows
