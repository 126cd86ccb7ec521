"""An abstraction says only what its sources said: one table of cases the verifier must refuse or accept, and the
offline distiller on distinct events (kept apart, each with its own values) and on reports of one thing (an
honest range)."""

from __future__ import annotations

import pytest

from memory_pipeline.abstraction.distilling import judged
from memory_pipeline.distillation.distill import Distillation, Member, OfflineDistiller
from memory_pipeline.similarity.clustering import MemoryCluster
from memory_pipeline.statements.judgement import same_statement
from memory_pipeline.verification.faithfulness import check

STRATEGIES = [
    "Backtested a carry trade on the basis on BTC 15m candles: Sharpe 0.94, max drawdown 47%.",
    "Backtested a momentum strategy on ETH 1h candles: Sharpe 0.17, max drawdown 21%.",
    "Backtested mean reversion on SOL 4h candles: Sharpe 1.87, max drawdown 73%.",
]
PYTEST = ["Pytest took 16 minutes on CI because each module loads the embedding model.",
          "Pytest took 48 minutes on CI because each module loads the embedding model.",
          "Pytest took 31 minutes on CI because each module loads the embedding model again."]  # fmt: skip
BACKUP = ["The nightly brain.db backup collided with cortex_dedupe at 03:00 and dedupe failed on the lock.",
          "Moved the brain.db backup to 02:30 so it no longer collides with cortex_dedupe."]  # fmt: skip
DONCHIAN = ["Backtested the 55-day Donchian breakout on LINK weekly candles: Sharpe -0.09.",
            "Backtested the 55-day Donchian breakout on OP daily candles: Sharpe 1.22."]  # fmt: skip

# (name, sources, abstraction, refused?)
CASES = [
    ("range across events", STRATEGIES, "Backtested a carry trade on the basis on BTC 15m candles: Sharpe 0.17–1.87, "
     "max drawdown 21–73%.", True),
    ("one event, its own values", STRATEGIES, STRATEGIES[0], False),
    ("honest range over one statement", PYTEST, "Pytest took 16–48 minutes on CI because each module loads the "
     "embedding model.", False),
    ("sign lost", DONCHIAN, "Backtested the 55-day Donchian breakout on OP daily candles: Sharpe 0.09–1.22.", True),
    ("clock times torn apart", BACKUP, "The nightly brain.db backup collided with cortex_dedupe at 02–03:00–30.", True),
    ("clock time kept whole", BACKUP, "Moved the brain.db backup to 02:30 so it no longer collides with cortex_dedupe.",
     False),
    ("value no source states", PYTEST, "Pytest took 60 minutes on CI.", True),
    ("bare list of other events' values", STRATEGIES, "Backtests on candles. Also: 0.94, 0.17, 1.87.", True),
    ("entity swapped with its values", STRATEGIES, "Backtested mean reversion on SOL 4h candles: Sharpe 0.94, max "
     "drawdown 47%.", True),
    ("the night's own frame is no claim", PYTEST, f"{PYTEST[0]} [3 memories, 2026-10-01 to 2026-10-09]",
     False),
    ("the frame summaries before 2026-12 carry is no claim either", PYTEST,
     f"{PYTEST[0]} [Pattern seen 3 times, 2026-10-01 to 2026-10-09.]", False),
]  # fmt: skip


@pytest.mark.parametrize(("name", "sources", "abstraction", "refused"), CASES, ids=[c[0] for c in CASES])
def test_the_verifier(name: str, sources: list[str], abstraction: str, refused: bool) -> None:
    assert bool(check(sources, abstraction)) is refused, check(sources, abstraction)


def test_same_statement_tells_one_thing_from_two() -> None:
    assert same_statement(PYTEST[0], PYTEST[2])  # one measurement, reported again in a few more words
    assert not same_statement(STRATEGIES[0], STRATEGIES[1])  # the same shape about two strategies
    assert not same_statement("Worker w17 times out after 12 seconds.", "Worker w1960 times out after 59 seconds.")
    assert not same_statement("Risk per trade is 1%.", "Risk per trade is not 1%.")


def _distil(texts: list[str]) -> str:
    members = [Member(f"m{i}", t, 1.0) for i, t in enumerate(texts)]
    return OfflineDistiller().distill(members, "trading", ("2026-10-01", "2026-10-09")).abstraction


def test_the_offline_distiller_keeps_distinct_events_apart_and_folds_one_statement() -> None:
    apart = _distil(STRATEGIES)
    assert "0.17–1.87" not in apart and "0.17–0.94" not in apart and not check(STRATEGIES, apart), apart
    folded = _distil(PYTEST)
    assert "16–48 minutes" in folded and not check(PYTEST, folded), folded


def test_the_judge_refuses_an_unfaithful_reply_and_the_cluster_stays() -> None:
    """Whatever wrote it (a Claude reply here): a range built from other strategies is refused with the reason."""
    cluster = MemoryCluster("c1", "fp1", ["m0", "m1", "m2"], 3, 0.8, "trading", ["trading"], 120, 1.0,
                            "2026-10-01", "2026-10-09")  # fmt: skip
    reply = Distillation("Backtests on candles: Sharpe 0.17–1.87, max drawdown 21–73%.", 3.0, False, 120, 20, 1.0,
                         "anthropic:claude-haiku-4-5")  # fmt: skip
    outcome = judged(cluster, reply, 1.5, 2000, STRATEGIES)
    assert outcome.status == "skipped" and outcome.distillation is None
    assert str(outcome.skip_reason).startswith("not faithful to its sources: puts together values")


def test_the_run_report_counts_the_judges_refusals_by_kind() -> None:
    from memory_pipeline.abstraction.reporting import skip_reasons

    cluster = MemoryCluster("c1", "fp1", ["m0", "m1", "m2"], 3, 0.8, "trading", ["trading"], 120, 1.0,
                            "2026-10-01", "2026-10-09")  # fmt: skip
    made = [("Backtests on candles: Sharpe 0.17–1.87, max drawdown 21–73%.", STRATEGIES),
            ("Backtests on candles: Sharpe 0.94–1.87.", STRATEGIES),
            ("Pytest took 16 minutes on CI.", PYTEST)]  # fmt: skip
    outcomes = [judged(cluster, Distillation(text, 3.0, False, 120, 20, 1.0, "offline-extractive"), 1.5, 2000, src)
                for text, src in made]  # fmt: skip
    assert skip_reasons(outcomes) == {"not faithful to its sources": 2, "facts not preserved": 1}
