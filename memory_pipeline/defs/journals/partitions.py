"""Daily, weekly and monthly partitions of the journal pipeline; timezone and first day from the environment.

The first day is MEMORY_PIPELINE_JOURNAL_START when set, else the workspace's first transcript day (read when the
code location loads: reload it in the UI after importing older transcripts), else today: the UI shows no years of
"missing" journals before the agent's first conversation.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import dagster as dg

from memory_pipeline.journals.transcript import first_day
from memory_pipeline.settings import workspace_home

START_ENV = "MEMORY_PIPELINE_JOURNAL_START"


def journal_timezone() -> str:
    return os.environ.get("MEMORY_PIPELINE_JOURNAL_TZ") or "UTC"


def journal_start_and_source(environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(first journal day, where it comes from): the setting, the workspace's first transcript, or today."""
    env = os.environ if environ is None else environ
    if env.get(START_ENV):
        return env[START_ENV], START_ENV
    first = first_day(workspace_home(env) / "raw" / "conversations")
    if first is not None:
        return first.isoformat(), "the workspace's first transcript day"
    tz = ZoneInfo(env.get("MEMORY_PIPELINE_JOURNAL_TZ") or "UTC")
    return datetime.now(tz).date().isoformat(), "today (the workspace holds no transcripts yet)"


def journal_start() -> str:
    return journal_start_and_source()[0]


START, START_SOURCE = journal_start_and_source()
_first = date.fromisoformat(START)
WEEK_START = (_first - timedelta(days=(_first.weekday() + 1) % 7)).isoformat()  # the Sunday on or before it
MONTH_START = _first.replace(day=1).isoformat()  # so the first day's week and month are partitions too
START_NOTE = f"Partitions start at {START}: {START_SOURCE} (MEMORY_PIPELINE_JOURNAL_START sets another day)."


# end_offset=1: today is a partition too ("the day so far"), so a pre-compaction flush (seed 001 §6.4) can
# build today's journal now; the 00:15 schedule still targets the day that just closed, which rebuilds it whole.
daily_partitions = dg.DailyPartitionsDefinition(start_date=START, timezone=journal_timezone(), end_offset=1)
# Weeks run Sunday–Saturday, so the weekly rollup runs on Sunday, once Saturday's journal exists. The week in
# progress is a partition too (end_offset=1): a flush merges today's durable items into MEMORY.md at once.
weekly_partitions = dg.WeeklyPartitionsDefinition(
    start_date=WEEK_START, timezone=journal_timezone(), end_offset=1
)
# Months of the monthly distillation (seed 001 §8.4): closed months only (end_offset=0), so the schedule's
# "latest partition" on the 1st is the month that just ended.
monthly_partitions = dg.MonthlyPartitionsDefinition(start_date=MONTH_START, timezone=journal_timezone())
