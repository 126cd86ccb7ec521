"""Triggered compaction (seed 004 §8) on quantised state: counts become named flags, and decisions read
flags only, so the same counts always give the same decision.

- `ops/pressure-ingest-spike`: memories written in the last hour ≥ max(min_spike, factor × the hourly mean
  of the previous `baseline_hours`) — the seed's pressure/flood flag for this store.
- `ops/outbox-critical`: unfinished outbox actions ≥ critical — compaction pauses (no new deletes).
"""

from __future__ import annotations

from dataclasses import dataclass

INGEST_SPIKE = "ops/pressure-ingest-spike"
OUTBOX_CRITICAL = "ops/outbox-critical"


@dataclass(frozen=True)
class TriggerParams:
    spike_factor: float = 4.0
    min_spike: int = 50
    baseline_hours: int = 168
    outbox_critical: int = 10_000


@dataclass(frozen=True)
class StoreCounts:
    last_hour: int
    baseline: int  # memories written in the `baseline_hours` before the last hour
    outbox_open: int  # pending + claimed outbox actions
    spam_families: tuple[str, ...] = ()  # spam:<family> keys seen in the last hour


def quantise(counts: StoreCounts, params: TriggerParams) -> frozenset[str]:
    flags: set[str] = set()
    hourly_mean = counts.baseline / max(1, params.baseline_hours)
    if counts.last_hour >= max(params.min_spike, params.spike_factor * hourly_mean):
        flags.add(INGEST_SPIKE)
    if counts.outbox_open >= params.outbox_critical:
        flags.add(OUTBOX_CRITICAL)
    return frozenset(flags)


@dataclass(frozen=True)
class Decision:
    compact_spam: bool
    paused: bool
    reason: str


def decide(flags: frozenset[str], counts: StoreCounts) -> Decision:
    """Outbox critical wins: adding deletes while the external indexes lag would widen the gap."""
    if OUTBOX_CRITICAL in flags:
        return Decision(False, True, f"compaction paused: {OUTBOX_CRITICAL} ({counts.outbox_open} open actions)")
    if INGEST_SPIKE in flags and counts.spam_families:
        return Decision(
            True,
            False,
            f"{INGEST_SPIKE}: {counts.last_hour} memories in the last hour; compact spam families "
            + ", ".join(counts.spam_families),
        )
    if INGEST_SPIKE in flags:
        return Decision(False, False, f"{INGEST_SPIKE} but no spam family among the new memories")
    return Decision(False, False, "no trigger")
