"""Jobs and schedules: the day's pipeline just after the day closes, the weekly rollup on Sunday."""

from __future__ import annotations

from datetime import timedelta

import dagster as dg

from memory_pipeline.defs.journals.assets import DAILY_ASSETS
from memory_pipeline.defs.journals.knowledge_files import journal_archive, memory_md
from memory_pipeline.defs.journals.partitions import daily_partitions, journal_timezone, weekly_partitions

journal_daily = dg.define_asset_job(
    "journal_daily",
    selection=dg.AssetSelection.assets(*DAILY_ASSETS),
    partitions_def=daily_partitions,
    description="Transcripts → sessions → session memories → journal, for one day; a backfill of a range of days "
    "(the reconstruction) is one run over the range. Rebuilding a day is safe: after a failure fix the cause in "
    "the step's log and re-materialize that day.",
)
journal_weekly = dg.define_asset_job(
    "journal_weekly",
    selection=dg.AssetSelection.assets(memory_md),
    partitions_def=weekly_partitions,
    description="MEMORY.md from the week's journals (a range of weeks: one run, the weeks in order). Runs after "
    "the week's journals exist; after a failure re-materialize the week.",
)
journal_archive_job = dg.define_asset_job(
    "journal_archive_job", selection=dg.AssetSelection.assets(journal_archive),
    description="Moves journals older than the retention (MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS, default 90) to "
    "archive/journal/, deleting nothing; weekly from journal_archive_schedule. "
    "After a failure fix the cause in the step's log and run it again.",
)

# 00:15 processes the day that just closed. The daily partitions include today (end_offset=1, for the flush),
# so the schedule names yesterday's partition itself rather than "the latest partition".
@dg.schedule(
    cron_schedule="15 0 * * *",
    job=journal_daily,
    execution_timezone=journal_timezone(),
    name="journal_daily_schedule",
    description="00:15 every day (journal timezone, MEMORY_PIPELINE_JOURNAL_TZ): journal_daily for the day that "
    "just closed. Stopped by default; a failed day is re-materialized from its partition.",
)
def journal_daily_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    assert context.scheduled_execution_time is not None  # a cron schedule always has one
    day = (context.scheduled_execution_time - timedelta(days=1)).date().isoformat()
    return dg.RunRequest(run_key=day, partition_key=day)
# Sunday 01:00: the week Sunday–Saturday that just closed, after Saturday's journal (00:15); named explicitly,
# since the week in progress is a partition too.
@dg.schedule(
    cron_schedule="0 1 * * 0",
    job=journal_weekly,
    execution_timezone=journal_timezone(),
    name="journal_weekly_schedule",
    description="Sunday 01:00 (journal timezone): journal_weekly for the Sunday–Saturday week that just closed. "
    "Stopped by default; a failed week is re-materialized from its partition.",
)
def journal_weekly_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    assert context.scheduled_execution_time is not None
    week = (context.scheduled_execution_time - timedelta(days=7)).date().isoformat()
    return dg.RunRequest(run_key=week, partition_key=week)
journal_archive_schedule = dg.ScheduleDefinition(
    name="journal_archive_schedule",
    job=journal_archive_job,
    cron_schedule="0 2 * * 0",
    execution_timezone=journal_timezone(),
    description="Sunday 02:00 (journal timezone): journal_archive_job. Stopped by default; a failed run is "
    "launched again from the job's page.",
)

JOBS = [journal_daily, journal_weekly, journal_archive_job]
SCHEDULES = [journal_daily_schedule, journal_weekly_schedule, journal_archive_schedule]
