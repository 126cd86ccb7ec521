"""The retention scores on hand-made cases: a fact must survive in the text; pointing at it is not enough."""

from datetime import datetime

import numpy as np
import pytest

from memory_pipeline.evaluation.locomo import (
    MemorySet,
    Question,
    answer_support,
    answer_terms,
    evidence_hit,
    mean_score,
    normalised_words,
    required_terms,
    score_questions,
    top_k,
)

FACT = "Tomas: I adopted a beagle named Biscuit last Saturday."
FILLER = "Hey Ruth! Good to see you too!"


def test_normalisation_is_symmetric_and_light() -> None:
    assert normalised_words("Two dogs, Aug 15th") == ["2", "dog", "august", "15"]
    assert normalised_words("Ruth's beagles") == ["ruth", "beagle"]
    assert normalised_words("on 2024-03-02 at noon") == ["on", "2", "march", "2024", "at", "noon"]
    assert answer_terms("Likely yes, the Lisbon half marathon") == {"lisbon", "half", "marathon"}
    assert answer_terms("7 May 2023") == {"7", "may", "2023"}  # "may" is a month here, not a stop word
    assert answer_terms("Yes") == frozenset()


@pytest.mark.parametrize(("n", "needed"), [(1, 1), (2, 2), (3, 2), (4, 3), (6, 4)])
def test_required_terms(n: int, needed: int) -> None:
    assert required_terms(n) == needed


def test_support_needs_the_words_in_the_text() -> None:
    assert answer_support("a beagle named Biscuit", [FILLER, FACT]) is True
    assert answer_support("a beagle named Biscuit", [FILLER]) is False
    assert answer_support("Lisbon half marathon", ["I am training for the half marathon"]) is True  # 2 of 3
    assert answer_support("Lisbon half marathon", ["I am training for a marathon"]) is False  # 1 of 3
    assert answer_support("forty dollars", ["I sold my first vase for 40 dollars."]) is True
    assert answer_support("Yes", [FACT]) is None  # nothing to check: not scored


def test_evidence_hit_direct_via_lineage_and_miss() -> None:
    lineage = {"mem-s": ["c:D1:1", "c:D1:2"]}
    assert evidence_hit(["c:D1:2"], ["c:D2:1", "c:D1:2"], lineage) is True
    assert evidence_hit(["c:D1:2"], ["c:D2:1", "mem-s"], lineage) is True
    assert evidence_hit(["c:D1:2"], ["c:D2:1"], lineage) is False
    assert evidence_hit([], ["c:D1:2"], lineage) is None


def test_top_k_orders_by_cosine() -> None:
    memories = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
    queries = np.array([[0.0, 2.0], [1.0, 0.1]], dtype=np.float32)
    assert top_k(queries, memories, 2).tolist() == [[2, 1], [0, 1]]
    assert top_k(queries, memories, 10).shape == (2, 3)


def _summary_store(summary_text: str) -> MemorySet:
    """After consolidation: the evidence turn is archived; one active summary lists it in its lineage."""
    ids = ["mem-summary", "c:D9:1"]
    texts = [summary_text, "Ruth: I started pottery classes."]
    vectors = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    created = [datetime(2024, 7, 16), datetime(2024, 3, 3)]
    return MemorySet(ids, texts, vectors, {"mem-summary": ["c:D1:1", "c:D1:2"]}, created)


QUESTION = Question(0, "What is the name of Tomas's dog?", "Biscuit", 1, ("c:D1:2",))


def test_a_summary_that_keeps_the_fact_scores() -> None:
    store = _summary_store(f"{FILLER} {FACT} [3 memories, 2024-03-03 to 2024-07-14]")
    [row] = score_questions([QUESTION], np.array([[1.0, 0.1]]), store, (1,))
    assert row["recall@1"] is True
    assert row["support@1"] is True


def test_a_summary_that_only_points_at_the_fact_does_not() -> None:
    store = _summary_store(f"{FILLER} [3 memories, 2024-03-03 to 2024-07-14]")
    [row] = score_questions([QUESTION], np.array([[1.0, 0.1]]), store, (1,))
    assert row["recall@1"] is True  # lineage holds the evidence turn …
    assert row["support@1"] is False  # … but the answer is gone from the text


def test_the_memory_date_is_read_with_the_text() -> None:
    store = _summary_store("Tomas: I adopted a beagle last Saturday.")
    question = Question(1, "When did Tomas adopt his dog?", "The Saturday before 16 July 2024", 2, ("c:D1:2",))
    [row] = score_questions([question], np.array([[1.0, 0.0]]), store, (1,))
    assert row["support@1"] is True  # "[16 july 2024]" comes from created_at


def test_mean_score_skips_unscorable_questions() -> None:
    rows = [
        {"category": 1, "support@10": True},
        {"category": 2, "support@10": False},
        {"category": 3, "support@10": None},
        {"category": 5, "support@10": True},
    ]
    assert mean_score(rows, "support@10", (1, 2, 3, 4)) == (0.5, 2)
    assert mean_score(rows, "support@10", (5,)) == (1.0, 1)
    assert mean_score(rows, "support@10", (4,)) == (None, 0)
