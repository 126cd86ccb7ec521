"""Near-duplicate entries in MEMORY.md and the daily journals: one entry per decision.

The rule is lexical, on purpose: the connectives the extractors vary ("We will …, because", ": ", "since")
are normalised away, then rapidfuzz `token_sort_ratio` compares what is left. On the sample workspace's
MEMORY.md (74 decisions and lessons, 1,656 same-section pairs) every reworded repeat scores 100 after
normalisation and every pair of different decisions at most 56, so `REPEAT` = 85 and `CHANGED` = 70 sit in
a wide gap. It is pure, deterministic and needs no model in a function that must give byte-identical files
on reconstruction; the `distill` benchmark checks the result with MiniLM (pairs with cosine ≥ 0.85).

- repeat: similarity ≥ `REPEAT` and the same numbers, named entities and negation → one entry, the latest
  wording and date, the earlier dates kept: "… (also 10-26, 10-27, 11-01)".
- changed: similarity ≥ `CHANGED` but not a repeat (a number, a name or a negation differs) → the newer entry
  replaces the older, which stays visible: "… (supersedes 10-26: <old text>)".
- distinct subjects (`statements.values.distinct_subjects`, the version rule of the night's versioner) are neither:
  "worker w1 times out after 30 seconds" and "worker w2 times out after 45 seconds" are two decisions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache

from rapidfuzz import fuzz

from memory_pipeline.statements import facts as fx
from memory_pipeline.statements import values

REPEAT = 85.0
CHANGED = 70.0
_LEAD = re.compile(r"^(?:we will|we'll|we decided to|decided to|decided:|lesson:)\s+", re.IGNORECASE)
_CONNECTIVE = re.compile(r"\b(?:because|since|as)\b|[:;,—–]|\s-\s")
_ALSO = re.compile(r"\s\(also ((?:\d{4}-)?\d{2}-\d{2}(?:, (?:\d{4}-)?\d{2}-\d{2})*)\)$")
_SUPERSEDES = re.compile(r"\s\(supersedes ((?:\d{4}-)?\d{2}-\d{2}): (.+)\)$")
MAX_SUPERSEDED = 120  # characters of the superseded wording kept beside its successor


@lru_cache(maxsize=16384)
def normalise(text: str) -> str:
    out = _CONNECTIVE.sub(" ", _LEAD.sub("", text.strip().lower()))
    return " ".join(re.sub(r"[^\w\s%$#/.-]|(?<!\d)\.|\.(?!\d)", " ", out).split())


def similarity(a: str, b: str) -> float:
    return float(fuzz.token_sort_ratio(normalise(a), normalise(b)))


def facts_of(text: str) -> tuple[frozenset[float], frozenset[str], bool]:
    return (
        frozenset(n.value for n in fx.numbers(text)),
        frozenset(e.lower() for e in fx.entities(text)),
        fx.has_negation(text),
    )


@dataclass(frozen=True)
class Dated:
    """One entry: its latest wording and date, the dates it was decided before, what it replaced."""

    day: date
    text: str
    earlier: tuple[date, ...] = ()
    supersedes: str = ""  # "2026-10-26: old wording" of the decision this one changed

    def suffix(self) -> str:
        out = ""
        if self.earlier:
            out += f" (also {', '.join(short_date(d, self.day) for d in sorted(self.earlier))})"
        if self.supersedes:
            when, _, old = self.supersedes.partition(": ")
            old = old if len(old) <= MAX_SUPERSEDED else old[: MAX_SUPERSEDED - 1].rstrip() + "…"
            out += f" (supersedes {short_date(date.fromisoformat(when), self.day)}: {old})"
        return out


def short_date(d: date, ref: date) -> str:
    """MM-DD in the entry's year, the full date otherwise."""
    return d.strftime("%m-%d") if d.year == ref.year else d.isoformat()


def _read_date(text: str, ref: date) -> date:
    if len(text) == 10:
        return date.fromisoformat(text)
    d = date.fromisoformat(f"{ref.year}-{text}")
    return d if d <= ref else d.replace(year=ref.year - 1)


def parse_line(day: date, body: str) -> Dated:
    """The inverse of `Dated.suffix`: a MEMORY.md line's wording, earlier dates and superseded entry."""
    supersedes = ""
    if m := _SUPERSEDES.search(body):
        supersedes = f"{_read_date(m.group(1), day).isoformat()}: {m.group(2)}"
        body = body[: m.start()]
    earlier: tuple[date, ...] = ()
    if m := _ALSO.search(body):
        earlier = tuple(_read_date(x, day) for x in m.group(1).split(", "))
        body = body[: m.start()]
    return Dated(day, body, earlier, supersedes)


def collapse(entries: Iterable[Dated]) -> list[Dated]:
    """Oldest first (same day: in the given order), each entry joins the most similar one kept so far: a
    repeat merges dates, a changed decision replaces it (and names it). Deterministic for a given set of entries."""
    return [d for d, _ in _collapse(entries)]


def _collapse(entries: Iterable[Dated]) -> list[tuple[Dated, int]]:
    """`collapse`, each kept entry with the input position of the first entry it merged. Only entries naming the
    same identifiers are compared (others are distinct subjects), so 5,000 workers' decisions cost no more than
    one comparison each against their own worker's."""
    kept: list[Dated] = []
    origin: list[int] = []
    facts: list[tuple[frozenset[float], frozenset[str], bool]] = []
    by_subject: dict[frozenset[str], list[int]] = {}
    for position, e in sorted(enumerate(entries), key=lambda p: (p[1].day, p[0])):
        mine = facts_of(e.text)
        alike = by_subject.setdefault(values.identifiers(e.text), [])
        best, score = -1, 0.0
        for i in alike:
            s = similarity(e.text, kept[i].text)
            if s > score and (s < CHANGED or not values.distinct_subjects(e.text, kept[i].text)):
                best, score = i, s
        if best >= 0 and score >= REPEAT and facts[best] == mine:
            old = kept[best]
            dates = (set(old.earlier) | {old.day} | set(e.earlier)) - {e.day}
            kept[best] = Dated(e.day, e.text, tuple(sorted(dates)), e.supersedes or old.supersedes)
        elif best >= 0 and score >= CHANGED:
            old = kept[best]
            if old.text == e.text:  # the same wording re-decided with facts equal by construction
                continue
            kept[best] = replace(e, supersedes=f"{old.day.isoformat()}: {old.text}")
            facts[best] = mine
        else:
            alike.append(len(kept))
            kept.append(e)
            origin.append(position)
            facts.append(mine)
    return list(zip(kept, origin, strict=True))


def collapse_bullets(bullets: Sequence[str]) -> list[str]:
    """One day's bullets under one topic, in order, with a repeat said once (where it was first said) and a
    changed decision written where the old one was, naming it."""
    day = date(2000, 1, 1)
    out = sorted(_collapse(Dated(day, b) for b in bullets), key=lambda d_first: d_first[1])
    return [d.text + (f" (supersedes: {d.supersedes.partition(': ')[2]})" if d.supersedes else "") for d, _ in out]
