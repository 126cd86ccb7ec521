from pathlib import Path

import dagster as dg

from memory_pipeline.defs.search.assets import search_index, search_index_rebuild, search_usage
from memory_pipeline.defs.search.sensors import search_index_sensor
from memory_pipeline.resources import EmbedderResource, MemoryStoreResource
from memory_pipeline.resources.embedder import MINILM
from memory_pipeline.search import delete_index, search
from memory_pipeline.search.usage_spool import append_now
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline_tests.search.conftest import minilm, write_jsonl


def resources(home: Path) -> dict:
    return {"store": MemoryStoreResource(home=str(home)), "embedder": EmbedderResource(model=MINILM)}


def meta(result: dg.ExecuteInProcessResult) -> dict:
    [mat] = result.asset_materializations_for_node("search_index")
    return {k: v.value for k, v in mat.metadata.items()}


def test_index_asset_reports_added_updated_removed(workspace: Path, tmp_path: Path) -> None:
    first = dg.materialize([search_index], resources=resources(workspace))
    assert first.success
    m = meta(first)
    assert m["added"] == 0 and m["updated"] == 0 and m["removed"] == 0 and m["embedded"] == 0
    import_jsonl(
        MemoryStore(workspace / "memory.duckdb"),
        write_jsonl(
            tmp_path / "n.jsonl",
            [
                {
                    "id": "m-950",
                    "content": "Renewed the passport; it expires in 2036",
                    "importance": 1.0,
                    "created_at": "2026-10-31T08:00:00",
                }
            ],
        ),
    )
    journal = workspace / "knowledge" / "journal" / "2026-10-20.md"
    journal.write_text(journal.read_text() + "- Rented a scooter on the island for three days.\n")
    second = meta(dg.materialize([search_index], resources=resources(workspace)))
    assert second["added"] == 1 and second["updated"] == 1 and second["removed"] == 0 and second["embedded"] == 2
    journal.unlink()
    third = meta(dg.materialize([search_index], resources=resources(workspace)))
    assert third["removed"] == 1 and third["docs"] == second["docs"] - 1


def test_full_rebuild_job_after_the_index_is_deleted(workspace: Path) -> None:
    delete_index(workspace)
    defs = dg.Definitions(assets=[search_index], jobs=[search_index_rebuild], resources=resources(workspace))
    result = defs.resolve_job_def("search_index_rebuild").execute_in_process()
    assert result.success and meta(result)["full_rebuild"] is True and meta(result)["embedded"] > 0
    hits = search("price alert TIA", home=workspace, embedder=minilm())
    assert hits.mode == "index" and hits[0].id == "m-001"


def test_sensor_requests_a_build_when_missing_or_stale(workspace: Path, tmp_path: Path) -> None:
    res = resources(workspace)
    instance = dg.DagsterInstance.ephemeral()
    ctx = dg.build_sensor_context(instance=instance, resources=res)
    assert search_index_sensor(ctx).skip_reason
    import_jsonl(
        MemoryStore(workspace / "memory.duckdb"),
        write_jsonl(
            tmp_path / "n.jsonl",
            [
                {
                    "id": "m-951",
                    "content": "Dentist appointment on the 12th",
                    "importance": 1.0,
                    "created_at": "2026-10-31T08:00:00",
                }
            ],
        ),
    )
    [req] = search_index_sensor(dg.build_sensor_context(instance=instance, resources=res)).run_requests
    assert req.run_key.startswith("delta-1-")
    delete_index(workspace)
    [req] = search_index_sensor(dg.build_sensor_context(instance=instance, resources=res)).run_requests
    assert req.job_name == "search_index_rebuild"


def test_index_is_requested_by_automation_when_upstream_materialises(workspace: Path) -> None:
    upstream = dg.AssetSpec("memory_embeddings")  # stands in for the real upstream assets

    @dg.asset(name="memory_embeddings")
    def fake_upstream() -> None:
        return None

    instance = dg.DagsterInstance.ephemeral()
    defs = dg.Definitions(assets=[fake_upstream, search_index], resources=resources(workspace))
    assert upstream.key == fake_upstream.key
    dg.materialize([search_index], resources=resources(workspace), instance=instance)
    quiet = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    assert quiet.total_requested == 0
    dg.materialize([fake_upstream], instance=instance)
    woken = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=quiet.cursor)
    assert woken.get_num_requested(search_index.key) == 1


def test_usage_asset_imports_the_spool(workspace: Path) -> None:
    append_now(workspace, ["m-001", "m-002"])
    result = dg.materialize([search_usage], resources={"store": MemoryStoreResource(home=str(workspace))})
    [mat] = result.asset_materializations_for_node("search_usage")
    assert mat.metadata["events"].value == 2
    with MemoryStore(workspace / "memory.duckdb").connect() as con:
        rows = con.execute("SELECT id, included_count_total FROM memories WHERE included_count_total > 0 ORDER BY id")
        assert rows.fetchall() == [("m-001", 1), ("m-002", 1)]
