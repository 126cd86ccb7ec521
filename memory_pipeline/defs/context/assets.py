"""Seed 001 §5.5 in Dagster: the weekly `gate_tuning` summary of the gate log, per topic, as numeric metadata."""


from dataclasses import asdict
from datetime import datetime

import dagster as dg

from memory_pipeline.context.gate import read_log
from memory_pipeline.context.service import GATE_LOG
from memory_pipeline.context.tuning import TopicTuning, summarise
from memory_pipeline.resources import MemoryStoreResource

GROUP = "context"
weekly = dg.WeeklyPartitionsDefinition(start_date="2026-01-04", timezone="UTC")


@dg.asset(
    group_name=GROUP,
    partitions_def=weekly,
    kinds={"json"},
    tags={"component": "GateTuning"},
    # The gate's tuning is seed 001 §5.5.
    description="Per topic over the week: decisions, activations, gate YES/NO rates, the Tier-2 score "
    "distribution and the threshold that best reproduces the gate's answers.",
)
def gate_tuning(context: dg.AssetExecutionContext, store: MemoryStoreResource) -> dg.MaterializeResult:
    window = context.partition_time_window
    start, end = window.start.isoformat(), window.end.isoformat()

    def in_week(ts: str) -> bool:
        return start <= datetime.fromisoformat(ts).isoformat() < end

    decisions = [d for d in read_log(store.home_path / GATE_LOG) if in_week(d.timestamp)]
    rows = summarise(decisions)
    metadata: dict[str, dg.RawMetadataValue] = {"decisions": len(decisions), "topics": len(rows)}
    for r in rows:
        for key, value in asdict(r).items():
            if key != "topic" and value is not None:
                metadata[f"{r.topic}/{key}"] = value
    metadata["summary"] = dg.MetadataValue.md(_table(rows) if rows else "_no gate decisions this week_")
    return dg.MaterializeResult(metadata=metadata)


def _table(rows: list[TopicTuning]) -> str:
    head = "| topic | decisions | activations | gate calls | YES rate | Tier-2 p50 | suggested |\n" + "|---" * 7 + "|"
    body = [
        f"| {r.topic} | {r.decisions} | {r.activations} | {r.gate_calls} | "
        f"{'' if r.yes_rate is None else f'{r.yes_rate:.2f}'} | {r.tier2_p50:.3f} | "
        f"{'—' if r.suggested_threshold is None else r.suggested_threshold} |"
        for r in rows
    ]
    return "\n".join([head, *body])


gate_tuning_job = dg.define_asset_job(
    "gate_tuning_job", selection=[gate_tuning], partitions_def=weekly,
    description="Summarises one week of the context gate's log into gate_tuning's metadata (a table per topic, "
    "suggested thresholds). It only reads the log, so a failed week is re-materialized once the cause in the "
    "step's log is fixed.",
)
gate_tuning_schedule = dg.build_schedule_from_partitioned_job(
    gate_tuning_job, hour_of_day=4, default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Sunday 04:00 UTC: runs gate_tuning_job for the week that just closed. Stopped by default; a "
    "failed run is re-run from the partition's page.",
)
