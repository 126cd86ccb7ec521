"""Time expressions in a message ("yesterday", "last week", "in May 2023", "2023-05-08") resolved against a
fixed day into the period they name, so reading can prefer memories of that period. Pure functions."""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta

from memory_pipeline.settings import parse_as_of as parse_as_of  # the one reading of as_of, for this package's callers
from memory_pipeline.statements.judgement import WEEKDAYS

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS |= {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?,?\s+(\d{{4}})\b", re.I)
_IN_MONTH = re.compile(rf"\b(?:in|during|since|last)\s+({_MONTH})\b", re.I)
_YEAR = re.compile(r"\b(?:in|during|of)\s+((?:19|20)\d{2})\b", re.I)
_RELATIVE = re.compile(r"\b(today|yesterday|last (?:week|month|year)|this (?:week|month|year)|"
                       r"(\d+|a|one|two|three) (day|week|month|year)s? ago)\b", re.I)  # fmt: skip
_COUNT = {"a": 1, "one": 1, "two": 2, "three": 3}


def _month_span(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _relative(m: re.Match[str], today: date) -> tuple[date, date]:
    phrase = m.group(1).lower()
    if phrase == "today":
        return today, today
    if phrase == "yesterday":
        day = today - timedelta(days=1)
        return day, day
    if phrase.startswith("last week"):
        start = today - timedelta(days=today.weekday() + 7)
        return start, start + timedelta(days=6)
    if phrase.startswith("this week"):
        return today - timedelta(days=today.weekday()), today
    if phrase.startswith("last month"):
        first = today.replace(day=1) - timedelta(days=1)
        return _month_span(first.year, first.month)
    if phrase.startswith("this month"):
        return today.replace(day=1), today
    if phrase.startswith("last year"):
        return date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)
    if phrase.startswith("this year"):
        return date(today.year, 1, 1), today
    n = int(m.group(2)) if m.group(2).isdigit() else _COUNT[m.group(2).lower()]
    unit = m.group(3).lower()
    days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * n
    centre = today - timedelta(days=days)
    slack = {"day": 1, "week": 3, "month": 15, "year": 182}[unit]
    return centre - timedelta(days=slack), centre + timedelta(days=slack)


def resolve(message: str, today: date) -> tuple[date, date] | None:
    """The period the message's first time expression names, both ends inclusive; None when it names none.
    A month without a year is the latest such month not after `today`."""
    if m := _ISO.search(message):
        try:
            day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
        return day, day
    for pattern, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        if m := pattern.search(message):
            d, mo, y = (m.group(1), m.group(2), m.group(3)) if order == "dmy" else (m.group(2), m.group(1), m.group(3))
            try:
                day = date(int(y), _MONTHS[mo.lower()], int(d))
            except ValueError:
                return None
            return day, day
    if m := _MONTH_YEAR.search(message):
        return _month_span(int(m.group(2)), _MONTHS[m.group(1).lower()])
    if m := _RELATIVE.search(message):
        return _relative(m, today)
    if m := _IN_MONTH.search(message):
        month = _MONTHS[m.group(1).lower()]
        year = today.year if month <= today.month else today.year - 1
        return _month_span(year, month)
    if m := _YEAR.search(message):
        year = int(m.group(1))
        return date(year, 1, 1), date(year, 12, 31)
    return None


_WEEKDAYS = {name: i for i, name in enumerate(WEEKDAYS)}
_WEEKDAYS |= {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4, "sat": 5, "sun": 6}
_N = r"(\d+|a|one|two|three|four|five|six|seven|eight|nine|ten|a couple of)"
_SAID = re.compile(
    rf"\b(?:(the day before yesterday|yesterday|last night)|{_N} (day|week|weekend|month|year)s? ago|"
    rf"(?:last|this past) (week|weekend|month|year|{'|'.join(sorted(_WEEKDAYS, key=len, reverse=True))})\.?)(?![\w(])",
    re.I,
)
_COUNTS = _COUNT | {"four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2}


def spoken(day: date) -> str:
    return f"{day.day} {calendar.month_name[day.month]} {day.year}"


def _months_back(day: date, n: int) -> str:
    month = day.month - 1 - n
    year = day.year + month // 12
    return f"{calendar.month_name[month % 12 + 1]} {year}"


def _named(m: re.Match[str], said: date) -> str:
    """The date a relative expression said on `said` names, as a reader would write it."""
    monday = said - timedelta(days=said.weekday())
    if m.group(1):
        back = 2 if m.group(1).lower().startswith("the day before") else 1
        return spoken(said - timedelta(days=back))
    if m.group(2):
        n, unit = _COUNTS[m.group(2).lower()] if not m.group(2).isdigit() else int(m.group(2)), m.group(3).lower()
    else:
        n, unit = 1, m.group(4).lower().rstrip(".")
    if unit == "day":
        return spoken(said - timedelta(days=n))
    if unit == "week":
        return f"the week of {spoken(monday - timedelta(days=7 * n))}"
    if unit == "weekend":
        saturday = monday - timedelta(days=2 + 7 * (n - 1))
        return f"the weekend of {spoken(saturday)}"
    if unit == "month":
        return _months_back(said, n)
    if unit == "year":
        return str(said.year - n)
    back = (said.weekday() - _WEEKDAYS[unit]) % 7 or 7  # "last Friday": the latest Friday before the day
    return spoken(said - timedelta(days=back))


def annotate(text: str, said: date) -> str:
    """`text` with each relative time expression followed by the date it names, read against the day it was
    said ("yesterday" on 8 May 2023 → "yesterday (7 May 2023)"), so a reader need not do the arithmetic."""
    return _SAID.sub(lambda m: f"{m.group(0)} ({_named(m, said)})", text)
