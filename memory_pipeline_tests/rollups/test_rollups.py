"""Cores and Spheres on dynamic partitions: the sensor, late sessions, schema failures, counters, backfill."""

import json
from datetime import timedelta
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.defs.rollups.assets import ASSETS, JOBS, cores, spheres
from memory_pipeline.defs.rollups.partitions import cores_partitions, spheres_partitions
from memory_pipeline.defs.rollups.sensors import rollups_sensor
from memory_pipeline.resources import MemoryStoreResource
from memory_pipeline.rollups import build, repository
from memory_pipeline.rollups.cli.backfill import backfill
from memory_pipeline.rollups.schema import RollupSchemaError, validate
from memory_pipeline_tests.conftest import resources_for
from memory_pipeline_tests.rollups.helpers import START, insert_sessions, session

RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


def rollup_defs(home: Path) -> dg.Definitions:
    """This domain alone (the code location's other domains are tested on their own)."""
    return dg.Definitions(assets=ASSETS, jobs=JOBS, resources=resources_for(home))


def tick(home: Path, instance: dg.DagsterInstance, cursor: str | None = None):
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"store": MemoryStoreResource(home=str(home))}
    )
    return rollups_sensor(context), context.cursor


def added(result) -> dict[str, list[str]]:
    if not isinstance(result, dg.SensorResult):
        return {}
    return {r.partitions_def_name: list(r.partition_keys) for r in result.dynamic_partitions_requests or []}


def test_sensor_adds_exactly_one_core_at_the_8th_session_and_nothing_at_the_7th(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    insert_sessions(home, [session(i) for i in range(1, 8)])
    instance = dg.DagsterInstance.ephemeral()
    result, cursor = tick(home, instance)
    assert added(result) == {}
    assert all(r.job_name == "rollup_assign" for r in result.run_requests)  # compression_meta only, no Core
    insert_sessions(home, [session(8)])
    result, cursor = tick(home, instance, cursor)
    assert added(result) == {"rollup_cores": ["core_000_000"]}
    assert [(r.job_name, r.partition_key) for r in result.run_requests] == [("rollup_cores", "core_000_000")]
    instance.add_dynamic_partitions(cores_partitions.name, ["core_000_000"])  # what the daemon does with the request
    again, _ = tick(home, instance, result.cursor)
    assert isinstance(again, dg.SkipReason) and "8 sessions to the next Core" in again.skip_message


def test_sphere_after_the_8th_core_is_built(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    store = insert_sessions(home, [session(i) for i in range(1, 65)])
    instance = dg.DagsterInstance.ephemeral()
    result, cursor = tick(home, instance)
    keys = added(result)["rollup_cores"]
    assert keys == [f"core_000_{c:03d}" for c in range(8)]
    [run] = [r for r in result.run_requests if r.job_name == "rollup_cores"]  # 8 Cores added together: one run
    assert (run.tags[RANGE_START], run.tags[RANGE_END]) == (keys[0], keys[7])
    instance.add_dynamic_partitions(cores_partitions.name, keys)
    for key in keys[:7]:
        build.build_core(store, home, key)
    result, cursor = tick(home, instance, result.cursor)
    assert added(result) == {}  # 7 Cores: no Sphere yet
    materialized = dg.materialize([cores], partition_key=keys[7], instance=instance, resources=resources_for(home))
    assert materialized.success
    result, _ = tick(home, instance, cursor)
    assert added(result) == {"rollup_spheres": ["sphere_000"]}
    assert [(r.job_name, r.partition_key) for r in result.run_requests] == [("rollup_spheres", "sphere_000")]
    instance.add_dynamic_partitions(spheres_partitions.name, ["sphere_000"])
    sphere = dg.materialize([spheres], partition_key="sphere_000", instance=instance, resources=resources_for(home))
    assert sphere.success
    doc = validate(json.loads((home / "knowledge" / "spheres" / "sphere_000.json").read_text()), "sphere")
    assert doc["source_cores"] == keys and doc["session_count"] == 64 and doc["core_count"] == 8
    assert doc["abstracted_knowledge"]["behavioral_patterns"] and doc["abstracted_knowledge"]["core_beliefs"]
    counters = json.loads((home / "knowledge" / "state" / "compression_counters.json").read_text())
    assert (counters["Session_seq"], counters["Core_seq"], counters["Sphere_seq"]) == (0, 0, 1)
    assert (counters["cores_built"], counters["spheres_built"]) == (8, 1) and counters["last_update"]


def test_core_document_has_every_seed_field_and_keeps_milestones_verbatim(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    sessions = [
        session(i, salience=0.3 + 0.05 * i, frontmatter={"stress": 0.1 * i, "warmth": 0.5}) for i in range(1, 9)
    ]
    sessions[5].text = "We finally shipped the release! Thank you so much, I'm grateful for your help tonight."
    sessions[5].salience = 0.95
    store = insert_sessions(home, sessions)
    built = build.build_core(store, home, "core_000_000")
    doc = json.loads(built.path.read_text())
    assert doc == built.document
    for key in (
        "core_id",
        "sphere_seq",
        "core_seq",
        "timestamp_start",
        "timestamp_end",
        "session_count",
        "source_sessions",
        "compressed_narrative",
        "aggregated_state",
        "salience_anchors",
        "meta",
    ):
        assert key in doc, key
    narrative = doc["compressed_narrative"]
    assert set(narrative) >= {"summary", "key_events", "recurring_themes", "emotional_arc"}
    assert [e["session_id"] for e in narrative["key_events"]] == [f"s{i:03d}" for i in range(1, 9)]
    assert narrative["key_events"][5]["emotion"] == "gratitude" and narrative["key_events"][5]["ri"] == 0.95
    assert "garden" in narrative["recurring_themes"]
    state = doc["aggregated_state"]
    assert state["avg_stress"] == pytest.approx(0.45) and state["avg_warmth"] == 0.5
    assert state["interaction_count"] == 32
    assert [m["session_id"] for m in doc["milestones"]] == ["s006"]  # salience > 0.8 only
    assert doc["milestones"][0]["text"] == sessions[5].text  # verbatim
    assert (
        doc["meta"]["compression_method"].startswith("extractive_offline")
        and "deterministic" in doc["meta"]["compression_method"]
    )
    assert set(doc["meta"]) >= {"compression_method", "compression_timestamp", "detail_retention"}
    # offline is deterministic: the same sessions give the same document (timestamps aside)
    again = build.build_core(store, home, "core_000_000", now=None).document
    strip = lambda d: {k: v for k, v in d.items() if k != "meta"}  # noqa: E731
    assert strip(again) == strip(doc)
    with store.connect() as con:  # originals kept: every session row is still there
        assert con.execute("SELECT count(*) FROM sessions").fetchall()[0][0] == 8


def test_late_older_session_goes_to_the_next_core_and_never_rewrites_a_closed_one(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    shuffled = [session(i) for i in (3, 1, 10, 2, 8, 5, 4, 9, 7, 6)]
    store = insert_sessions(home, shuffled)
    first = build.build_core(store, home, "core_000_000")
    assert first.document["source_sessions"] == [f"s{i:03d}" for i in range(1, 9)]  # chronological
    closed = first.path.read_bytes()
    late = session(99)
    late.started_at = START - timedelta(days=30)  # older than everything, arrives now
    insert_sessions(home, [late, *[session(i) for i in range(11, 16)]])
    second = build.build_core(store, home, "core_000_001")
    assert second.document["source_sessions"] == ["s009", "s010", "s099", "s011", "s012", "s013", "s014", "s015"]
    assert second.document["late_sessions"] == ["s099"]
    assert first.path.read_bytes() == closed
    with store.connect() as con:
        rows = dict(con.execute("SELECT session_id, core_id FROM compression_meta").fetchall())
        meta = con.execute(
            "SELECT session_seq, core_seq, sphere_seq, late FROM compression_meta WHERE session_id = 's099'"
        ).fetchall()[0]
    assert len(rows) == 16 and rows["s099"] == "core_000_001" and rows["s001"] == "core_000_000"
    assert meta == (2, 1, 0, True)


def test_invalid_document_fails_the_materialisation_naming_the_field(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    insert_sessions(home, [session(i, salience=1.7 if i == 4 else 0.5) for i in range(1, 9)])  # salience out of range
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(cores_partitions.name, ["core_000_000"])
    with pytest.raises(RollupSchemaError, match=r"field 'compressed_narrative\.key_events\[3\]\.ri'"):
        dg.materialize([cores], partition_key="core_000_000", instance=instance, resources=resources_for(home))
    assert not (home / "knowledge" / "cores" / "core_000_000.json").exists()
    with build.MemoryStore(home / "memory.duckdb").connect() as con:
        assert con.execute("SELECT count(*) FROM rollup_cores").fetchall()[0][0] == 0


def test_schema_names_missing_and_wrong_fields(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    store = insert_sessions(home, [session(i) for i in range(1, 9)])
    doc = build.build_core(store, home, "core_000_000").document
    broken = json.loads(json.dumps(doc))
    del broken["compressed_narrative"]["summary"]
    broken["aggregated_state"]["interaction_count"] = -1
    broken["session_count"] = 7
    with pytest.raises(RollupSchemaError) as info:
        validate(broken, "core")
    assert set(info.value.fields) == {
        "compressed_narrative.summary",
        "aggregated_state.interaction_count",
        "session_count",
    }
    assert "core core_000_000 fails core.schema.json" in str(info.value)
    with pytest.raises(RollupSchemaError, match="field 'meta.abstraction_level'"):
        validate({**{"sphere_id": "sphere_000"}, "meta": {}}, "sphere")


def test_a_core_that_is_not_closed_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    store = insert_sessions(home, [session(i) for i in range(1, 12)])
    with pytest.raises(repository.RollupError, match="core_000_001 holds sessions 9–16, but only 11 sessions"):
        build.build_core(store, home, "core_000_001")


def test_backfill_builds_every_core_then_every_sphere_in_order(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    store = insert_sessions(home, [session(i) for i in range(1, 133)])  # 16 Cores + 4 sessions, 2 Spheres
    instance = dg.DagsterInstance.ephemeral()
    defs = rollup_defs(home)
    summary = backfill(defs, instance, store)
    assert summary.failed is None
    assert summary.cores_built == [f"core_000_{c:03d}" for c in range(8)] + [f"core_001_{c:03d}" for c in range(8)]
    assert summary.spheres_built == ["sphere_000", "sphere_001"]
    assert len(summary.runs) == 3  # assignment, one single-run backfill of the Cores, one of the Spheres
    assert instance.get_dynamic_partitions("rollup_cores") == summary.cores_built
    assert sorted(p.name for p in (home / "knowledge" / "cores").iterdir()) == [
        f"{k}.json" for k in summary.cores_built
    ]
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM compression_meta").fetchall()[0][0] == 132
    again = backfill(defs, instance, store)
    assert (again.cores_built, again.spheres_built, again.failed) == ([], [], None)  # nothing rebuilt
