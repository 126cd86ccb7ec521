"""The offline distiller abstracts — ranges, lists, stated disagreements — and keeps every fact."""

from memory_pipeline.distillation.distill import Member, OfflineDistiller, split_sentences, validate_abstraction
from memory_pipeline.statements.facts import check_facts, fact_rejection
from memory_pipeline.tokens import estimate_tokens
from memory_pipeline.verification import faithfulness

SPAN = ("2026-10-16T08:00:00Z", "2026-11-21T09:00:00Z")
SLIPS = ("6.1", "5.8", "4.7", "6.8", "2.3", "8.0", "3.8", "5.5")
WORDINGS = (
    "Market order on the thin JTO/USDT book slipped {}% against the quote.",
    "Lost {}% to slippage with a market order on the illiquid JTO/USDT pair.",
)


def members(texts: list[str]) -> list[Member]:
    return [Member(f"m-{i}", t, 1.0) for i, t in enumerate(texts)]


def distill(texts: list[str]) -> str:
    ms = members(texts)
    d = OfflineDistiller().distill(ms, "trading", SPAN)
    source = sum(estimate_tokens(m.content) for m in ms)
    validate_abstraction(d.abstraction, source, [m.id for m in ms], 1.5, 2000)  # the run's limits still hold
    return d.abstraction


def test_numeric_variants_of_one_statement_become_one_sentence_with_its_range() -> None:
    """Reports of one statement fold into one range; the two wordings (two statements to the verifier) each keep
    the range of their own reports, never one range built across both."""
    texts = [WORDINGS[i % 2].format(v) for i, v in enumerate(SLIPS)]
    text = distill(texts)
    body, tail = text.split(" [")
    assert len(split_sentences(body)) == 2, body
    assert "2.3\u20136.1%" in body and "5.5\u20138.0%" in body and "JTO/USDT" in body, body
    assert tail == "8 memories, 2026-10-16 to 2026-11-21]"
    assert check_facts(texts, text).share == 1.0  # every slip is inside the range of its own statement
    assert not faithfulness.check(texts, text)


def test_a_contradicting_value_is_said_in_its_own_words_not_blended() -> None:
    texts = ["Staging runs Postgres 16 with 64 GB of shared buffers."] * 4 + [
        "Staging runs Postgres 16 with 32 GB of shared buffers."
    ]
    body = distill(texts).split(" [")[0]
    assert "with 64 GB of shared buffers." in body and "with 32 GB of shared buffers." in body, body
    assert "32\u201364" not in body and " or " not in body  # a state is not an observed range, nor two fused


def test_a_reversal_is_said_in_its_own_words() -> None:
    texts = ["Deploy the billing service on Fridays after the canary passes."] * 4 + [
        "Never deploy the billing service on Fridays, even after the canary passes."
    ]
    body = distill(texts).split(" [")[0]
    assert body == (
        "Deploy the billing service on Fridays after the canary passes. "
        "Never deploy the billing service on Fridays, even after the canary passes."
    )


def test_an_entity_only_one_member_mentions_survives() -> None:
    texts = [WORDINGS[0].format(v) for v in SLIPS[:5]] + [
        "Market order on the thin JTO/USDT book slipped 4.4% against the quote while Kraken was down."
    ]
    text = distill(texts)
    assert "Kraken" in text
    assert fact_rejection(texts, text) is None


def test_days_that_differ_in_one_place_are_two_statements_never_a_list() -> None:
    texts = [f"Whale wallets have added BTC every day since {d}." for d in ("Sunday", "Saturday", "Sunday")]
    body = distill(texts * 2).split(" [")[0]
    assert body == (
        "Whale wallets have added BTC every day since Sunday. Whale wallets have added BTC every day since Saturday."
    )


def test_the_distiller_is_deterministic() -> None:
    texts = [WORDINGS[i % 2].format(v) for i, v in enumerate(SLIPS)] + ["Use limit orders on JTO, never market."]
    assert distill(texts) == distill(list(texts))
    one, two = (OfflineDistiller().distill(members(texts), "t", SPAN) for _ in range(2))
    assert one == two


def test_the_fact_check_accepts_ranges_and_rejects_dropped_facts() -> None:
    texts = ["Slipped 6.1% on JTO/USDT.", "Slipped 2.3% on JTO/USDT.", "Never use market orders on Kraken."]
    assert check_facts(texts, "Slipped 2.3\u20138.0% on JTO/USDT; never market orders on Kraken.").share == 1.0
    check = check_facts(texts, "Slipped 6.1% on JTO/USDT; use limit orders.")
    assert check.missing == ("2.3%", "Kraken") and check.negation_lost
    assert fact_rejection(texts, "Slipped 6.1% on JTO/USDT; use limit orders.") == (
        "facts not preserved: 2 of 4 facts missing ('2.3%', 'Kraken'); a negation of the members is lost"
    )


def test_hours_and_r_multiples_are_quantities_not_names() -> None:
    """'6h' is the six hours a range '6–9 hours' keeps, and '1.6R' a number: read as names, they were facts no
    summary could keep except verbatim, and the night refused clusters for them."""
    texts = ["Kraken withdrawal of ETH stuck in 'pending' for 9 hours.",
             "Kraken ETH withdrawal pending for 6h before it went through.",
             "Kraken withdrawal of ETH stuck in 'pending' for 7 hours."]  # fmt: skip
    assert check_facts(texts, "Kraken withdrawals of ETH stuck in 'pending' for 6–9 hours.").share == 1.0
    assert check_facts(texts, "Kraken withdrawals of ETH stuck in 'pending' for 7–9 hours.").missing == ("6h",)
    assert check_facts(["Closed at -1.6R.", "Closed at -3.2R."], "Closed at -1.6R and -3.2R.").share == 1.0
    assert faithfulness.values("pending for 4-5h") == {"4", "5"}


def test_a_clause_written_as_a_sentence_ends_with_one_full_stop() -> None:
    """A clause split at ';' was written "… corrected me;." in the demo's summaries."""
    from memory_pipeline.distillation.abstractive import as_statement

    cases = {
        "Matthew checked and corrected me;": "Matthew checked and corrected me.",
        "BTC came back and filled the CME gap by Tuesday,": "BTC came back and filled the CME gap by Tuesday.",
        "told Matthew it was done": "Told Matthew it was done.",
        "Is it done?": "Is it done?",
    }
    assert {k: as_statement(k) for k in cases} == cases


def test_the_frame_says_how_many_memories_and_their_days_not_a_pattern() -> None:
    """Distinct events are not a pattern: the frame states the count of memories and the days they span."""
    texts = [w.format(s) for s in SLIPS for w in WORDINGS]
    text = distill(texts)
    assert text.endswith(" [16 memories, 2026-10-16 to 2026-11-21]"), text
    assert "Pattern" not in text


def test_a_range_says_its_latest_value() -> None:
    minutes = (16, 48, 31, 22, 40, 27)
    texts = [f"The full pytest suite took {m} minutes on the main branch of the ingest service." for m in minutes]
    members = [Member(f"m{i}", t, 0.5, f"2026-11-{10 + i:02d}") for i, t in enumerate(texts)]
    body = OfflineDistiller().distill(members, "t", SPAN).abstraction.split(" [")[0]
    assert body == ("The full pytest suite took 16\u201348 minutes on the main branch of the ingest service "
                    "(latest 27 minutes)."), body  # how many reports, and their days: the summary's bracket
    assert not faithfulness.check(texts, body)


def test_events_that_differ_by_a_name_are_listed_with_and_never_or() -> None:
    texts = [f"Fixed in PR #{n} with a page-size-1 pagination test and a regression check." for n in (667, 600, 783)]
    members = [Member(f"m{i}", t, 0.5, f"2026-11-1{i}") for i, t in enumerate(texts * 2)]
    body = OfflineDistiller().distill(members, "t", SPAN).abstraction.split(" [")[0]
    assert body == "Fixed in PR #667, #600 and #783 with a page-size-1 pagination test and a regression check.", body
    # an instruction that differs by a name is two instructions: never fused, never listed
    texts = ["Deploy the ledger service to eu-west-1 first, then roll out the rest of the fleet by region."] * 4 + [
        "Deploy the ledger service to us-east-1 first, then roll out the rest of the fleet by region."
    ]
    body = distill(texts)
    assert " or " not in body and " and us-east-1" not in body and "eu-west-1 and" not in body


def test_a_range_that_moves_one_way_says_which() -> None:
    texts = [f"The nightly import of the orders table took {m} minutes on db-03." for m in (12, 19, 25, 33, 41)]
    members = [Member(f"m{i}", t, 0.5, f"2026-11-{10 + i:02d}") for i, t in enumerate(texts)]
    body = OfflineDistiller().distill(members, "t", SPAN).abstraction.split(" [")[0]
    assert body.endswith("took 12\u201341 minutes on db-03 (latest 41 minutes, rising)."), body
    # beside other statements, the reports say how many and when
    other = ["Restart the import worker when the orders table import stalls for an hour or more."] * 3
    members += [Member(f"o{i}", t, 0.5, "2026-11-20") for i, t in enumerate(other)]
    body = OfflineDistiller().distill(members, "t", SPAN).abstraction
    assert "12\u201341 minutes on db-03 (5 reports, 2026-11-10 to 2026-11-14, latest 41 minutes, rising)." in body, body
