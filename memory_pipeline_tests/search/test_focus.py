"""The focus-word gate: a question is answered only when a top hit holds one of its rare words (or is rescued)."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_pipeline.search import search
from memory_pipeline.search.focus import focus_open, focus_words
from memory_pipeline.search.scoring import load_ranking
from memory_pipeline_tests.search.conftest import minilm

NOW = datetime(2026, 11, 1, tzinfo=UTC)
# "birthday" held by no memory, "sarah" by many, "parti" by one in a hundred
SHARES = {"sarah": 0.30, "birthday": 0.0, "parti": 0.01}


@pytest.mark.parametrize(
    ("gate", "expected"),
    [("unseen", {"birthday"}), ("focus", {"birthday", "parti"}), ("cover", {"birthday", "parti"}),
     ("rarest", {"birthday"})],
)
def test_focus_words_by_gate(gate: str, expected: set[str]) -> None:
    assert focus_words(SHARES, gate, 0.05) == expected


@pytest.mark.parametrize(
    ("gate", "hits", "rescue", "opens"),
    [
        ("focus", [(0.05, frozenset({"sarah", "call"}))], None, False),  # only the common word: closed
        ("focus", [(0.05, frozenset({"sarah", "parti"}))], None, True),  # a rare word of the question
        ("rarest", [(0.05, frozenset({"sarah", "parti"}))], None, False),  # not the rarest one
        ("rarest", [(0.05, frozenset({"sarah", "parti"}))], 0.05, True),  # rescued by its gate value
        ("rarest", [(0.04, frozenset({"sarah", "parti"}))], 0.05, False),  # below the rescue bar
        ("unseen", [(0.05, frozenset({"sarah", "parti"}))], None, False),  # an unseen word: rescue only
        ("unseen", [(0.30, frozenset({"sarah"}))], 0.20, True),
        ("focus", [], None, False),  # no hit never opens
        # cover: one hit must hold every focus word; two hits holding one each do not open it
        ("cover", [(0.05, frozenset({"sarah", "parti"}))], None, False),
        ("cover", [(0.05, frozenset({"parti"})), (0.05, frozenset({"birthday"}))], None, False),
        ("cover", [(0.05, frozenset({"call"})), (0.05, frozenset({"birthday", "parti"}))], None, True),
        ("cover", [(0.30, frozenset({"sarah"}))], 0.20, True),  # rescued
    ],
)
def test_focus_open_on_a_table(gate: str, hits: list, rescue: float | None, opens: bool) -> None:
    assert focus_open(SHARES, hits, gate, 0.05, rescue) is opens


def test_a_question_with_no_rare_word_passes() -> None:
    assert focus_open({"sarah": 0.3, "call": 0.2}, [(0.0, frozenset({"weather"}))], "focus", 0.05, None)


def test_search_abstains_when_no_top_hit_holds_the_questions_focus(workspace: Path) -> None:
    # "dentist" is held by no fixture memory; the cat's food memory is close in meaning and shares "food"
    ranking = load_ranking().with_(floor=0.0, background_gate=1e-6)
    query = "what food does the dentist recommend"
    plain = search(query, k=10, home=workspace, embedder=minilm(), now=NOW, ranking=ranking)
    assert plain  # without the gate the question gets hits
    for gate in ("unseen", "rarest"):
        gated = ranking.with_(focus_gate=gate)
        assert not search(query, k=10, home=workspace, embedder=minilm(), now=NOW, ranking=gated), gate
    # rescued: a bar every top hit's gate value reaches lets the same hits through, in the same order
    low = ranking.with_(focus_gate="rarest", focus_rescue=-1.0)
    kept = search(query, k=10, home=workspace, embedder=minilm(), now=NOW, ranking=low)
    assert [h.id for h in kept] == [h.id for h in plain]
    # a question whose rare word a hit holds is answered as before
    known = "price alert on TIA"
    before, after = (search(known, k=10, home=workspace, embedder=minilm(), now=NOW, ranking=r)
                     for r in (ranking, ranking.with_(focus_gate="rarest")))  # fmt: skip
    assert [h.id for h in after] == [h.id for h in before] and before


def test_question_words_are_not_content_words() -> None:
    from memory_pipeline.search.focus import content_words

    assert content_words("What's the name of Alex's sister?") == {"alex", "sister"}


def test_the_function_word_list_is_scikit_learns() -> None:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from memory_pipeline.search.focus import FUNCTION_WORDS

    assert FUNCTION_WORDS == ENGLISH_STOP_WORDS

