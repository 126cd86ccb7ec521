"""A newer note that says a value changed supersedes the older value of the attribute it names; a qualifier
(front / back, staging / production, per trade / per day, iOS / Android) keeps two facts apart in every rule."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from memory_pipeline.abstraction.versions import plan
from memory_pipeline.statements import changes, judgement
from memory_pipeline.store.validity import FactRow

SAID_CHANGED = [
    ("Daily standup is at 9:30.", "Standup moved to 10."),
    ("Our VPN endpoint is vpn1.example.com.", "We switched the VPN over to vpn2."),
    ("Tom lives in Berlin.", "Tom moved to Lisbon."),
    ("Remote work on Fridays is allowed.", "Remote work on Fridays is no longer allowed."),
    ("The prod cluster runs Kubernetes 1.29.", "Upgraded the prod cluster to Kubernetes 1.30."),
    ("Booked a dentist check-up for October 14 at 8:40.",
     "Dentist called: the check-up moved to October 21, same time."),
    ("Priya leads the on-call rotation for the payments team.",
     "Marcus took over as on-call lead for payments; Priya moved to the data team."),
    ("The team's code editor is VS Code.", "From now on the team's code editor is Zed."),
]  # fmt: skip
LOOK_ALIKES = [
    ("The front door code is 4711.", "The back door code is 9022."),
    ("The staging database host is db-stage-1.", "The production database host is db-prod-3."),
    ("Max leverage per trade is 5x.", "Max leverage per day is 3x."),
    ("The iOS app build number is 412.", "The Android app build number is 398."),
    ("Tom moved to Lisbon.", "Sara moved to Lisbon."),
    ("Tom lives in Berlin.", "Sara moved to Lisbon."),
    ("The staging Grafana runs on graf-stg-2.", "We switched the production Grafana to graf-prd-5."),
    ("Alice's bill is $80.", "Bob's bill is now $95."),
    ("Carlos leads the design review on Mondays.", "Emma took over the garden club newsletter."),
]


def _plan(older: str, newer: str) -> list[tuple[str, str]]:
    t = datetime(2026, 8, 1)
    rows = [FactRow("old", older, t, None), FactRow("new", newer, t + timedelta(days=30), None)]
    return [(s.memory_id, s.superseded_by) for s in plan(rows).supersessions]


@pytest.mark.parametrize(("older", "newer"), SAID_CHANGED)
def test_a_note_that_says_the_value_changed_supersedes_the_older_value(older: str, newer: str) -> None:
    assert changes.supersedes(older, newer) is not None
    assert _plan(older, newer) == [("old", "new")]


@pytest.mark.parametrize(("older", "newer"), LOOK_ALIKES)
def test_a_look_alike_or_another_subject_never_supersedes(older: str, newer: str) -> None:
    assert changes.supersedes(older, newer) is None
    assert _plan(older, newer) == []


def test_the_one_judgement_decides_what_a_qualifier_keeps_apart() -> None:
    verdict = judgement.judge("The front door code is 4711.", "The back door code is 9022.")
    assert verdict.relation is judgement.Relation.DIFFERENT
    assert judgement.qualifiers("The front door code is 4711.", "The back door code is 9022.") == (
        frozenset({"front"}), frozenset({"back"}))  # fmt: skip
    assert changes.kept_apart("The front door code is 4711.", "The back door code is 9022.")
    # a contrast word said after the change words is the new value, not a qualifier
    assert not changes.kept_apart("The guest Wi-Fi is on.", "The guest Wi-Fi is now off.")


def test_the_change_words_are_data() -> None:
    assert changes.says_change("We switched the VPN over to vpn2.")
    assert changes.says_change("Remote work is no longer allowed.")
    assert not changes.says_change("The VPN endpoint is vpn1.example.com.")


# Ways of saying a change the first word list missed, one row per kind (written before the rule was widened).
SAID_OTHERWISE = [
    pytest.param("The build agents run on Ubuntu 20.04.", "The build agents got bumped to Ubuntu 24.04.",
                 id="synonym: bumped to"),
    pytest.param("Anja lives in Graz.", "Anja relocated to Munich.", id="synonym: relocated to"),
    pytest.param("Expense reports are run by Quill.", "Expense reports are now handled by Ledgerly.",
                 id="synonym: is now handled by"),
    pytest.param("The guest network runs at 50 Mbps.", "The guest network went from 50 Mbps to 200 Mbps.",
                 id="synonym: went from X to Y"),
    pytest.param("Our wiki is hosted on Confluence.", "Confluence has been replaced by Outline for our wiki.",
                 id="synonym: has been replaced by"),
    pytest.param("Our on-call pager is handled by Opsgenie.", "We switched on-call paging from Opsgenie to Zenduty.",
                 id="names the old value after from; pager / paging"),
    pytest.param("Primary DNS is Route 53.", "Cloudflare replaces Route 53 as our primary DNS.",
                 id="names the old value after replaces"),
    pytest.param("Customer surveys are sent with Typeform.", "We moved customer surveying from Typeform to Tally.",
                 id="inflected attribute words: surveys / surveying"),
    pytest.param("Board games nights are on Thursdays.", "Board games nights moved to Saturdays.",
                 id="plural weekdays"),
    pytest.param("The design crit is every other Tuesday.", "The design crit is now weekly, on Wednesdays.",
                 id="a frequency"),
    pytest.param("Sara owns the billing service.", "Dev took over the billing service from Sara.",
                 id="a subject changes hands"),
]  # fmt: skip
APART_STILL = [
    pytest.param("Rui lives in Faro.", "Ines relocated to Braga.", id="two people's cities"),
    pytest.param("Sara owns the billing service.", "Dev took over the ledger service.", id="two services' owners"),
    pytest.param("The iOS app is on version 5.1.", "The Android app got bumped to version 5.3.", id="two apps"),
    pytest.param("Team lunch is on Fridays.", "The retro moved to Fridays.", id="two events on one day"),
    pytest.param("Lunch is on Thursdays.", "The retro moved to Fridays.", id="two events, two days"),
    pytest.param("The staging DNS is Route 53.", "Cloudflare replaces Route 53 as our production DNS.",
                 id="staging / production, the old value named"),
    pytest.param("Omar owns the search service.", "Kate took over the design system from Omar.",
                 id="one person leaves another subject"),
    pytest.param("Kate reports to Omar.", "Ben now reports to Lena.", id="two names changed: two people"),
]  # fmt: skip


@pytest.mark.parametrize(("older", "newer"), SAID_OTHERWISE)
def test_other_ways_of_saying_a_change_supersede_the_older_value(older: str, newer: str) -> None:
    assert changes.supersedes(older, newer) is not None
    assert _plan(older, newer) == [("old", "new")]


@pytest.mark.parametrize(("older", "newer"), APART_STILL)
def test_the_wider_change_words_keep_look_alikes_apart(older: str, newer: str) -> None:
    assert changes.supersedes(older, newer) is None
    assert _plan(older, newer) == []
