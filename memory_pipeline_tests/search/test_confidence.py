"""The combined abstention gate: its features, its three outcomes on a built workspace, and the weak-match line in
what `context` and the MCP search tool return."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_pipeline.search import confidence as conf
from memory_pipeline.search import search
from memory_pipeline.search.confidence import FEATURES, Model, Signal, agree, features, judge, load_model, weak_line
from memory_pipeline.search.scoring import load_ranking
from memory_pipeline_tests.search.conftest import minilm

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def _model(lo: float, hi: float) -> Model:
    """p = sigmoid(the top hit's cosine): a model whose bars alone decide the outcome in these tests."""
    coef = tuple(1.0 if f == "cosine" else 0.0 for f in FEATURES)
    n = len(FEATURES)
    return Model(coef, 0.0, (0.0,) * n, (1.0,) * n, lo, hi, True)


def test_features_read_margin_cover_unseen_and_agreement() -> None:
    hits = [Signal(0.30, 0.2, 0.50, 0.40, frozenset({"maya", "swim"}), "observation", 9.0),
            Signal(0.10, 0.6, 0.45, 0.35, frozenset({"maya"}), "summary", 1.0)]  # fmt: skip
    x = dict(zip(FEATURES, features({"maya": 0.01, "swim": 0.02, "shoe": 0.0}, hits), strict=True))
    assert x["margin"] == pytest.approx(0.20)
    assert x["cover"] == pytest.approx(2 / 3)  # one hit holds maya and swim, none holds "shoe"
    assert x["unseen_count"] == 1 and x["unseen_share"] == pytest.approx(1 / 3)
    assert x["agree"] == 1.0  # the top BM25 hit is second by cosine, within the 3 best
    assert x["summary_kind"] == 0.0 and x["n_hits"] == 2.0
    assert not agree([Signal(0.1, 0.0, 0.5, 0.3, frozenset())])  # no lexical ranking: no agreement


def test_three_outcomes_from_the_bars() -> None:
    hits = [Signal(0.2, 0.3, 0.5, 0.4, frozenset({"tia"}))]
    assert judge({"tia": 0.01}, hits, _model(0.0, 0.0))[0] == conf.CONFIDENT
    assert judge({"tia": 0.01}, hits, _model(0.0, 0.99))[0] == conf.WEAK
    assert judge({"tia": 0.01}, hits, _model(0.99, 0.99))[0] == conf.NONE
    assert judge({"tia": 0.01}, [], _model(0.0, 0.0))[0] == conf.NONE  # no hit is never an answer


def test_the_shipped_model_reads_the_gates_features() -> None:
    m = load_model()
    assert len(m.coef) == len(FEATURES) and 0.0 <= m.lo <= m.hi <= 1.0


def test_weak_line_is_one_short_marked_line() -> None:
    line = weak_line("Dana runs with the Parkside club\non Wednesdays " + "x" * 300)
    assert line.startswith("nothing stored matches this closely; nearest: Dana runs")
    assert "\n" not in line and len(line) < 200


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    def use(lo: float, hi: float) -> None:
        monkeypatch.setattr(conf, "load_model", lambda path=conf.MODEL_FILE: _model(lo, hi))

    return use


def test_search_gives_the_three_outcomes(workspace: Path, gated) -> None:  # noqa: ANN001
    ranking = load_ranking().with_(combined_gate=True, floor=0.0, background_gate=1e-6)  # several hits
    query = "did I set a price alert on TIA?"
    gated(0.0, 0.0)
    sure = search(query, k=5, home=workspace, embedder=minilm(), now=NOW, ranking=ranking)
    assert len(sure) > 1 and sure.match == "confident" and sure.confidence is not None
    gated(0.0, 0.999)
    weak = search(query, k=5, home=workspace, embedder=minilm(), now=NOW, ranking=ranking)
    assert weak.match == "weak" and [h.id for h in weak] == [sure[0].id]
    assert weak.notice.startswith("nothing stored matches this closely; nearest: ")
    gated(0.999, 0.999)
    none = search(query, k=5, home=workspace, embedder=minilm(), now=NOW, ranking=ranking)
    assert not none and none.match == "none"
    off = search(query, k=5, home=workspace, embedder=minilm(), now=NOW, ranking=ranking.with_(combined_gate=False))
    assert [h.id for h in off] == [h.id for h in sure]  # off: search as before


def test_context_and_mcp_show_a_weak_match_as_one_marked_line(workspace: Path, gated) -> None:  # noqa: ANN001
    from memory_pipeline.context.search_adapter import default_search
    from memory_pipeline.mcp.server import _search_work

    ranking = load_ranking().with_(combined_gate=True)
    gated(0.0, 0.999)
    items = default_search(workspace, minilm(), ranking=ranking)("did I set a price alert on TIA?", 8)
    assert len(items) == 1 and items[0].text.startswith("nothing stored matches this closely; nearest: ")
    hits = search("did I set a price alert on TIA?", k=5, home=workspace, embedder=minilm(), now=NOW,
                  ranking=ranking)  # fmt: skip
    out = _search_work(lambda: hits, workspace, False)
    assert out.match == "weak" and len(out.hits) == 1 and out.notice.startswith("nothing stored matches")
