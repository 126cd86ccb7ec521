"""A fact restated in other words is a version; a look-alike is not (the attribute rule, words and a fake
embedder; the MiniLM figures are the version-pairs benchmark's)."""

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memory_pipeline.abstraction.versions import plan
from memory_pipeline.statements import attributes
from memory_pipeline.store.validity import FactRow

FOUND_BY_WORDS = [
    ("Our CI runners: 4 in total.", "We now run 6 CI runners."),  # count
    ("Deploy freeze starts Friday at 16:00.", "Deploy freeze now begins Friday at 2 pm."),  # 16:00 / 2 pm
    (
        "The API rate limit is 100 requests per minute per key.",
        "Raised the per-key API rate limit to 250 requests per minute.",
    ),  # fmt: skip
    ("Node version for the frontend build: 18.19.", "Frontend build now uses Node 20.11."),  # version
    ("The office Wi-Fi password rotates every 30 days.", "Wi-Fi password rotation is now every 90 days."),
    ("Monthly cloud budget is $12,500.", "The monthly cloud budget was raised: it is now 15k."),  # $12,500 / 15k
    ("Data platform team lead: Priya.", "Marcus took over as data platform team lead."),  # person
    ("Max leverage on the bot is 3 percent of equity.", "Max leverage on the bot cut to 2%."),  # 3 percent / 2%
]
APART = [
    ("The staging database listens on port 5433.", "The production database listens on port 5434."),
    ("Weekday opening hours start at 08:00.", "Weekend opening hours start at 10:00."),
    ("The search service runs on port 9200.", "The billing service runs on port 8080."),
    ("Monthly cloud budget is $12,500.", "Monthly marketing budget is $4,000."),
    ("Alice's phone bill is $80 a month.", "Bob's phone bill is $95 a month."),
    ("The Lisbon office wifi password is harbour-77.", "The office wifi network is Helios-5G."),
    ("Note 58: the printer on floor 2 was serviced at 10:30.", "Note 123: the printer on floor 2 was serviced at 2pm."),
    ("Ticket #4411: checkout times out after 30 seconds.", "Ticket #4412: checkout times out after 10 seconds."),
    ("Standup is at 09:30.", "Retro is every other Thursday at 15:00."),
    ("The frontend build uses Node 20.11.", "The lambda runtime is Python 3.12."),
    ("Closed the TIA long at +$701.", "Closed the TIA long at +$504."),  # two trades, not a state
    ("Risk per trade is 1% of the account.", "Risk per day is 3% of the account."),
    ("flat rent £1,150", "office rent $4,200/mo"),  # terse notes: two rents
    ("Heartbeat 11:03 UTC: scheduler reported one skipped job.", "Heartbeat 23:20 UTC: VPN tunnel flapped twice."),
]
# a note with no verb the rule knows still states its one value after the words of what it is of
TERSE = [
    ("flat rent £1,150", ("money", "1150"), ("flat", "rent")),
    ("car insurance £640/yr", ("money", "640"), ("car", "insurance")),  # "/yr" is the value's unit
    ("standup 09:30, small room", ("time", "09:30"), ("standup", "small", "room")),
    ("max open positions 5", ("num", "5"), ("max", "open", "positions")),
    ("risk ceiling 1%", ("pct", "1%"), ("risk", "ceiling")),  # "-ing": a noun as often as a verb
]
# ... but a log line, a heading and an entry with several values are not such notes
LOG_LINES = [
    "Heartbeat 11:03 UTC: scheduler reported one skipped job (overlap guard).",
    "web-155 reboot 23:30, up 1207h before",
    "sprint 128 done, 52 pts w/ 6 ppl",
    "Market scan 22:04 UTC, AVAX: options skew flipped to puts.",
    "crate C114 weighed: 495 kg of router parts",
    "News: an Asian exchange halted withdrawals, citing wallet maintenance.",
    "alert 980 @ 18:05, p95 931 ms on web-44",
    "build failed on runner ci-07",  # what happened, on which runner
    "room 211 free",  # which room
    "ferry cabin deck harbour note3x12",
]


@pytest.mark.parametrize(("older", "newer"), FOUND_BY_WORDS)
def test_a_reworded_version_is_found_by_the_words(older: str, newer: str) -> None:
    assert attributes.versions(older, newer)


@pytest.mark.parametrize(("older", "newer"), APART)
def test_look_alikes_stay_apart(older: str, newer: str) -> None:
    near = lambda a, b: 1.0  # noqa: E731 — even an embedder that calls every phrase the same joins none of them
    assert not attributes.versions(older, newer, near) and not attributes.versions(newer, older, near)


def test_a_value_mentioned_in_passing_or_a_reference_is_not_the_fact_s_value() -> None:
    (claim,) = attributes.claims("Tightened the per-trade risk cap to 1.5% after the August drawdown.")
    assert claim.values == (("pct", "1.5%"),)
    (claim,) = attributes.claims("Standup moved to 10:15 so the Berlin folks can join.")
    assert claim.values == (("time", "10:15"),)
    assert attributes.claims("Note 58: the car park is closed on Mondays.") == ()  # no value but the note's number


def test_the_embedder_decides_what_the_words_leave_open_with_a_higher_bar_for_two_sided_differences() -> None:
    older, newer = "Software subscriptions cost us $310 a month in total.", "Monthly software bill is now $355."
    assert not attributes.versions(older, newer)  # each has words the other lacks: the words alone do not join
    assert attributes.versions(older, newer, lambda a, b: attributes.ATTRIBUTE_COSINE)
    assert not attributes.versions(older, newer, lambda a, b: attributes.ATTRIBUTE_COSINE - 0.01)
    contained = ("Daily standup is at 09:30 in the small meeting room.", "Standup moved to 10:15.")
    assert attributes.versions(*contained, lambda a, b: attributes.CONTAINED_COSINE)
    assert not attributes.versions(*contained, lambda a, b: attributes.CONTAINED_COSINE - 0.01)


T0 = datetime(2026, 8, 1, 9, tzinfo=UTC)


def _rows(texts: Sequence[str]) -> list[FactRow]:
    return [FactRow(f"m{i}", t, T0 + timedelta(days=10 * i), None) for i, t in enumerate(texts)]


def test_the_night_supersedes_each_reworded_version_by_the_next_and_a_restated_value_is_current_again() -> None:
    rows = _rows([
        "Per-trade risk cap: 2% of the account.",
        "Tightened the per-trade risk cap to 1.5% after the August drawdown.",
        "Loosened the per-trade risk cap back to 2% of the account.",
        "The lunch order is in: 4 pizzas.",
    ])  # fmt: skip
    got = {(s.memory_id, s.superseded_by) for s in plan(rows).supersessions}
    assert got == {("m0", "m1"), ("m1", "m2")}  # m2 restates m0's value: it holds now, m0 stays superseded


def test_an_undone_supersession_is_not_made_again_and_the_next_version_is_taken() -> None:
    rows = _rows(["Our CI runners: 4 in total.", "We now run 6 CI runners.", "CI runners: 8 in total now."])
    got = {(s.memory_id, s.superseded_by) for s in plan(rows, undone={("m0", "m1")}).supersessions}
    assert ("m0", "m1") not in got and ("m0", "m2") in got


def test_the_embedder_is_asked_once_in_one_batch_and_only_for_what_the_words_leave_open() -> None:
    calls: list[list[str]] = []

    def encode(texts: Sequence[str]) -> np.ndarray:
        calls.append(list(texts))
        return np.ones((len(texts), 4)) / 2.0  # every phrase alike: cosine 1

    rows = _rows(["Software subscriptions cost us $310 a month in total.", "Monthly software bill is now $355.",
                  "Our CI runners: 4 in total.", "We now run 6 CI runners."])  # fmt: skip
    got = {(s.memory_id, s.superseded_by) for s in plan(rows, encode=encode).supersessions}
    assert got == {("m0", "m1"), ("m2", "m3")}
    assert len(calls) == 1 and not any("runners" in t for t in calls[0])  # the CI pair was decided by its words
    assert plan(_rows(["Our CI runners: 4 in total.", "We now run 6 CI runners."]), encode=encode) and len(calls) == 1


@pytest.mark.parametrize(("note", "value", "words"), TERSE)
def test_a_terse_note_without_a_verb_states_its_value(
    note: str, value: tuple[str, str], words: tuple[str, ...]
) -> None:
    (claim,) = attributes.claims(note)
    assert claim.values == (value,) and claim.plain == words


@pytest.mark.parametrize("line", LOG_LINES)
def test_a_log_line_is_not_read_as_a_terse_note(line: str) -> None:
    assert attributes.claims(line) == ()


def test_a_weekday_and_its_time_are_one_value_a_slot() -> None:
    (older,) = attributes.claims("Deploy window Thu 14:00")
    (newer,) = attributes.claims("Deploy window moved to Wednesdays at 4 pm")
    assert older.values == (("slot", "thu 14:00"),) and newer.values == (("slot", "wed 16:00"),)
    assert attributes.versions("Deploy window Thu 14:00", "Deploy window moved to Wednesdays at 4 pm")
    assert attributes.versions("Book club is Tuesday at 19:30.", "Book club moved to Thursdays 19:00.")
