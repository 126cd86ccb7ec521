"""The compaction job and the seed's weekly trigger: Sunday 03:00 UTC, evaluate first, act only when a
threshold is met (the run's `tier_volumes` decides; with nothing to do the run ends with a report saying why)."""

import dagster as dg

from memory_pipeline.compaction.tiers import measure, memory_root
from memory_pipeline.compaction.triggers import evaluate
from memory_pipeline.defs.compaction.assets import GROUP, REQUESTED_BY_TAG, TRIGGER_TAG
from memory_pipeline.defs.compaction.partitions import partition_for, weekly_partitions
from memory_pipeline.resources import MemoryStoreResource

WEEKLY_CRON = "0 3 * * 0"
WEEKLY_TZ = "UTC"

tiered_compaction = dg.define_asset_job(
    "tiered_compaction",
    selection=dg.AssetSelection.groups(GROUP),
    partitions_def=weekly_partitions,
    description="Measure the tiers, evaluate the triggers, then working → episodic → semantic and a report; "
    "`memory-pipeline compact` does the same from a shell. Weekly from weekly_compaction_schedule or from the "
    "volume sensors; after a failure read the step's log and the compaction report, then run it again.",
    tags={"memory_pipeline/compaction": "tiered"},
)


@dg.schedule(
    name="weekly_compaction_schedule",
    job=tiered_compaction,
    cron_schedule=WEEKLY_CRON,
    execution_timezone=WEEKLY_TZ,
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Sunday 03:00 UTC: a tiered_compaction run that evaluates the tiers first and acts only when a "
    "threshold is met (the report says why when it does nothing). Stopped by default; a failed week is run "
    "again from its partition.",
)
def weekly_compaction_schedule(context: dg.ScheduleEvaluationContext, store: MemoryStoreResource) -> dg.RunRequest:
    """Always a run (never approved): its first step evaluates, and acts only when a threshold is met."""
    now = context.scheduled_execution_time
    fired = "none"
    if memory_root(store.home_path).is_dir():
        fired = evaluate(measure(store.home_path, now)).primary or "none"
    return dg.RunRequest(
        partition_key=partition_for(now),
        run_config={"ops": {"tier_volumes": {"config": {"trigger": "weekly", "as_of": now.isoformat()}}}},
        tags={TRIGGER_TAG: fired, REQUESTED_BY_TAG: "weekly"},
    )
