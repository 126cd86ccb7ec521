"""The nightly job with graph-preserving compaction on small hand-made stores (hashing embedder)."""

import json
from datetime import datetime
from pathlib import Path

import dagster as dg

from memory_pipeline.defs.graph.assets import outbox_drain
from memory_pipeline.graph.usage_store import record_inclusions
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.external_index import DirectoryIndex
from memory_pipeline_tests.graph.helpers import make_workspace, memory, resources, run_nightly, timeout_family

KEYS = ["err:timeout", "path:/v1/charge", "tool:http"]
HUB_KEYS = [*KEYS, "chan:ops", "host:api"]


def workspace(home: Path) -> MemoryStore:
    records = timeout_family("a", [10.0, 10.2, 10.4, 10.6], KEYS, ["err/timeout", "topic/payments"])
    hub = memory("hub", "payments API runbook: timeouts on charge go through the http tool", 10.3, keys=HUB_KEYS)
    others = [
        memory(f"o{i}", f"ops channel note {i} about host api", 30 + i, keys=["chan:ops", "host:api"]) for i in range(2)
    ]
    old_summary = memory("old-sum", "an earlier summary of payments API timeouts", 12, keys=["err:timeout"])
    old_summary.kind = "summary"
    store = make_workspace(home, [*records, hub, *others, old_summary])
    record_inclusions(store, ["hub"], datetime(2026, 10, 31), count=3)  # the hub is what retrieval returns first
    return store


def report_of(home: Path, run_id: str) -> dict:
    return json.loads((home / "reports" / f"compression-{run_id}.json").read_text())


def test_key_clusters_keep_keys_tombstone_sources_pin_hubs_and_fill_the_outbox(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    store = workspace(home)
    engine = dict(cluster_source="keys", hub_policy="pin", hub_list_size=2, hub_min_lists=4, external_indexes="vectors")
    result = run_nightly(home, **engine)
    assert result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["keys_stay_reachable"] and checks["lineage_consistent"] and checks["no_summary_recompressed"]
    report = report_of(home, result.run_id)
    assert report["clusters_compressed"] == 1
    assert report["graph"]["clusters_by_source"] == {"keys": {"found": 1, "compressed": 1}}
    assert [(h["id"], h["action"]) for h in report["graph"]["hubs"]] == [("hub", "pinned")]
    with store.connect() as con:
        rows = {r[0]: r[1:] for r in con.execute("SELECT id, lifecycle, pinned, nexus_keys FROM memories").fetchall()}
        summary_id, lineage = con.execute(
            "SELECT id, compressed_from FROM memories WHERE created_by_run = ? AND kind = 'summary'", [result.run_id]
        ).fetchall()[0]
        tombstones = con.execute(
            "SELECT memory_id, replaced_by_summary_id, run_id FROM tombstones ORDER BY 1"
        ).fetchall()
        outbox = con.execute("SELECT action, target_id, status FROM outbox ORDER BY action, target_id").fetchall()
    assert [rows[f"a-0{i}"][0] for i in range(4)] == ["archived"] * 4
    assert rows["hub"][:2] == ("active", True)  # a hub is never archived raw: pinned, per policy
    assert rows["old-sum"][0] == "active"  # a summary is never compacted automatically, though it shares the key
    assert set(KEYS) <= set(rows[summary_id][2])  # retrieval by key still reaches the knowledge
    lineage = json.loads(lineage)
    assert lineage["cluster_source"] == "keys" and lineage["compaction_key"] == "err:timeout"
    assert lineage["source_ids"] == [f"a-0{i}" for i in range(4)]
    assert {"topic/gc", "src/system", "err/timeout", "topic/payments"} <= set(lineage["rolled_up_tags"])
    assert tombstones == [(f"a-0{i}", summary_id, result.run_id) for i in range(4)]
    assert outbox == [("delete", f"a-0{i}", "pending") for i in range(4)] + [("upsert", summary_id, "pending")]

    drained = dg.materialize([outbox_drain], resources=resources(home, **engine))
    assert drained.success
    index = DirectoryIndex(home / "indexes" / "vectors", "vectors")
    assert len(index.applied_ids()) == 5 and index.holds(summary_id)
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM outbox WHERE status <> 'done'").fetchall()[0][0] == 0


def test_both_sources_summarise_hubs_with_their_keys_and_no_index_means_no_outbox(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    store = workspace(home)
    result = run_nightly(home, cluster_source="both", hub_list_size=2, hub_min_lists=4, rollup_max_keys=2)
    assert result.success
    assert all(e.passed for e in result.get_asset_check_evaluations() if e.check_name != "report_health")
    report = report_of(home, result.run_id)
    hubs = {h["id"]: h["action"] for h in report["graph"]["hubs"]}
    assert hubs["hub"].startswith("summarised with cluster")
    with store.connect() as con:
        keys, lineage = con.execute(
            "SELECT nexus_keys, compressed_from FROM memories WHERE created_by_run = ? AND kind = 'summary'",
            [result.run_id],
        ).fetchall()[0]
        assert con.execute("SELECT count(*) FROM outbox").fetchall()[0][0] == 0
        assert con.execute("SELECT count(*) FROM tombstones").fetchall()[0][0] == report["memories_archived"]
    assert set(HUB_KEYS) <= set(keys)  # K=2, but a hub's keys are never dropped
    assert json.loads(lineage)["hubs"] == ["hub"]
    assert report["graph"]["outbox_enqueued"] == 0
