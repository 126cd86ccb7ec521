"""An abstraction says every distinct statement of its sources: the verifier's "says" on a table of paraphrases
and look-alikes, coverage of real clusters (the lesson dropped, the lesson kept), the offline distiller keeping
what its sources said, and the night's grade over its distillations."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from memory_pipeline.abstraction import grade
from memory_pipeline.abstraction.distilling import judged
from memory_pipeline.distillation.distill import Distillation, Member, OfflineDistiller
from memory_pipeline.embedding.embedder import Embedder
from memory_pipeline.similarity.clustering import MemoryCluster
from memory_pipeline.statements.judgement import Relation, judge, same_statement, says
from memory_pipeline.verification.faithfulness import coverage, sentences, statement_like

APOLOGIES = [
    "Over-apologising again: too many apologies in one reply. Apologise once, then fix the mistake.",
    "Over-apologised again: far too many apologies in my reply. Apologise once, then fix the mistake.",
    "Over-apologising once more, too many apologies in one reply. Apologise once, then fix the mistake.",
]
DROPPED = "Over-apologising again: too many apologies in one reply. [3 memories, 2026-10-01 to 2026-10-09]"
KEPT = ("Over-apologising again: too many apologies in one reply. Lesson: apologise once, then fix the mistake. "
        "[3 memories, 2026-10-01 to 2026-10-09]")  # fmt: skip

# (statement, sentence, says?) — words alone, no model
WORDS = [
    ("Apologise once, then fix the mistake.", "Lesson: apologise once, then fix the mistake.", True),
    ("Restart the ingest worker when its queue stalls.", "Fix for a stalled queue: restart the ingest worker.", True),
    ("The staging database runs on port 5433.", "The production database runs on port 5433.", False),
    ("Never risk more than 2% of the account per trade.", "Never risk more than 2% of the account per day.", False),
    ("Deploys are frozen on Fridays.", "Deploys are allowed on Fridays.", False),
    ("The Leeds office opens at 08:30.", "The York office opens at 08:30.", False),
    ("The API gateway times out after 30 seconds.", "The API gateway does not time out after 30 seconds.", False),
    ("Take a backup before any schema migration on db-01.",
     "Ran a schema migration on db-01 without taking a backup first.", False),
]


@pytest.mark.parametrize(("statement", "sentence", "expected"), WORDS, ids=[w[0][:30] for w in WORDS])
def test_says_by_words(statement: str, sentence: str, expected: bool) -> None:
    assert says(sentence, statement) is expected


def test_a_swap_in_place_is_a_look_alike_and_a_rewording_is_not() -> None:
    weekly = "The weekly report goes out on Monday mornings."
    monthly = "The monthly report goes out on Monday mornings."
    assert judge(weekly, monthly).relation is Relation.DIFFERENT
    assert judge("CME gaps usually fill early in the week.", "Most CME gaps fill early in the week.").same
    # and the same statement about another thing is not one statement, whose values could make a range
    assert not same_statement("The staging database runs on port 5433.", "The production database runs on port 5434.")


def test_the_embedder_counts_paraphrases_the_words_miss() -> None:
    enc = Embedder().encode
    statement, sentence = ("Hold non-urgent messages to Matthew until his morning.",
                           "Wait for Matthew's morning before sending him anything non-urgent.")  # fmt: skip
    v = enc([statement, sentence])
    assert not says(sentence, statement)
    assert says(sentence, statement, float(v[0] @ v[1]))
    look = ("Keep risk per trade at 1% of equity.", "Keep risk per week at 1% of equity.")
    w = enc(list(look))
    assert float(w[0] @ w[1]) > 0.75 and not says(look[1], look[0], float(w[0] @ w[1]))  # near, and still apart


def test_coverage_sees_the_lesson_dropped() -> None:
    enc = Embedder().encode
    dropped, kept = coverage(APOLOGIES, DROPPED, enc), coverage(APOLOGIES, KEPT, enc)
    assert "Apologise once, then fix the mistake." in dropped.missed
    assert kept.missed == () and kept.share == 1.0
    # the three reports of over-apologising and the three lessons are two statements, not six
    assert kept.total == 2


def _cluster(n: int) -> MemoryCluster:
    return MemoryCluster("c1", "fp1", [f"m{i}" for i in range(n)], n, 0.8, "lesson", ["lesson"], 300, 1.0,
                         "2026-10-01", "2026-10-09")  # fmt: skip


def test_only_sentences_the_words_leave_open_are_embedded_and_the_verdict_is_the_same() -> None:
    """Embedding is most of what judging costs: a sentence is embedded only where the words cannot decide, and
    coverage comes out as if every cosine had been computed."""
    import numpy as np

    enc = Embedder().encode
    asked: list[str] = []

    def counting(texts: Sequence[str]) -> np.ndarray:
        asked.extend(texts)
        return enc(texts)

    sources = [*APOLOGIES, "Hold non-urgent messages to Matthew until his morning.",
               "The staging database runs on port 5433."]  # fmt: skip
    abstraction = (KEPT + " Wait for Matthew's morning before sending him anything non-urgent.")
    got = coverage(sources, abstraction, counting)
    # every sentence, eagerly: the verdicts of the same rule with all cosines known
    texts = list(dict.fromkeys([s for t in sources for s in sentences(t)] + sentences(abstraction)))
    v = dict(zip(texts, enc(texts), strict=True))
    families: list[str] = []
    for s in (s for t in sources for s in sentences(t) if statement_like(s)):
        if not any(says(s, f, float(v[s] @ v[f])) and says(f, s, float(v[f] @ v[s])) for f in families):
            families.append(s)
    said = [f for f in families if any(says(w, f, float(v[w] @ v[f])) for w in sentences(abstraction))]
    assert list(got.said) == said and got.total == len(families)
    assert "Hold non-urgent messages to Matthew until his morning." in got.said  # the cosine was needed for it
    assert asked and len(set(asked)) < len(texts)  # and not every sentence was embedded
    assert "The staging database runs on port 5433." not in asked  # no other sentence shares its words


def test_the_judge_refuses_a_reply_that_drops_the_lesson_and_grades_both() -> None:
    reply = Distillation(DROPPED, 3.0, False, 300, 20, 1.0, "anthropic:claude-haiku-4-5")
    enc = Embedder().encode
    refused = judged(_cluster(3), reply, 1.5, 2000, APOLOGIES, enc)
    assert refused.distillation is None and str(refused.skip_reason).startswith("statements dropped")
    assert refused.grade is not None and not refused.grade.accepted and refused.grade.coverage == 0.5
    ok = judged(_cluster(3), Distillation(KEPT, 3.0, False, 300, 30, 1.0, "offline-extractive"), 1.5, 2000,
                APOLOGIES, enc)  # fmt: skip
    assert ok.distillation is not None and ok.grade is not None and ok.grade.accepted and ok.grade.coverage == 1.0


def test_the_offline_distiller_keeps_every_lesson_of_its_sources() -> None:
    sources = [
        "Lost track of a multi-session task and redid a step because I left no TODO.",
        "Write a TODO memory with the next steps before ending a session.",
        "Lost track of a multi-session task again; no TODO was left. Always leave a TODO at the end of a session.",
        "Redid a finished step of a long task because nothing recorded where I stopped.",
    ] * 2
    members = [Member(f"m{i}", text, 1.0) for i, text in enumerate(sources)]
    d = OfflineDistiller(encode=Embedder().encode).distill(members, "lesson", ("2026-10-01", "2026-10-20"))
    c = coverage(sources, d.abstraction, Embedder().encode)
    assert c.missed == (), d.abstraction
    assert "TODO memory with the next steps" in d.abstraction


def _night(*grades: tuple[int, int, bool]) -> grade.NightGrade:
    return grade.night([grade.SummaryGrade(f"c{i}", s, t, 0, a) for i, (s, t, a) in enumerate(grades)], 0.9)


def test_the_nights_grade_pools_what_it_keeps_and_stops_a_runaway_night() -> None:
    good = _night((10, 10, True), (9, 10, True), (1, 4, False))
    assert good.passed and good.coverage == 0.95 and good.refused == 1
    low = _night((8, 10, True), (8, 10, True))
    assert not low.passed and "BLOCKED" in low.line()
    runaway = _night(*[(10, 10, True)] * 2, *[(1, 10, False)] * 9)
    assert runaway.coverage == 1.0 and runaway.runaway and not runaway.passed
    assert "most distillations refused (9 of 11)" in runaway.line()
    assert _night(*[(10, 10, True)] * 2, *[(1, 10, False)] * 3).passed  # 3 of 5 refused: not a runaway
    nothing_kept = _night(*[(1, 10, False)] * 5)  # archives nothing: nothing to stop, and the line says why
    assert nothing_kept.passed and not nothing_kept.runaway
    assert "most distillations refused (5 of 5)" in nothing_kept.line()
    off = grade.night([grade.SummaryGrade("c0", 0, 10, 2, True)], 0.0)
    assert off.passed and "off" in off.line()
    assert grade.from_dict(good.to_dict()).to_dict() == good.to_dict()


def test_a_night_whose_every_distillation_was_refused_passes_and_says_so() -> None:
    from memory_pipeline.abstraction.report import decide_verdict

    verdict, reason = decide_verdict(0, 0, tried=3, found=3, scanned=20, refused=3)
    assert verdict == "PASS" and "the verifier refused all 3" in str(reason)
    assert decide_verdict(0, 0, tried=3, found=3, scanned=20, refused=2)[0] == "FAIL"  # one failed otherwise
    assert decide_verdict(0, 1, tried=3, found=3, scanned=20, refused=3)[0] == "FAIL"  # errors


def test_a_statement_worded_twice_is_said_once_and_nothing_else_goes() -> None:
    from memory_pipeline.statements.judgement import Near
    from memory_pipeline.verification.faithfulness import said_once

    text = ("Reach Jonas on Telegram, not by email. Jonas replied on Telegram within minutes. "
            "Reach Jonas on Telegram, not by email. [4 memories, 2026-11-05 to 2026-11-14]")  # fmt: skip
    once, taken = said_once(text, Near(None))
    assert once == ("Reach Jonas on Telegram, not by email. Jonas replied on Telegram within minutes. "
                    "[4 memories, 2026-11-05 to 2026-11-14]")  # fmt: skip
    assert taken == ["Reach Jonas on Telegram, not by email."]
    assert said_once(once)[1] == []
