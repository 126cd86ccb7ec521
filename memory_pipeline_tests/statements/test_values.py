"""Same fact, new value — told without an LLM, and look-alikes left apart (a wrong supersession hides a true
fact, which is worse than a stale one)."""

from __future__ import annotations

import pytest

from memory_pipeline.statements.values import distinct_subjects, fact_key, restates, stated_values, versions_of

VERSIONS = [
    ("Per-trade risk cap is 2%.", "Per-trade risk cap is now 1.5%."),
    ("Per-trade risk cap is 1%.", "Per-trade risk cap is now 1.5 percent."),
    ("Daily standup is at 09:30.", "Daily standup moved to 10:15."),
    ("The daily standup is at 16:45.", "The daily standup is now at 5:30 pm."),
    ("The staging host is db-stage-1.", "The staging host migrated to db-stage-7."),
    ("Pickup is in Leeds.", "Pickup moved to York."),
    ("My dentist is Dr Patel.", "My dentist is now Dr Okafor."),
    ("Internet bill is $45 a month.", "Internet bill went up to $52 a month."),
    ("The gym membership costs 1200 USD a year.", "The gym membership costs $1,350 a year."),
    ("Standup is at 9:00.", "Standup moved to 10:15."),
    ("Per-trade risk cap: 2%.", "Per-trade risk cap: 1%."),
    # a time's zone is part of its value
    ("The retro is at 15:00 UTC.", "The retro is at 15:00 CET."),
    ("The retro is at 3 pm UTC.", "The retro is at 3 pm PT."),
    # "12.5k" is an amount, as "$12,500" is
    ("Kitchen budget is $12,500.", "Kitchen budget is now 13k."),
    ("Kitchen budget is 12.5k.", "Kitchen budget went up to $14,000."),
    # a clause in passing is neither the value nor what the fact is about
    ("Per-trade risk cap is 2%.", "Per-trade risk cap is now 1.5% after the August drawdown."),
    ("Standup is at 09:30.", "Standup moved to 10:15 so the Berlin folks can join."),
]
LOOK_ALIKES = [
    ("Risk per trade is 1%.", "Risk per day is 3%."),
    ("The staging host is db-stage-1.", "The production host is db-prod-2."),
    ("Leeds pickup is at 9:00.", "York pickup is at 9:30."),
    ("Alice's bill is $80.", "Bob's bill is $95."),
    ("Closed the TIA long at +$701: took profit.", "Closed the TIA long at +$504: took profit."),
    ("Set a price alert on ATOM at 7.33.", "Set a price alert on ATOM at 6.90."),
    ("Meeting with the landlord on 3 March.", "Meeting with the landlord on 10 April."),
    ("Per-trade risk cap is 1%.", "Per-trade risk cap is 1 percent."),  # the same value in another form
    ("The daily standup is at 16:45.", "The daily standup is at 4:45 pm."),
    ("Max position size is 3 lots.", "Max position size is 3 lots on ETH and 2 lots on SOL."),
    # from the demo's sample: events on two hosts, feedback from two people
    (
        "cache-02: the websocket server hit the 1024 open-files ulimit.",
        "db-01: the websocket server hit the 1024 open-files ulimit.",
    ),
    (
        "Feedback from Jonas on the onboarding doc: wanted fewer acronyms.",
        "Feedback from Sam on the onboarding doc: wanted fewer acronyms.",
    ),
    # the same value in another form
    ("Kitchen budget is $12,500.", "Kitchen budget is now 12.5k."),
    ("The retro is at 15:00 UTC.", "The retro is at 3 pm UTC."),
    # numbers that say which note, ticket or row a text is are not values of a fact
    (
        "I remembered that the car: it is closed on Mondays (note 123)",
        "I remembered that the car: it is closed on Mondays (note 58)",
    ),
    ("Ticket #4411: the deploy window is 14:00.", "Ticket #4412: the deploy window is 14:00."),
    ("Row 17: the warehouse door code is 4471.", "Row 18: the warehouse door code is 4471."),
]


@pytest.mark.parametrize(("old", "new"), VERSIONS)
def test_versions_of_one_fact_are_told_apart_from_new_facts(old: str, new: str) -> None:
    a, b = fact_key(old), fact_key(new)
    assert a is not None and b is not None, (a, b)
    assert versions_of(a, b) and versions_of(b, a)


@pytest.mark.parametrize(("one", "other"), LOOK_ALIKES)
def test_look_alikes_and_restatements_are_not_versions(one: str, other: str) -> None:
    a, b = fact_key(one), fact_key(other)
    assert a is None or b is None or not versions_of(a, b)


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("Per-trade risk cap is 1 percent.", ("1%",)),
        ("Standup is at 4:45 pm.", ("16:45",)),
        ("Standup is at 16:45.", ("16:45",)),
        ("Rent is $1,200.", ("1200",)),
        ("The deadline is 2026-10-20.", ("2026-10-20",)),
        ("The deadline is 20 October.", ("10-20",)),
        ("Kitchen budget is 12.5k.", ("12500",)),
        ("Kitchen budget is $12,500.", ("12500",)),
        ("The retro is at 15:00 CET.", ("15:00 cet",)),
        ("The retro is at 3 pm UTC+2.", ("15:00 utc+2",)),
        ("Per-trade risk cap is 1.5% after the August drawdown.", ("1.5%",)),
    ],
)
def test_values_are_compared_in_one_form(text: str, values: tuple[str, ...]) -> None:
    key = fact_key(text)
    assert key is not None and key.values == values


@pytest.mark.parametrize(
    ("older", "newer", "restated"),
    [
        (
            "The hosting SLA promises 99.9% uptime.",
            "New contract: uptime guarantee of 99.95% from the hosting provider.",
            True,
        ),
        ("Slippage tolerance is 0.5%.", "I tightened my slippage tolerance; it is 0.3% from today.", True),
        (
            "Set a price alert on TIA at 5.99: previous all-time high.",
            "Set a price alert on ARB at 0.71: top of the weekly range.",
            False,
        ),  # events on two tickers
        ("Alice's phone bill is $80.", "Bob's phone bill is $95.", False),  # two people's
        ("The office wifi network is Helios-5G.", "The office wifi network is Helios-5G.", False),  # same value
    ],
)
def test_restatements_in_other_words_are_read_newer_first(older: str, newer: str, restated: bool) -> None:
    assert restates(older, newer) is restated


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("It is closed on Mondays (note 58).", []),
        ("See ticket #4411 and row 17 for the deploy window of 14:00.", ["14:00"]),
        ("Cap tightened to 1.5% after the 3 March drawdown of 12%.", ["1.5%"]),
    ],
)
def test_references_and_values_in_passing_are_not_values(text: str, values: list[str]) -> None:
    assert stated_values(text) == values


@pytest.mark.parametrize(
    ("one", "other", "distinct"),
    [
        ("Decided: worker w1 times out after 30 seconds.", "Decided: worker w2 times out after 45 seconds.", True),
        ("Decided: worker w1 times out after 30 seconds.", "Decided: worker w2 times out after 30 seconds.", True),
        ("Decided: Alice's laptop budget is $2,000.", "Decided: Bob's laptop budget is $1,500.", True),
        ("Decided: worker w1 times out after 30 seconds.", "Decided: worker w1 times out after 60 seconds.", False),
        ("Decided: pickup is in Leeds.", "Decided: pickup moves to York.", False),  # the name is the value
        ("Hire the contractor for six months.", "Hire the contractor for twelve months.", False),
    ],
)
def test_distinct_subjects_are_not_versions(one: str, other: str, distinct: bool) -> None:
    assert distinct_subjects(one, other) is distinct


@pytest.mark.parametrize(
    ("text", "name"),
    [("Paging goes through PagerDuty.", "pagerduty"), ("The code lives on GitHub.", "github"),
     ("Invoices are sent with FreeAgent now.", "freeagent"), ("Backups go to Backblaze B2.", "backblaze")],
)  # fmt: skip
def test_a_camel_cased_name_is_read_as_a_name(text: str, name: str) -> None:
    assert any(name in v.lower() for v in stated_values(text)), stated_values(text)
