"""Validity as a function of the store's events: when each memory did not hold, and which memory held instead.

The events are the supersessions a night (or a re-statement) recorded, what took each back (an operator's undo
or a rollback: it never happened; a re-statement of the older value: it held until then), and which memories
are readable (a forgotten memory is read by nothing, so it supersedes nothing: the version before it holds
again, or the one after it, whichever is readable). Re-statements are events too: a memory stated again holds
from then, whatever was stated between. Pure logic: the store is read by `store.validity`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

ROLLBACK = "rollback:"
RESTATED = "restate"


@dataclass(frozen=True)
class Edge:
    """One recorded supersession: `old` stopped holding at `until`, `new` held instead."""

    old: str
    new: str
    until: datetime
    reverted_at: datetime | None = None
    reverted_by: str | None = None
    run_id: str = ""


@dataclass(frozen=True)
class Span:
    """A time `memory` did not hold: from `start` until `end` (None: still), `by` held instead."""

    start: datetime
    end: datetime | None
    by: str
    run_id: str = ""


def _counts(e: Edge) -> bool:
    """A supersession that happened: not undone by an operator nor taken back by a rollback."""
    return e.reverted_at is None or e.reverted_by == RESTATED


def _live_successor(edge: Edge, out: Mapping[str, list[Edge]], live: set[str]) -> Edge | None:
    """The edge into the first readable memory after `edge.old` along supersessions still in force: a forgotten
    successor hands over to its own successor (from when that one took over), or to nobody."""
    seen = {edge.old}
    e: Edge | None = edge
    while e is not None and e.new not in live:
        if e.new in seen:
            return None
        seen.add(e.new)
        e = next((n for n in out.get(e.new, []) if n.reverted_at is None), None)
    return e


def derive(edges: Iterable[Edge], live: Iterable[str]) -> dict[str, list[Span]]:
    """Every readable memory's spans of not holding, in time order, from the store's events."""
    alive = set(live)
    out: dict[str, list[Edge]] = {}
    for e in edges:
        if _counts(e) and e.old != e.new:
            out.setdefault(e.old, []).append(e)
    spans: dict[str, list[Span]] = {}
    for old, es in out.items():
        if old not in alive:
            continue
        for e in es:
            s = _live_successor(e, out, alive)
            if s is None:
                continue
            start = max(e.until, s.until)
            end = e.reverted_at  # a re-statement of `old` ended it; None: in force
            if end is not None and end <= start:
                continue
            spans.setdefault(old, []).append(Span(start, end, s.new, e.run_id))
    for v in spans.values():
        v.sort(key=lambda sp: sp.start)
    return spans


def mark_at(spans: Iterable[Span], as_of: datetime | None) -> Span | None:
    """The span a memory is in at `as_of` (None: now), if it did not hold then."""
    for sp in spans:
        if as_of is None:
            if sp.end is None:
                return sp
        elif sp.start <= as_of and (sp.end is None or as_of < sp.end):
            return sp
    return None


def stated_at(statements: Iterable[datetime], as_of: datetime | None) -> datetime | None:
    """A memory's last statement at or before `as_of` (None: now)."""
    held = [t for t in statements if as_of is None or t <= as_of]
    return max(held) if held else None
