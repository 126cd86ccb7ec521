"""No sensor asks for a run of a target that already has one queued or in flight, and
partitions added together are built by one run. Asserted from the sensors' answers against an instance that
holds such runs (what the daemon would evaluate), not from timing."""

from __future__ import annotations

import uuid
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.defs.rollups.partitions import cores_partitions
from memory_pipeline.defs.rollups.sensors import rollups_sensor
from memory_pipeline.defs.search.sensors import agent_writes_sensor, search_index_sensor, search_usage_sensor
from memory_pipeline.operator.instance import job_origin
from memory_pipeline.operator.run_guard import ActiveRun, in_the_way
from memory_pipeline.resources import EmbedderResource, MemoryStoreResource
from memory_pipeline.resources.embedder import MINILM
from memory_pipeline.search.usage_spool import append_now
from memory_pipeline_tests.rollups.helpers import insert_sessions, session

RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


def add_run(instance: dg.DagsterInstance, job: str, status: dg.DagsterRunStatus, assets: list[str] = ()) -> str:
    run_id = str(uuid.uuid4())
    selection = frozenset(dg.AssetKey.from_user_string(a) for a in assets) or None
    run = dg.DagsterRun(
        job_name=job, run_id=run_id, status=status, asset_selection=selection, remote_job_origin=job_origin(job)
    )
    instance.add_run(run)
    return run_id


def test_in_the_way_counts_unfinished_runs_of_the_job_or_of_the_asset() -> None:
    runs = [
        ActiveRun("a", "search_index_update", "STARTED", frozenset()),
        ActiveRun("b", "__ASSET_JOB", "QUEUED", frozenset({"search_index"})),
        ActiveRun("c", "search_index_update", "SUCCESS", frozenset()),
        ActiveRun("d", "rollup_cores", "QUEUED", frozenset()),
    ]
    assert [r.run_id for r in in_the_way(runs, ["search_index_update"], ["search_index"])] == ["a", "b"]
    assert [r.run_id for r in in_the_way(runs, ["rollup_spheres"])] == []


@pytest.mark.parametrize("status", [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTED])
def test_search_index_sensor_skips_while_an_index_run_is_queued_or_in_flight(
    tmp_path: Path, status: dg.DagsterRunStatus
) -> None:
    res = {"store": MemoryStoreResource(home=str(tmp_path)), "embedder": EmbedderResource(model=MINILM)}
    with dg.instance_for_test() as instance:
        run_id = add_run(instance, "search_index_update", status)
        result = search_index_sensor(dg.build_sensor_context(instance=instance, resources=res))
        assert not result.run_requests and run_id[:8] in (result.skip_reason.skip_message or "")
        instance.report_run_failed(instance.get_run_by_id(run_id), "test: it ended")  # finished: no longer in the way
        [request] = search_index_sensor(dg.build_sensor_context(instance=instance, resources=res)).run_requests
        assert request.job_name == "search_index_rebuild"  # no index in an empty workspace: a full build


def test_search_index_sensor_skips_while_the_automation_builds_the_index(tmp_path: Path) -> None:
    res = {"store": MemoryStoreResource(home=str(tmp_path)), "embedder": EmbedderResource(model=MINILM)}
    with dg.instance_for_test() as instance:
        add_run(instance, "__ASSET_JOB", dg.DagsterRunStatus.STARTED, ["search_index"])
        result = search_index_sensor(dg.build_sensor_context(instance=instance, resources=res))
        assert not result.run_requests and "is STARTED" in (result.skip_reason.skip_message or "")


def test_search_usage_sensor_skips_while_an_import_is_queued(tmp_path: Path) -> None:
    append_now(tmp_path, ["m-1"])
    res = {"store": MemoryStoreResource(home=str(tmp_path))}
    with dg.instance_for_test() as instance:
        add_run(instance, "search_usage_ingest", dg.DagsterRunStatus.QUEUED)
        result = search_usage_sensor(dg.build_sensor_context(instance=instance, resources=res))
        assert not result.run_requests and "search_usage_ingest run" in (result.skip_reason.skip_message or "")


def test_agent_writes_sensor_skips_while_an_import_is_queued_and_asks_once_it_is_not(tmp_path: Path) -> None:
    from memory_pipeline.store.spool import spool_dir

    spool_dir(tmp_path).mkdir(parents=True)
    (spool_dir(tmp_path) / "w-1.jsonl").write_text('{"op": "remember"}\n')
    res = {"store": MemoryStoreResource(home=str(tmp_path))}
    with dg.instance_for_test() as instance:
        run_id = add_run(instance, "agent_writes_ingest", dg.DagsterRunStatus.QUEUED)
        result = agent_writes_sensor(dg.build_sensor_context(instance=instance, resources=res))
        assert not result.run_requests and "agent_writes_ingest run" in (result.skip_reason.skip_message or "")
        instance.report_run_canceled(instance.get_run_by_id(run_id))
        again = agent_writes_sensor(dg.build_sensor_context(instance=instance, resources=res))
        assert len(again.run_requests) == 1


def test_rollups_sensor_requests_one_run_for_cores_added_together_and_none_while_one_is_queued(
    tmp_path: Path,
) -> None:
    home = tmp_path / "ws"
    insert_sessions(home, [session(i) for i in range(1, 89)])  # 11 Cores close at once
    res = {"store": MemoryStoreResource(home=str(home))}
    with dg.instance_for_test() as instance:
        queued = add_run(instance, "rollup_cores", dg.DagsterRunStatus.QUEUED)
        context = dg.build_sensor_context(instance=instance, resources=res)
        blocked = rollups_sensor(context)
        assert isinstance(blocked, dg.SkipReason) and queued[:8] in (blocked.skip_message or "")
        assert instance.get_dynamic_partitions(cores_partitions.name) == []  # the keys wait with their run

        instance.report_run_canceled(instance.get_run_by_id(queued), "test: it ended")
        result = rollups_sensor(dg.build_sensor_context(instance=instance, resources=res, cursor=context.cursor))
        assert isinstance(result, dg.SensorResult)
        [added] = result.dynamic_partitions_requests
        assert list(added.partition_keys) == [f"core_000_{c:03d}" for c in range(8)] + [
            f"core_001_{c:03d}" for c in range(3)
        ]
        [run] = result.run_requests
        assert run.job_name == "rollup_cores" and run.partition_key is None
        assert (run.tags[RANGE_START], run.tags[RANGE_END]) == ("core_000_000", "core_001_002")
