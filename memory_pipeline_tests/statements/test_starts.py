"""A value said to start later: the day a statement says its value starts, read against the day it was said — and
the rows that are not a start (a place or a person after "from", "since", a range, a move)."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from memory_pipeline.statements.starts import holds_from, stated_start

# (statement, said, the start it states or None)
STARTS = [
    ("Flat rent is £1,250 a month from January.", date(2026, 11, 20), date(2027, 1, 1)),
    ("Flat rent is £1,250 a month from January.", date(2026, 1, 10), date(2026, 1, 1)),  # already started
    ("Office parking costs £8 a day starting 1 March.", date(2026, 11, 18), date(2027, 3, 1)),
    ("Starting March 1st, 2028 the fee is $9.", date(2026, 11, 18), date(2028, 3, 1)),
    ("Rent is £1,250 from the 1st of March.", date(2026, 5, 1), None),  # "the 1st": no month after the marker
    ("Rent is £1,250 from 1st of March.", date(2026, 5, 1), date(2027, 3, 1)),
    ("Broadband is £35 a month from next month.", date(2026, 10, 14), date(2026, 11, 1)),
    ("Broadband is £35 a month from next month.", date(2026, 12, 14), date(2027, 1, 1)),
    ("The early shift starts at 6:30 as of 5 Jan.", date(2026, 12, 1), date(2027, 1, 5)),
    ("The plan price is $24 a month, effective 2027-02-01.", date(2026, 12, 1), date(2027, 2, 1)),
    ("The support desk opens at 7:30 from Monday.", date(2026, 10, 7), date(2026, 10, 12)),  # said on a Wednesday
    ("The support desk opens at 7:30 from Monday.", date(2026, 10, 12), date(2026, 10, 12)),  # said on the Monday
    ("The support desk opens at 7:30 from next Monday.", date(2026, 10, 12), date(2026, 10, 19)),
    ("The team budget is £4,500 beginning in Q2.", date(2026, 11, 1), date(2027, 4, 1)),
    ("My phone plan is £15 a month from next year.", date(2026, 9, 30), date(2027, 1, 1)),
    ("Standup is at 10:00 from next week.", date(2026, 10, 7), date(2026, 10, 12)),
    ("The gym opens at 7:00 from tomorrow.", date(2026, 12, 31), date(2027, 1, 1)),
    ("Salary goes up from March 2027.", date(2026, 5, 1), date(2027, 3, 1)),
    # not a start
    ("We deploy from the staging host.", date(2026, 11, 20), None),
    ("Got the new key from Alice.", date(2026, 11, 20), None),
    ("The library closes at 19:00 since January.", date(2026, 3, 1), None),  # "since": it holds already
    ("Dentist called: the check-up moved from October 14 to October 21.", date(2026, 10, 1), None),
    ("The office is open from Monday to Friday.", date(2026, 10, 1), None),
    ("Leave is booked from 9 Oct-12 Oct.", date(2026, 10, 1), None),
    ("From now on the team's code editor is Zed.", date(2026, 9, 29), None),
    ("Starting today the VPN is vpn2.", date(2026, 9, 29), None),
    # a bare "from" after a thing of its own, or before more of its clause, says where it came from
    ("The logs from Monday show a leak in the cache.", date(2026, 12, 9), None),
    ("The invoice from March was paid twice.", date(2026, 12, 9), None),
    ("We restored the snapshot from Friday.", date(2026, 12, 9), None),
    ("The data from Q2 shows churn at 4%.", date(2026, 12, 9), None),
    ("Backups from December 1 are corrupt.", date(2026, 12, 9), None),
    ("From Monday, standup is at 10.", date(2026, 12, 9), date(2026, 12, 14)),  # it opens its clause: a start
    ("The fee from may be waived.", date(2026, 9, 29), None),  # the verb, not the month
    ("The new price holds from 31 February.", date(2026, 9, 29), None),  # no such day
    ("Booked a dentist check-up for October 14 at 8:40.", date(2026, 9, 2), None),
    ("Calendar: Lena's onboarding week starts Monday.", date(2026, 12, 5), None),  # an event's start
]


@pytest.mark.parametrize(("text", "said", "start"), STARTS, ids=[f"{t[:40]}@{s}" for t, s, _ in STARTS])
def test_the_start_a_statement_says(text: str, said: date, start: date | None) -> None:
    assert stated_start(text, said) == start


def test_a_memory_holds_from_its_start_when_later_than_when_it_was_said() -> None:
    said = datetime(2026, 11, 20, 9, 30)
    assert holds_from("Flat rent is £1,250 a month from January.", said) == datetime(2027, 1, 1)
    assert holds_from("Flat rent is £1,250 a month.", said) == said
    assert holds_from("Flat rent is £1,250 a month from November.", said) == said  # started before it was said
