"""When a statement says its value starts to hold: "Flat rent is £1,250 a month from January", "starting 1 March",
"as of 5 Jan", "effective 2027-02-01", "from Monday", "from next month", "beginning in Q2". A memory holds from
when it was said unless it says a later start; then the value it replaces holds until that start — the one place
that decides it, asked by the night's Versioner (the older memory's `valid_until`) and by reading (`as_of`, now).

The day is read against the day the statement was said: a month, a quarter or a date without a year is the next
one on or after it, and one the saying falls in has already started ("from January" said on 2026-11-20 is
2027-01-01, said on 2026-01-10 is 2026-01-01); a weekday is the first such day on or after it; "next week" the
Monday after, "next month" and "next year" their first day. Not a start: no day after the marker ("from the
staging host", "from Alice", "as of today"), a day that opens a range or a move ("moved from October 14 to
October 21"), and "since January" — "since" says the value holds already. The words are data:
`start_words.json`; the names of days and months are the judgement's (`judgement.WEEKDAYS`, `judgement.MONTHS`).
Pure functions."""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta
from functools import lru_cache
from pathlib import Path

from memory_pipeline.statements.judgement import DAYS, MONTHS, WEEKDAYS

_ORDINAL = r"(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(?P<{}>\d{{4}})\b)?"


def _alternatives(words: list[str] | tuple[str, ...]) -> str:
    """Longest first, so "effective from" is read before "effective"; spaces match any run of them."""
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len, reverse=True))


@lru_cache(maxsize=1)
def _data() -> dict[str, list[str]]:
    data: dict[str, list[str]] = json.loads(Path(__file__).with_name("start_words.json").read_text(encoding="utf-8"))
    return data


@lru_cache(maxsize=1)
def _pattern() -> re.Pattern[str]:
    data = _data()
    month = _alternatives([d for d in DAYS if d not in WEEKDAYS])
    weekday = _alternatives(WEEKDAYS)
    when = "|".join((
        r"(?P<iso>\d{4}-\d{2}-\d{2})\b",
        rf"(?P<d1>\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?(?P<m1>{month})\b\.?{_YEAR.format('y1')}",
        rf"(?P<m2>{month})\.?\s+(?P<d2>\d{{1,2}}){_ORDINAL}\b{_YEAR.format('y2')}",
        rf"(?P<m3>{month})\b\.?(?:\s+(?P<y3>\d{{4}})\b)?",
        rf"(?P<next>next\s+)?(?P<wd>{weekday})\b",
        r"next\s+(?P<rel>week|month|year)\b",
        r"(?P<tomorrow>tomorrow)\b",
        r"q(?P<q>[1-4])\b(?:\s+(?P<yq>\d{4})\b)?",
    ))  # fmt: skip
    # the day is read whole (an atomic group), then what follows it: a word that ends a range, or a dash
    words = _alternatives([e for e in data["range_ends"] if e.isalpha()])
    dashes = "".join(e for e in data["range_ends"] if not e.isalpha())
    return re.compile(
        rf"\b(?P<marker>{_alternatives(data['markers'])})\s+(?:(?:{_alternatives(data['lead'])})\s+)?(?>{when})"
        rf"(?!\s*(?:(?:{words})\b|[{re.escape(dashes)}]))",
        re.I,
    )


def stated_start(text: str, said: date) -> date | None:
    """The day `text` says its value starts, read against `said`, the day it was said (see the module); None when
    it states no start."""
    said = said.date() if isinstance(said, datetime) else said
    for m in _pattern().finditer(text):
        if m.group("m3") == "may":
            continue  # the verb ("from may be"), not the month, which is written May
        if m.group("marker").lower() == "from" and not _from_starts(text, m):
            continue  # "the logs from Monday show …", "we restored the snapshot from Friday": where it came from
        try:
            day = _day(m, said)
        except ValueError:  # "31 February": no such day
            day = None
        if day is not None:
            return day
    return None


_CLAUSE_END = re.compile(r"\s*(?:[.;,!?)]|$)")
_OPENS = re.compile(r"(?:^|[.;:!?(]|,\s*(?:and|but)?)\s*$")
_NOUN_BEFORE = re.compile(
    r"\b(?:the|a|an|this|that|these|those|our|my|your|their|his|her|its)\s+(?P<noun>[\w'’-]+)\s+$", re.I
)


def _from_starts(text: str, m: re.Match[str]) -> bool:
    """Whether a bare "from <day>" says when a value starts rather than where something came from: it opens its
    clause ("From Monday, standup is at 10") or closes it after the value ("£1,250 a month from January", "opens
    at 7:30 from Monday") and does not follow a thing of its own ("the snapshot from Friday"; a time unit is no
    such thing: "a month from January"); a day followed by more of the clause ("the invoice from March was paid")
    says which one."""
    before = text[: m.start()]
    if _OPENS.search(before):
        return True
    if not _CLAUSE_END.match(text, m.end()):
        return False
    noun = _NOUN_BEFORE.search(before)
    return noun is None or noun.group("noun").lower() in _data()["time_units"]


def holds_from(text: str, said: datetime) -> datetime:
    """When a memory said at `said` holds from: its stated start when later than `said`, else `said`."""
    start = stated_start(text, said)
    return datetime.combine(start, datetime.min.time()) if start is not None and start > said.date() else said


def _month(word: str) -> int:
    return next(i for i, name in enumerate(MONTHS, 1) if name.startswith(word.lower().rstrip(".")))


def _in_year(month: int, day: int, year: str | None, said: date) -> date:
    """A month's day: in the year given, else in the year of saying unless its month has passed by then."""
    if year:
        return date(int(year), month, day)
    return date(said.year if month >= said.month else said.year + 1, month, day)


def _day(m: re.Match[str], said: date) -> date | None:
    g = m.groupdict()
    if g["iso"]:
        return date.fromisoformat(g["iso"])
    for d, mo, y in (("d1", "m1", "y1"), ("d2", "m2", "y2")):
        if g[d]:
            return _in_year(_month(g[mo]), int(g[d]), g[y], said)
    if g["m3"]:
        return _in_year(_month(g["m3"]), 1, g["y3"], said)
    if g["wd"]:
        ahead = (WEEKDAYS.index(g["wd"].lower()) - said.weekday()) % 7
        return said + timedelta(days=ahead or (7 if g["next"] else 0))
    if g["rel"]:
        rel = g["rel"].lower()
        if rel == "week":
            return said + timedelta(days=7 - said.weekday())
        if rel == "month":
            return date(said.year + said.month // 12, said.month % 12 + 1, 1)
        return date(said.year + 1, 1, 1)
    if g["tomorrow"]:
        return said + timedelta(days=1)
    if g["q"]:
        first = 3 * int(g["q"]) - 2
        return date(int(g["yq"]) if g["yq"] else said.year if said.month <= first + 2 else said.year + 1, first, 1)
    return None
