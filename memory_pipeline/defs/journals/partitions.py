"""Daily, weekly and monthly partitions of the journal pipeline; timezone and first day from the environment."""

from __future__ import annotations

import os

import dagster as dg

DEFAULT_START = "2022-01-01"  # early enough for LoCoMo's 2022–2023 conversations and the 2026 sample


def journal_timezone() -> str:
    return os.environ.get("MEMORY_PIPELINE_JOURNAL_TZ") or "UTC"


def journal_start() -> str:
    return os.environ.get("MEMORY_PIPELINE_JOURNAL_START") or DEFAULT_START


# end_offset=1: today is a partition too ("the day so far"), so a pre-compaction flush (seed 001 §6.4) can
# build today's journal now; the 00:15 schedule still targets the day that just closed, which rebuilds it whole.
daily_partitions = dg.DailyPartitionsDefinition(start_date=journal_start(), timezone=journal_timezone(), end_offset=1)
# Weeks run Sunday–Saturday, so the weekly rollup runs on Sunday, once Saturday's journal exists. The week in
# progress is a partition too (end_offset=1): a flush merges today's durable items into MEMORY.md at once.
weekly_partitions = dg.WeeklyPartitionsDefinition(
    start_date=journal_start(), timezone=journal_timezone(), end_offset=1
)
# Months of the monthly distillation (seed 001 §8.4): closed months only (end_offset=0), so the schedule's
# "latest partition" on the 1st is the month that just ended.
monthly_partitions = dg.MonthlyPartitionsDefinition(start_date=journal_start(), timezone=journal_timezone())
