"""Triggers on quantised state (seed 004 §8): ingest spike → spam-family compaction; outbox critical → pause."""

from datetime import timedelta
from pathlib import Path

import dagster as dg

from memory_pipeline.defs.graph.sensors import compaction_triggers, outbox_drain_sensor
from memory_pipeline.graph.triggers import INGEST_SPIKE, OUTBOX_CRITICAL, StoreCounts, TriggerParams, decide, quantise
from memory_pipeline.store import outbox
from memory_pipeline_tests.graph.helpers import NOW, make_workspace, memory, resources


def test_quantised_flags_and_decisions() -> None:
    p = TriggerParams(spike_factor=4, min_spike=50, baseline_hours=168, outbox_critical=100)
    calm = StoreCounts(last_hour=40, baseline=168 * 10, outbox_open=0)
    assert quantise(calm, p) == frozenset()
    spike = StoreCounts(last_hour=60, baseline=168 * 10, outbox_open=0, spam_families=("spam:promo",))
    assert quantise(spike, p) == {INGEST_SPIKE} and decide(quantise(spike, p), spike).compact_spam
    both = StoreCounts(last_hour=60, baseline=0, outbox_open=100, spam_families=("spam:promo",))
    d = decide(quantise(both, p), both)
    assert quantise(both, p) == {INGEST_SPIKE, OUTBOX_CRITICAL} and d.paused and not d.compact_spam


def spam_store(home: Path, n: int) -> None:
    spam = [
        memory(f"spam{i}", f"buy now promo {i}", (i % 50) / (24 * 60), keys=["spam:promo"], tags=["spam/promo"])
        for i in range(n)
    ]
    make_workspace(home, [*spam, memory("old", "an old note", 20)])


def test_spike_requests_spam_compaction_once_per_hour_and_critical_outbox_pauses(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    spam_store(home, 60)
    res = resources(home, outbox_critical=5)
    with dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(), resources=res) as ctx:
        result = compaction_triggers(ctx)
    assert isinstance(result, dg.SensorResult) and len(result.run_requests) == 1
    request = result.run_requests[0]
    assert request.run_config["ops"]["clusters"]["config"] == {"source": "keys", "key_prefixes": "spam:"}
    with dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(), resources=res, cursor=result.cursor) as ctx:
        assert isinstance(compaction_triggers(ctx), dg.SkipReason)  # same hour: not requested twice

    from memory_pipeline.store import MemoryStore

    store = MemoryStore(home / "memory.duckdb")
    with store.transaction() as con:
        outbox.enqueue_compaction(
            con,
            index_names=["vectors"],
            summary_id="s",
            summary_payload={},
            source_ids=["a", "b", "c", "d"],
            run_id="r",
            now=NOW - timedelta(hours=1),
        )
    with dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(), resources=res) as ctx:
        paused = compaction_triggers(ctx)
    assert isinstance(paused, dg.SkipReason) and "compaction paused: ops/outbox-critical" in paused.skip_message
    with dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(), resources=res) as ctx:
        drain = outbox_drain_sensor(ctx)
    assert isinstance(drain, dg.SensorResult) and len(drain.run_requests) == 1
