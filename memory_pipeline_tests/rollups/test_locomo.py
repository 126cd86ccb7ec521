"""The hierarchy built from real conversations: LoCoMo (five conversations, 19–32 sessions each), one
workspace (= one agent) per conversation, sessions imported through the journals domain's own code."""

import json
from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.defs.rollups.sensors import rollups_sensor
from memory_pipeline.rollups import build
from memory_pipeline.rollups.cli.backfill import backfill
from memory_pipeline.rollups.schema import validate
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.db import atomic, utcnow
from memory_pipeline_tests.conftest import resources_for
from memory_pipeline_tests.rollups.helpers import LOCOMO
from memory_pipeline_tests.rollups.test_rollups import rollup_defs

pytestmark = pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo not found at {LOCOMO}")
CONVERSATIONS = ["conv-26", "conv-41", "conv-43", "conv-47", "conv-49"]


def non_empty_sessions(sample_id: str) -> int:
    sample = next(s for s in json.loads(LOCOMO.read_text()) if s["sample_id"] == sample_id)
    conv = sample["conversation"]
    return sum(1 for k, v in conv.items() if k.startswith("session_") and not k.endswith("date_time") and v)


def transcript_days(paths: list[Path]) -> list[date]:
    return sorted({date(int(p.parts[-4]), int(p.parts[-3]), int(p.parts[-2])) for p in paths})


def import_conversation(home: Path, sample_id: str) -> tuple[MemoryStore, list[date]]:
    """LoCoMo → transcripts (evaluation's locomo_to_transcripts) → the store's `sessions` table, day by day, with the
    same parse-and-replace the journals `sessions` asset runs per daily partition (without a run per day)."""
    from memory_pipeline.evaluation.locomo_transcripts import locomo_to_transcripts
    from memory_pipeline.journals import tables
    from memory_pipeline.journals.knowledge_writes import raw_root
    from memory_pipeline.journals.transcript import read_day

    home.mkdir(parents=True)
    paths = locomo_to_transcripts(LOCOMO, raw_root(home), [sample_id])
    store = MemoryStore(home / "memory.duckdb")
    store.migrate()
    days = transcript_days(paths)
    with store.connect() as con:
        for day in days:
            parsed, rejected = read_day(raw_root(home), day, workspace=home)
            assert not rejected, rejected
            with atomic(con):
                tables.replace_day_sessions(con, day, tables.to_tables(day, parsed, utcnow())["sessions"])
    return store, days


def test_locomo_hierarchy_per_conversation(tmp_path: Path) -> None:
    for sample_id in CONVERSATIONS:
        home = tmp_path / sample_id
        store, _ = import_conversation(home, sample_id)
        n = non_empty_sessions(sample_id)
        summary = backfill(rollup_defs(home), dg.DagsterInstance.ephemeral(), store)
        assert summary.failed is None and summary.sessions == n
        assert len(summary.cores_built) == n // 8, sample_id  # 19 → 2, 32 → 4, 29 → 3, 31 → 3, 25 → 3
        assert summary.spheres_built == []  # 64 sessions make a Sphere; no conversation has that many
        with store.connect() as con:
            chronological = [
                r[0] for r in con.execute("SELECT session_id FROM sessions ORDER BY started_at").fetchall()
            ]
        for i, key in enumerate(summary.cores_built):
            doc = validate(json.loads((build.cores_dir(home) / f"{key}.json").read_text()), "core")
            assert doc["source_sessions"] == chronological[8 * i : 8 * i + 8]
            assert doc["timestamp_start"] < doc["timestamp_end"]
            assert doc["aggregated_state"]["interaction_count"] > 8  # real turns counted
            assert all(a["from_session"] in doc["source_sessions"] for a in doc["salience_anchors"])
            narrative = doc["compressed_narrative"]
            assert len(narrative["summary"]) > 200 and narrative["recurring_themes"]
            names = {p.lower() for p in doc["aggregated_state"]["participants"]}
            assert not names & set(narrative["recurring_themes"])  # speakers are not themes
        counters = json.loads(build.counters_path(home).read_text())
        assert (counters["Session_seq"], counters["Core_seq"], counters["Sphere_seq"]) == (n % 8, n // 8, 0)


@pytest.mark.slow
def test_locomo_through_the_journals_sessions_asset_and_the_sensor(tmp_path: Path) -> None:
    """conv-26 end to end in Dagster: the journals `sessions` asset materialised for each of the conversation's
    days, then sensor ticks add and request exactly the Cores its 19 sessions close."""
    from memory_pipeline.defs.journals.assets import sessions
    from memory_pipeline.defs.journals.common import IO_MANAGER
    from memory_pipeline.defs.journals.resources import workspace_parquet_io_manager
    from memory_pipeline.defs.rollups.assets import cores

    home = tmp_path / "conv-26"
    days = transcript_days(_transcripts(home, "conv-26"))
    shared = resources_for(home)
    resources = {IO_MANAGER: workspace_parquet_io_manager, **shared}
    instance = dg.DagsterInstance.ephemeral()
    cursor = None
    for day in days:
        assert dg.materialize([sessions], partition_key=day.isoformat(), instance=instance, resources=resources).success
        context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"store": shared["store"]})
        result = rollups_sensor(context)
        cursor = context.cursor
        for request in getattr(result, "dynamic_partitions_requests", None) or []:
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        for run in getattr(result, "run_requests", None) or []:
            if run.job_name == "rollup_cores":  # one key, or a range in the tags
                assert dg.materialize(
                    [cores], partition_key=run.partition_key, instance=instance, resources=resources, tags=run.tags
                ).success
    assert instance.get_dynamic_partitions("rollup_cores") == ["core_000_000", "core_000_001"]
    assert sorted(p.name for p in build.cores_dir(home).iterdir()) == ["core_000_000.json", "core_000_001.json"]


def _transcripts(home: Path, sample_id: str) -> list[Path]:
    from memory_pipeline.evaluation.locomo_transcripts import locomo_to_transcripts
    from memory_pipeline.journals.knowledge_writes import raw_root

    home.mkdir(parents=True)
    return locomo_to_transcripts(LOCOMO, raw_root(home), [sample_id])
