"""Reading far down search's order for what clears a relevance (the context compiler's item floor): search keeps
only those among its candidates and bounds what it did not score, so the reader widens only while a wider
search could find more — and finds what a search of every document would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from memory_pipeline.context.search_adapter import _down_to
from memory_pipeline.search import build_index, search
from memory_pipeline.search.engine import clear_cache
from memory_pipeline.search.index import load_index
from memory_pipeline.search.tokens import tokenize
from memory_pipeline_tests.search.test_segments import MODEL, NOW, WORDS, add_rows, encode, texts

QUERY = "ferry cabin deck harbour"


def _workspace(tmp_path: Path, rows: int = 600) -> Path:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(rows // 2, seed=3))
    build_index(home, encode, MODEL, full=True)
    add_rows(home, rows // 2, texts(rows - rows // 2, seed=4))
    build_index(home, encode, MODEL)  # a second segment: the bound holds across segments
    clear_cache()
    return home


def test_what_the_candidates_leave_out_scores_no_higher_than_they_say(tmp_path: Path) -> None:
    home = _workspace(tmp_path)
    idx = load_index(home)
    assert len(idx.segments) >= 2
    tokens = tokenize([QUERY])[0]
    vectors = [v / np.linalg.norm(v) for v in encode([QUERY, "cabin"])]
    c = 50
    keys, _bm, _cos, _idf, (bm_out, cos_out) = idx.candidates(tokens, vectors, c)
    taken = set(keys)
    _, scores = idx.bm25(tokens)
    every = [(s, r) for s, seg in enumerate(idx.segments) for r in range(seg.rows)]
    bm_all = np.array([scores.of(s, np.array([r]))[0] for s, r in every])
    cos_all = np.array([[float(idx.segments[s].cosine_of(np.array([r]), v)[0]) for v in vectors] for s, r in every])
    left = [i for i, key in enumerate(every) if key not in taken]
    assert left, "the test needs rows the candidates leave out"
    assert bm_all[left].max() <= bm_out + 1e-6
    assert (cos_all[left].max(axis=0) <= cos_out + 1e-6).all()
    # and the bound is the c-th best of each signal, not a number that is merely large
    assert np.isclose(bm_out, np.sort(bm_all)[-c], rtol=1e-5)
    assert np.allclose(cos_out, np.sort(cos_all, axis=0)[-c], rtol=1e-5)


def _finder(home: Path, calls: list[int]) -> Any:
    def find(query: str, k: int, at: float | None = None, least: float = 0.0) -> Any:
        calls.append(k)
        return search(query, k, home=home, embedder=(encode, MODEL), floor=at, now=NOW, least=least)

    return find


def test_reading_down_to_a_relevance_finds_what_a_search_of_everything_would(tmp_path: Path) -> None:
    home = _workspace(tmp_path)
    everything = search(QUERY, 600, home=home, embedder=(encode, MODEL), floor=0.0, now=NOW)
    assert everything.outside == 0.0  # every document scored
    top = max(h.parts["relevance"] for h in everything)
    for share, k in ((0.5, 10), (0.7, 40), (0.9, 40)):
        least = share * top
        want = [h.id for h in everything if h.parts["relevance"] >= least][:k]
        calls: list[int] = []
        got = _down_to(QUERY, k, least, _finder(home, calls), 600)
        assert [h.id for h in got] == want, (share, k)
        if len(want) < k:  # fewer qualify than asked: the widening stopped because nothing further could
            assert calls[-1] < 600, calls


def test_a_search_for_the_relevant_holds_only_hits_that_clear_it(tmp_path: Path) -> None:
    home = _workspace(tmp_path)
    plain = search(QUERY, 40, home=home, embedder=(encode, MODEL), floor=0.0, now=NOW)
    least = float(np.median([h.parts["relevance"] for h in plain]))
    found = search(QUERY, 40, home=home, embedder=(encode, MODEL), floor=0.0, now=NOW, least=least)
    assert found and all(h.parts["relevance"] >= least for h in found)
    assert [h.id for h in found] == [h.id for h in plain if h.parts["relevance"] >= least][: len(found)]
    assert 0.0 < found.outside < float("inf")


def test_a_value_replaced_among_the_first_k_that_clear_it_is_kept_marked_after_the_current(tmp_path: Path) -> None:
    """A question about a past period reads the older value of a fact: reading down to a relevance must keep it
    when it is among the first k that clear it — marked and after what holds now — not cut it for being moved
    last among every hit that clears it."""
    home = tmp_path / "ws"
    rng = np.random.default_rng(7)
    fillers = [" ".join(rng.choice(WORDS, 6)) + " deploy window" for _ in range(40)]
    add_rows(home, 0, fillers + ["The deploy window is at 14:00.", "The deploy window is at 16:00."])
    build_index(home, encode, MODEL, full=True)
    clear_cache()
    old, new = "m-00040", "m-00041"
    plain = search("deploy window", 10, home=home, embedder=(encode, MODEL), floor=0.0, now=NOW)
    by_relevance = sorted(plain, key=lambda h: -h.parts["relevance"])
    assert old in [h.id for h in by_relevance[:10]], "the test needs the older value among the most relevant"
    least = min(h.parts["relevance"] for h in plain) / 2
    got = search("deploy window", 10, home=home, embedder=(encode, MODEL), floor=0.0, now=NOW, least=least)
    ids = [h.id for h in got]
    assert len(got) == 10 and old in ids and new in ids
    assert ids.index(new) < ids.index(old) and got[ids.index(old)].superseded_by == new
