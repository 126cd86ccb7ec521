"""Triggers on quantised store state (seed 004 §8): compact spam families when the ingest rate spikes,
pause compaction while the outbox is critical, drain the outbox when it has work."""

from datetime import timedelta

import dagster as dg

from memory_pipeline.defs.abstraction.schedules import nightly_consolidation
from memory_pipeline.defs.graph.assets import drain_outbox_job
from memory_pipeline.graph.triggers import StoreCounts, TriggerParams, decide, quantise
from memory_pipeline.operator.run_guard import busy_reason
from memory_pipeline.resources import EngineConfig, MemoryStoreResource
from memory_pipeline.store import outbox

SPAM_PREFIX = "spam:"


def store_counts(store: MemoryStoreResource, engine: EngineConfig, params: TriggerParams) -> StoreCounts:
    now = engine.now()
    hour_ago = now - timedelta(hours=1)
    with store.open().connect() as con:
        last_hour, baseline = con.execute(
            "SELECT count(*) FILTER (WHERE created_at >= ? AND created_at <= ?), "
            "count(*) FILTER (WHERE created_at >= ? AND created_at < ?) FROM memories WHERE kind <> 'summary'",
            [hour_ago, now, hour_ago - timedelta(hours=params.baseline_hours), hour_ago],
        ).fetchall()[0]
        families = con.execute(
            "SELECT DISTINCT k FROM (SELECT unnest(nexus_keys) AS k FROM memories WHERE created_at >= ? "
            "AND created_at <= ? AND lifecycle = 'active') WHERE starts_with(k, ?) ORDER BY k",
            [hour_ago, now, SPAM_PREFIX],
        ).fetchall()
        open_actions = outbox.open_count(con)
    return StoreCounts(int(last_hour), int(baseline), open_actions, tuple(f[0] for f in families))


@dg.sensor(
    jobs=[nightly_consolidation],
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="When an hour brings at least 4 times the usual number of memories (at least 50) and some of "
    "them carry a `spam:<family>` key, requests a consolidation of those families' memories only; when too "
    "many updates wait for the external search indexes, requests none (and the clusters step pauses itself).",
)
def compaction_triggers(
    context: dg.SensorEvaluationContext, store: MemoryStoreResource, engine: EngineConfig
) -> dg.SensorResult | dg.SkipReason:
    params = TriggerParams(outbox_critical=engine.outbox_critical)
    counts = store_counts(store, engine, params)
    flags = quantise(counts, params)
    decision = decide(flags, counts)
    if not decision.compact_spam:
        return dg.SkipReason(decision.reason)
    bucket = engine.now().strftime("%Y-%m-%dT%H")  # one request per hour bucket of a spike
    if context.cursor == bucket:
        return dg.SkipReason(f"already requested for {bucket}: {decision.reason}")
    busy = busy_reason(context.instance, [nightly_consolidation.name])
    if busy:  # the cursor is left alone: the next tick asks again once that run is done
        return dg.SkipReason(busy)
    request = dg.RunRequest(
        run_key=f"spam-compaction-{bucket}",
        job_name=nightly_consolidation.name,
        run_config={"ops": {"clusters": {"config": {"source": "keys", "key_prefixes": SPAM_PREFIX}}}},
        tags={"memory_pipeline/trigger": "ingest-spike", "memory_pipeline/flags": ",".join(sorted(flags))},
    )
    return dg.SensorResult(run_requests=[request], cursor=bucket)


@dg.sensor(
    jobs=[drain_outbox_job],
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Requests a run of drain_outbox whenever updates wait for the external search indexes.",
)
def outbox_drain_sensor(
    context: dg.SensorEvaluationContext, store: MemoryStoreResource
) -> dg.SensorResult | dg.SkipReason:
    with store.open().connect() as con:
        open_actions = outbox.open_count(con)
        newest = con.execute("SELECT max(created_at) FROM outbox WHERE status <> 'done'").fetchall()[0][0]
    if not open_actions:
        return dg.SkipReason("outbox empty")
    key = str(newest)
    if context.cursor == key:
        return dg.SkipReason(f"drain already requested for actions up to {key}")
    busy = busy_reason(context.instance, [drain_outbox_job.name])
    if busy:
        return dg.SkipReason(busy)
    return dg.SensorResult(run_requests=[dg.RunRequest(run_key=f"drain-{key}")], cursor=key)
