"""The LLM layer's contract with the abstraction assets: non-attempt skips, the PARTIAL verdict for a cost
cap, reply truncation, and what a night costs at the seed's cluster counts."""

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memory_pipeline.distillation.distill import (
    ATOM_SYSTEM_PROMPT,
    SYSTEM_PROMPT,
    DistillationRejected,
    Member,
    OfflineDistiller,
)
from memory_pipeline.llm.anthropic_distiller import DistillRequest
from memory_pipeline.llm.pricing import PriceTable, estimate_night
from memory_pipeline.llm.runs import (
    DEFERRED_PREFIX,
    NON_ATTEMPT_PREFIXES,
    distill_all,
    extract_all,
    is_deferred,
    verdict_with_deferrals,
)
from memory_pipeline.resources import LLMResource
from memory_pipeline.store import MemoryStore
from memory_pipeline.store import repository as repo
from memory_pipeline.tokens import estimate_tokens
from memory_pipeline_tests.llm.fake_api import TEST_KEY, FakeAnthropicAPI

NOW = datetime(2026, 11, 1, 3, 30)


def test_deferred_and_llm_error_skips_are_not_attempts(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m.duckdb")
    store.migrate()
    logged = {
        "fp-deferred": ("skipped", f"{DEFERRED_PREFIX}cost cap $0.25 reached"),
        "fp-api": ("skipped", "LLM error: 529 overloaded_error: Overloaded (after 5 attempts)"),
        "fp-ttl": ("skipped", "fingerprint processed within the last 7 days"),
        "fp-ratio": ("skipped", "compression_ratio=1.2 below floor"),
        "fp-json": ("skipped", "invalid JSON: no object in 'Sorry'"),
        "fp-done": ("compressed", None),
    }
    with store.transaction() as con:
        for fp, (status, reason) in logged.items():
            repo.log_cluster(
                con,
                fingerprint=fp,
                cluster_id=fp,
                status=status,
                member_count=3,
                run_id="r1",
                now=NOW - timedelta(days=1),
                reason=reason,
            )
        # a deferral a week ago does not hide a real attempt yesterday
        repo.log_cluster(
            con,
            fingerprint="fp-ratio",
            cluster_id="fp-ratio",
            status="skipped",
            member_count=3,
            run_id="r0",
            now=NOW - timedelta(days=2),
            reason=f"{DEFERRED_PREFIX}cost cap $0.25 reached",
        )
    with store.connect() as con:
        recent = repo.recent_fingerprints(con, NOW - timedelta(days=7), NON_ATTEMPT_PREFIXES)
    assert recent == {"fp-ratio", "fp-json", "fp-done"}  # the model answered: those wait out the TTL
    assert is_deferred(f"{DEFERRED_PREFIX}cost cap $0.25 reached") and not is_deferred("LLM error: 500")
    assert len(NON_ATTEMPT_PREFIXES) == 3


@pytest.mark.parametrize(
    ("verdict", "reason", "deferred", "expected"),
    [
        ("PASS", None, 0, ("PASS", None)),
        ("PASS", None, 4, ("PARTIAL", "cost cap $0.25 reached: 4 cluster(s) left for the next night")),
        (
            "PARTIAL",
            "1 error(s) during the run",
            2,
            ("PARTIAL", "1 error(s) during the run; cost cap $0.25 reached: 2 cluster(s) left for the next night"),
        ),
        (
            "FAIL",
            "no cluster was compressed (no useful work done)",
            9,
            (
                "FAIL",
                "no cluster was compressed (no useful work done); cost cap $0.25 reached: 9 cluster(s) left for "
                "the next night",
            ),
        ),
    ],
)
def test_a_cost_cap_makes_the_night_partial_with_the_reason(verdict, reason, deferred, expected) -> None:
    assert verdict_with_deferrals(verdict, reason, deferred, 0.25) == expected


def test_a_reply_cut_at_max_tokens_is_rejected_as_too_long() -> None:
    fake = FakeAnthropicAPI()
    fake.replies.append('{"abstraction": "Whales buy BTC and then, over the following days, the price')
    fake.stop_reasons.append("max_tokens")
    llm = LLMResource(api_key=TEST_KEY)
    distiller = llm.get_distiller(client=llm.make_client(fake.http_client()), rate_limit_per_min=6000)
    members = [Member("a", "Whales bought BTC before a rally. " * 4, 1.0)] * 3
    (result,) = distill_all(distiller, [DistillRequest("c", members, "trading", ("", ""))])
    assert isinstance(result, DistillationRejected)
    assert (
        str(result)
        == f"reply cut at max_tokens={distiller.distill_max_tokens(members)}: longer than the compression floor allows"
    )


def test_the_offline_distiller_goes_through_the_same_helpers() -> None:
    members = [
        Member("a", "Whale wallets bought BTC for days, which led to a price rally.", 1.0),
        Member("b", "Whale wallets accumulated BTC quietly, which led to a rally two days later.", 1.0),
        Member("c", "On-chain whale accumulation of BTC led to a price rally again.", 1.0),
    ]
    (d,) = distill_all(OfflineDistiller(), [DistillRequest("c", members, "trading", ("2026-10-01", "2026-10-02"))])
    assert d.distiller == "offline-extractive"
    assert extract_all(OfflineDistiller(), [d.abstraction])[0] is not None


def test_what_a_night_costs_at_the_seeds_cluster_counts() -> None:
    """The README's table: seed 000 §12's nights, priced with Haiku 4.5 list prices."""
    prices = PriceTable()
    system, atom_system = estimate_tokens(SYSTEM_PROMPT), estimate_tokens(ATOM_SYSTEM_PROMPT)
    nights = {
        (5, 4): estimate_night(5, 4, prices, system_tokens=system, atom_system_tokens=atom_system),
        (30, 8): estimate_night(30, 8, prices, system_tokens=system, atom_system_tokens=atom_system),
        (80, 12): estimate_night(80, 12, prices, system_tokens=system, atom_system_tokens=atom_system),
    }
    costs = {k: round(n.cost_usd, 3) for k, n in nights.items()}
    assert costs == {(5, 4): 0.006, (30, 8): 0.05, (80, 12): 0.173}  # the prompt's rules on faithfulness
    assert all(n.batch_cost_usd == pytest.approx(n.cost_usd / 2) for n in nights.values())
    assert nights[(80, 12)].cost_usd < 0.25  # a heavy night fits under the seed's cap
    print(
        json.dumps(
            {
                f"{c}x{s}": [n.calls, n.input_tokens, n.output_tokens, round(n.cost_usd, 4), round(n.batch_cost_usd, 4)]
                for (c, s), n in nights.items()
            }
        )
    )
