"""Volume sensors: evaluate the seed's thresholds between weekly runs and request a compaction run, tagged
with the trigger. The cursor holds the thresholds that fired at the last request: the same state never
fires twice (a Tier C run that stays blocked, or an overload of files too young to move, would otherwise
request a run every tick); once the thresholds clear, the cursor clears and the sensor is armed again."""

import dagster as dg

from memory_pipeline.compaction.tiers import measure, memory_root
from memory_pipeline.compaction.triggers import PRIORITY, evaluate
from memory_pipeline.defs.compaction.assets import REQUESTED_BY_TAG, TRIGGER_TAG
from memory_pipeline.defs.compaction.partitions import partition_for
from memory_pipeline.defs.compaction.schedules import tiered_compaction
from memory_pipeline.resources import EngineConfig, MemoryStoreResource

IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


def build_volume_sensor(name: str, thresholds: tuple[str, ...], description: str) -> dg.SensorDefinition:
    @dg.sensor(
        name=name,
        job=tiered_compaction,
        minimum_interval_seconds=300,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description=description,
    )
    def _sensor(
        context: dg.SensorEvaluationContext, store: MemoryStoreResource, engine: EngineConfig
    ) -> dg.RunRequest | dg.SkipReason:
        if not memory_root(store.home_path).is_dir():
            return dg.SkipReason(f"no memory tiers in {store.home_path}")
        now = engine.now()
        evaluation = evaluate(measure(store.home_path, now))
        fired = [t for t in evaluation.fired if t.name in thresholds]
        state = ",".join(t.name for t in fired)
        if not fired:
            context.update_cursor("")
            return dg.SkipReason("below every threshold: " + "; ".join(
                t.describe() for t in evaluation.thresholds if t.name in thresholds))
        if state == (context.cursor or ""):
            return dg.SkipReason(f"already requested a run for this state ({state})")
        running = context.instance.get_runs(
            dg.RunsFilter(statuses=IN_FLIGHT, tags={"memory_pipeline/compaction": "tiered"}), limit=1
        )
        if running:  # the cursor is left alone: the next tick asks again once that run is done
            return dg.SkipReason(f"compaction run {running[0].run_id} in flight")
        context.update_cursor(state)
        trigger = next(p for p in PRIORITY if any(t.trigger == p for t in fired))
        return dg.RunRequest(
            run_key=f"{name}:{state}:{now:%Y%m%dT%H%M%S}",
            partition_key=partition_for(now),
            run_config={"ops": {"tier_volumes": {"config": {"trigger": f"sensor:{name}"}}}},
            tags={TRIGGER_TAG: trigger, REQUESTED_BY_TAG: f"sensor:{name}",
                  "memory_pipeline/compaction_thresholds": state},
        )

    return _sensor


semantic_limit_sensor = build_volume_sensor(
    "semantic_limit_sensor",
    ("semantic_tokens_hard_limit", "semantic_tokens_risk"),
    "A semantic file above the risk threshold (1020 tokens) or the hard limit (1200): requests a run that waits "
    "for approval (run config approved: true, or `memory-pipeline compact --approve`).",
)
working_volume_sensor = build_volume_sensor(
    "working_volume_sensor",
    ("working_file_count", "working_total_tokens", "working_oldest_age_days"),
    "working/: > 10 files, > 4000 tokens or oldest > 10 days.",
)
episodic_volume_sensor = build_volume_sensor(
    "episodic_volume_sensor",
    ("episodic_file_count", "episodic_total_tokens", "episodic_oldest_age_days"),
    "episodic/: > 20 files, > 8000 tokens or oldest > 45 days.",
)
SENSORS = [semantic_limit_sensor, working_volume_sensor, episodic_volume_sensor]
