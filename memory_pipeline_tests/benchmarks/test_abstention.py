"""The abstention benchmark's word-level reading: which question words no memory holds, and how near the hits are."""


def test_unseen_words_keep_the_questions_spelling() -> None:
    from benchmarks.abstention import unseen_words

    held = {"maya", "swim"}
    assert unseen_words("What is Maya's shoe size when swimming?", held.__contains__) == ["shoe", "size"]


def test_nearest_is_the_least_covered_unseen_words_best_cosine() -> None:
    import numpy as np

    from benchmarks.abstention import nearest

    unseen = np.array([[1.0, 0.0], [0.0, 1.0]])
    near = np.array([[0.6, 0.8], [1.0, 0.0]])
    assert nearest(unseen, near) == 0.8  # the first word has 1.0, the second at best 0.8
    assert nearest(unseen[:0], near) == float("inf")  # no unseen word: nothing to cover
    assert nearest(unseen, near[:0]) == float("-inf")  # nothing to be near


def test_margin_is_the_best_hits_lead_over_the_next() -> None:
    from pytest import approx

    from benchmarks.abstention import margin

    assert margin([0.10, 0.45, 0.30]) == approx(0.15)  # order of search, not of `specific`
    assert margin([0.25]) == approx(0.25)  # one hit: against 0
    assert margin([]) == float("-inf")  # no hit is never answered


def test_agree_asks_whether_the_best_lexical_hit_is_among_the_best_by_cosine() -> None:
    from benchmarks.abstention import agree

    parts = [(0.0, 0.9), (0.7, 0.5), (0.2, 0.8)]  # (BM25 part, cosine) in search's order
    # the best BM25 hit (the second) is third by cosine
    assert [agree(parts, n) for n in (1, 2, 3)] == [False, False, True]
    assert agree([(0.3, 0.2), (0.3, 0.9)], 1) is False  # a BM25 tie goes to the first in search's order
    assert agree([(0.0, 0.9), (0.0, 0.8)], 10) is False  # no hit holds a query word: nothing to agree
    assert agree([], 10) is False
