"""Weekly partitions aligned with the seed's cron (Sunday 03:00 UTC).

A partition is the week a run acted in: key `2026-11-01` is the window Sun 2026-11-01 03:00 → Sun 11-08 03:00
UTC. `end_offset=1` makes the week in progress a partition, so a sensor can act mid-week. The run's "now" is
its clock (config `as_of`, else the engine's clock) clamped to the partition's end: the current week acts on
the present; a backfill of a past week acts as of that week's end, so it never moves a file that was not yet
due then. A partition that starts after "now" is refused.
"""

from __future__ import annotations

from datetime import datetime

import dagster as dg

from memory_pipeline.compaction.tiers import aware_utc

weekly_partitions = dg.WeeklyPartitionsDefinition(
    start_date="2025-01-05", day_offset=0, hour_offset=3, timezone="UTC", end_offset=1
)


def partition_for(now: datetime) -> str:
    """The week that contains `now`."""
    return weekly_partitions.get_partition_key_for_timestamp(aware_utc(now).timestamp())


def clamp_to_window(clock: datetime, partition_key: str) -> datetime:
    clock = aware_utc(clock)
    window = weekly_partitions.time_window_for_partition_key(partition_key)
    if window.start > clock:
        raise ValueError(f"partition {partition_key} starts at {window.start:%Y-%m-%d %H:%M} UTC, after now ({clock})")
    return min(clock, window.end)
