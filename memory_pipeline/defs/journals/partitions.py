"""Daily and weekly partitions of the journal pipeline; timezone and first day from the environment."""

from __future__ import annotations

import os

import dagster as dg

DEFAULT_START = "2022-01-01"  # early enough for LoCoMo's 2022–2023 conversations and the 2026 sample


def journal_timezone() -> str:
    return os.environ.get("MEMORY_PIPELINE_JOURNAL_TZ") or "UTC"


def journal_start() -> str:
    return os.environ.get("MEMORY_PIPELINE_JOURNAL_START") or DEFAULT_START


daily_partitions = dg.DailyPartitionsDefinition(start_date=journal_start(), timezone=journal_timezone())
# Weeks run Sunday–Saturday, so the weekly rollup runs on Sunday, once Saturday's journal exists.
weekly_partitions = dg.WeeklyPartitionsDefinition(start_date=journal_start(), timezone=journal_timezone())
