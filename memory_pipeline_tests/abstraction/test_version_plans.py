"""The night's version plan over values written in other forms: each value type found changed however it is
written, the same value in another form never a change, a value stated again current again, and numbers that
only name a note, ticket or row never read as a fact's value."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from memory_pipeline.abstraction.versions import plan
from memory_pipeline.store.validity import FactRow

T0 = datetime(2026, 9, 1, 9, 0)


def _plan(*texts: str) -> list[tuple[str, str]]:
    rows = [FactRow(f"m{i}", t, T0 + timedelta(days=10 * i), None) for i, t in enumerate(texts)]
    return [(s.memory_id, s.superseded_by) for s in plan(rows).supersessions]


@pytest.mark.parametrize(
    "texts",
    [
        ("Per-trade risk cap is 2%.", "Per-trade risk cap is now 1.5 percent.", "Per-trade risk cap is now 1 pct."),
        ("Daily standup is at 09:30.", "Daily standup moved to 4:45 pm.", "Daily standup is at 10:15 am."),
        ("Kitchen budget is $12,500.", "Kitchen budget is now 14k.", "Kitchen budget went down to 11,000 USD."),
        ("The deadline is 2026-10-20.", "The deadline moved to 3 November.", "The deadline is now Nov 17."),
        (
            "The staging host is db-stage-1.",
            "The staging host migrated to db-stage-7.",
            "The staging host is db-stage-9.",
        ),
        ("The retro is at 15:00 UTC.", "The retro is at 15:00 CET.", "The retro is at 3 pm PT."),
        ("Pickup is in Leeds.", "Pickup moved to York.", "Pickup is now in Hull."),
    ],
)
def test_each_value_type_changed_in_another_form_is_a_version(texts: tuple[str, str, str]) -> None:
    assert _plan(*texts) == [("m0", "m1"), ("m1", "m2")]


@pytest.mark.parametrize(
    ("old", "same"),
    [
        ("Per-trade risk cap is 1%.", "Per-trade risk cap is now 1 percent."),
        ("Daily standup is at 16:45.", "Daily standup is now at 4:45 pm."),
        ("Kitchen budget is $12,500.", "Kitchen budget is now 12.5k."),
        ("The retro is at 15:00 UTC.", "The retro is at 3 pm UTC."),
    ],
)
def test_the_same_value_in_another_form_supersedes_nothing(old: str, same: str) -> None:
    assert _plan(old, same) == []


@pytest.mark.parametrize(
    "texts",
    [
        ("I remembered that the car: it is closed on Mondays (note 123)",
         "I remembered that the car: it is closed on Mondays (note 58)"),
        ("Ticket #4411: the deploy window is 14:00.", "Ticket #4412: the deploy window is 14:00."),
        ("Row 17: the warehouse door code is 4471.", "Row 18: the warehouse door code is 4471."),
        ("Per-trade risk cap is 1.5%.", "Per-trade risk cap is 1.5% after the August drawdown."),
        ("Ticket #12012 closed after 270 minutes: cache-68 disk at 95%.",
         "Ticket #5460 closed after 270 minutes: search-05 disk at 95%."),
        ("Nightly check: queue-37 disk at 86%.", "Nightly check: api-93 disk at 51%."),  # two hosts' disks
        ("Leeds pickup is at 9:00.", "York pickup is at 9:30."),
        ("Risk per trade is 1%.", "Risk per day is 3%."),
        ("The staging host is db-stage-1.", "The production host is db-prod-2."),
    ],
)  # fmt: skip
def test_references_and_look_alikes_supersede_nothing(texts: tuple[str, str]) -> None:
    assert _plan(*texts) == []


def test_restating_an_older_value_makes_it_current_again() -> None:
    got = _plan("Kitchen budget is $12,500.", "Kitchen budget is now 14k.", "Kitchen budget is back to 12.5k.")
    assert got == [("m0", "m1"), ("m1", "m2")]  # the last statement, 12.5k = $12,500, is what holds


def test_a_note_number_cited_after_the_statement_does_not_hide_a_version() -> None:
    assert _plan("Standup is at 9:30 (note 12).", "Standup moved to 10:15 (note 40).") == [("m0", "m1")]
