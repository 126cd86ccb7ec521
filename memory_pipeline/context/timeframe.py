"""Time expressions in a message ("yesterday", "last week", "in May 2023", "2023-05-08") resolved against a
fixed day into the period they name, so reading can prefer memories of that period. Pure functions."""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta

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
