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
