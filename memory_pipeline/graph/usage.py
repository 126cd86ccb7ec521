"""Deterministic usage decay (seed 004 §9): once per day bucket the decayed count is multiplied by the
factor (0.95), and every inclusion in that bucket adds 1. A memory stores (total, decayed, day) where
`decayed` is the value as of the end of `day`; reading it later decays by whole days only, so the value does
not jitter with the time of day."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

DEFAULT_FACTOR = 0.95
DIGITS = 9  # rounding after every update: the same events always give the same stored number


@dataclass(frozen=True)
class UsageState:
    total: int = 0
    decayed: float = 0.0
    day: date | None = None


def day_bucket(ts: datetime | date) -> date:
    """The UTC day an instant falls in (timestamps in the store are naive UTC)."""
    return ts.date() if isinstance(ts, datetime) else ts


def decayed_as_of(state: UsageState, as_of: date, factor: float = DEFAULT_FACTOR) -> float:
    """The decayed count at the end of day `as_of` (no inclusions after `state.day`)."""
    if state.day is None or state.decayed == 0:
        return 0.0
    days = (as_of - state.day).days
    if days <= 0:
        return state.decayed
    return round(state.decayed * factor**days, DIGITS)


def record(state: UsageState, day: date, count: int = 1, factor: float = DEFAULT_FACTOR) -> UsageState:
    """Fold `count` inclusions on `day` into the state. A late event (a day before `state.day`) adds its
    already-decayed weight, so the result equals processing the events in day order."""
    if count < 1:
        raise ValueError(f"inclusion count must be ≥ 1, got {count}")
    if state.day is None:
        return UsageState(state.total + count, float(count), day)
    if day >= state.day:
        value = decayed_as_of(state, day, factor) + count
        return UsageState(state.total + count, round(value, DIGITS), day)
    late = count * factor ** (state.day - day).days
    return UsageState(state.total + count, round(state.decayed + late, DIGITS), state.day)


def replay(
    events: list[tuple[date, int]], factor: float = DEFAULT_FACTOR, start: UsageState | None = None
) -> UsageState:
    """Apply events in day order (ties keep their order): the canonical, order-independent result."""
    state = start or UsageState()
    for day, count in sorted(events, key=lambda e: e[0]):
        state = record(state, day, count, factor)
    return state
