"""Rollback keeps seed 004's bookkeeping consistent: tombstones reverted (never deleted), compensating outbox
actions that bring an external index back to its pre-run state, hubs unpinned, explicit rollups undone, and
exact-dedupe archives whose keys stay reachable on the kept twin."""

from datetime import timedelta
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.definitions import defs_with
from memory_pipeline.defs.abstraction.checks import (
    keys_stay_reachable,
    lineage_consistent,
    no_orphan_pending,
    no_summary_recompressed,
)
from memory_pipeline.defs.graph.assets import outbox_drain
from memory_pipeline.graph import queries
from memory_pipeline.resources import MemoryStoreResource
from memory_pipeline.store import MemoryStore, outbox
from memory_pipeline.store import repository as repo
from memory_pipeline.store import rollback as rb
from memory_pipeline.store.external_index import DirectoryIndex, OutboxAction
from memory_pipeline_tests.graph.helpers import NOW, make_workspace, memory, resources, run_nightly
from memory_pipeline_tests.graph.test_pipeline import workspace
from memory_pipeline_tests.graph.test_summary_rollup import summaries


def seed_index(store: MemoryStore, index: DirectoryIndex) -> None:
    """The index as an agent would have it before the night: one entry per active memory."""
    with store.connect() as con:
        rows = con.execute("SELECT id, kind, nexus_keys, tags FROM memories WHERE lifecycle = 'active'").fetchall()
    for mid, kind, keys, tags in rows:
        index.apply(OutboxAction(f"seed-{mid}", index.name, "upsert", mid, outbox.memory_payload(kind, keys, tags)))


def index_state(index: DirectoryIndex) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(index.items.glob("*.json"))}


def assert_invariants(home: Path) -> None:
    res = MemoryStoreResource(home=str(home))
    for check in (keys_stay_reachable, lineage_consistent, no_summary_recompressed, no_orphan_pending):
        result = check(store=res)
        assert result.passed, (check.name, result.metadata)


def rollback_job(home: Path, run_id: str, **engine: object) -> dg.ExecuteInProcessResult:
    job = defs_with(resources(home, **engine)).resolve_job_def("rollback_consolidation")
    config = {"ops": {"rollback_runs": {"config": {"run_id": run_id, "dry_run": False}}}}
    return job.execute_in_process(run_config=config)


def test_rollback_of_a_key_cluster_night_reverts_tombstones_and_converges_the_external_index(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    store = workspace(home)
    engine = dict(cluster_source="keys", hub_policy="pin", hub_list_size=2, hub_min_lists=4, external_indexes="vectors")
    index = DirectoryIndex(home / "indexes" / "vectors", "vectors")
    seed_index(store, index)
    before = index_state(index)
    with store.connect() as con:
        sql = "SELECT id, lifecycle, importance, pinned, tags, nexus_keys FROM memories ORDER BY id"
        rows_before = con.execute(sql).fetchall()

    night = run_nightly(home, **engine)
    assert night.success
    assert dg.materialize([outbox_drain], resources=resources(home, **engine)).success
    assert index_state(index) != before  # the sources left the index, the summary entered it
    with store.connect() as con:
        summary_id = con.execute(
            "SELECT id FROM memories WHERE kind = 'summary' AND created_by_run = ?", [night.run_id]
        ).fetchall()[0][0]
        assert con.execute("SELECT pinned FROM memories WHERE id = 'hub'").fetchall() == [(True,)]

    done = rollback_job(home, night.run_id, **engine)
    assert done.success
    out = done.output_for_node("rollback_runs")
    assert out["sources_restored"] == 4 and out["tombstones_reverted"] == 4 and out["outbox_enqueued"] == 5
    with store.connect() as con:
        rows_after = con.execute(
            "SELECT id, lifecycle, importance, pinned, tags, nexus_keys FROM memories WHERE id <> ? ORDER BY id",
            [summary_id],
        ).fetchall()
        tombstones = con.execute("SELECT memory_id, reverted_by, reverted_at IS NOT NULL FROM tombstones ORDER BY 1")
        tombstones = tombstones.fetchall()
        summary = con.execute("SELECT lifecycle FROM memories WHERE id = ?", [summary_id]).fetchall()
        pending = con.execute(
            "SELECT action, target_id FROM outbox WHERE status = 'pending' ORDER BY action, target_id"
        ).fetchall()
    assert rows_after == rows_before  # sources active with their importance, the hub unpinned again
    assert summary == [("rolled_back",)]
    assert tombstones == [(f"a-0{i}", out["rollback_id"], True) for i in range(4)]  # reverted, never deleted
    assert pending == [("delete", summary_id)] + [("upsert", f"a-0{i}") for i in range(4)]
    assert_invariants(home)

    assert dg.materialize([outbox_drain], resources=resources(home, **engine)).success
    assert index_state(index) == before  # the external index converged to its pre-run state

    again = rollback_job(home, night.run_id, **engine).output_for_node("rollback_runs")
    assert again["sources_restored"] == 0 and again["tombstones_reverted"] == 0 and again["outbox_enqueued"] == 0
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM outbox WHERE status <> 'done'").fetchall() == [(0,)]
        assert con.execute("SELECT DISTINCT reverted_by FROM tombstones").fetchall() == [(out["rollback_id"],)]
    assert_invariants(home)


def test_rollback_undoes_an_explicit_summary_rollup_and_refuses_to_orphan_it(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    store = make_workspace(home, [])
    with store.transaction() as con:
        repo.insert_memories(con, summaries(6), run_id="night-1")
    index = DirectoryIndex(home / "indexes" / "vectors", "vectors")
    seed_index(store, index)
    before = index_state(index)
    ids = [f"s-0{i}" for i in range(6)]
    defs = defs_with(resources(home, external_indexes="vectors"))
    config = {"ops": {"roll_up_summaries": {"config": {"summary_ids": ids}}}}
    job = defs.resolve_job_def("summary_rollup_job")
    rolled = job.execute_in_process(run_config=config)
    rollup_id = rolled.output_for_node("roll_up_summaries")["rollup_id"]
    assert dg.materialize([outbox_drain], resources=resources(home, external_indexes="vectors")).success
    assert index.holds(rollup_id) and not index.holds("s-00")

    # the night's summaries were rolled up since: rolling the night back alone would orphan the rollup
    with pytest.raises(rb.RollbackRefused, match=f"rolled up since by run\\(s\\) {rolled.run_id}: roll those back"):
        rb.rollback(store, ["night-1"], dry_run=False, index_names=["vectors"])

    rollback_id, plan = rb.rollback(store, [rolled.run_id], dry_run=False, index_names=["vectors"])
    assert plan.sources == ids and plan.summaries == [rollup_id] and plan.tombstones == ids
    with store.connect() as con:
        lower = con.execute("SELECT DISTINCT lifecycle, importance FROM memories WHERE id LIKE 's-%'").fetchall()
        top = con.execute("SELECT lifecycle FROM memories WHERE id = ?", [rollup_id]).fetchall()
        reverted = con.execute("SELECT count(*) FROM tombstones WHERE reverted_by = ?", [rollback_id]).fetchall()
    assert lower == [("active", 1.0)] and top == [("rolled_back",)] and reverted == [(6,)]
    assert_invariants(home)
    assert dg.materialize([outbox_drain], resources=resources(home, external_indexes="vectors")).success
    assert index_state(index) == before
    assert rb.rollback(store, [rolled.run_id], dry_run=False, index_names=["vectors"])[1].empty

    # its fingerprint was freed: the same explicit rollup can be made again
    assert job.execute_in_process(run_config=config).success


def test_exact_dedupe_carries_keys_to_the_kept_twin_and_rollback_takes_them_back(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    text = "The nightly brain.db backup collided with cortex_dedupe at 03:00."
    records = [
        memory("kept", text, 20, keys=["db:brain.db"], tags=["ops/backup"]),
        memory("dup-1", text.upper(), 15, keys=["db:brain.db", "job:cortex_dedupe"], tags=["ops/lock"]),
        memory("dup-2", "  " + text, 12, keys=["host:nas"], tags=["ops/backup", "ops/lock"]),
        memory("other", "the payments API timed out at the charge endpoint", 14, keys=["err:timeout"]),
    ]
    store = make_workspace(home, records)
    night = run_nightly(home)
    assert night.success
    checks = {e.check_name: e for e in night.get_asset_check_evaluations()}
    assert checks["keys_stay_reachable"].passed
    assert checks["keys_stay_reachable"].metadata["sources_checked"].value >= 2
    with store.connect() as con:
        kept = con.execute("SELECT tags, nexus_keys FROM memories WHERE id = 'kept'").fetchall()[0]
        stones = con.execute(
            "SELECT memory_id, replaced_by_summary_id, added_tags, added_nexus_keys FROM tombstones ORDER BY 1"
        ).fetchall()
    assert kept == (["ops/backup", "ops/lock"], ["db:brain.db", "job:cortex_dedupe", "host:nas"])
    assert stones == [("dup-1", "kept", ["ops/lock"], ["job:cortex_dedupe"]), ("dup-2", "kept", [], ["host:nas"])]

    # the check covers dedupe archives: a key taken off the twin is reported lost
    with store.transaction() as con:
        con.execute("UPDATE memories SET nexus_keys = ['db:brain.db', 'job:cortex_dedupe'] WHERE id = 'kept'")
        lost = queries.connectivity(con).lost
        con.execute("UPDATE memories SET nexus_keys = ? WHERE id = 'kept'", [kept[1]])
    assert lost == [("dup-2", "key:host:nas")]

    _, plan = rb.rollback(store, [night.run_id], dry_run=False, index_names=[])
    assert sorted(plan.sources) == ["dup-1", "dup-2"] and plan.outbox_actions == 0
    with store.connect() as con:
        back = con.execute("SELECT id, lifecycle, tags, nexus_keys FROM memories ORDER BY id").fetchall()
        assert con.execute("SELECT count(*) FROM outbox").fetchall() == [(0,)]  # no index configured
    assert back == [(r.id, "active", r.tags, r.nexus_keys) for r in sorted(records, key=lambda r: r.id)]
    assert_invariants(home)


def test_exact_dedupe_keeps_an_external_index_in_step_and_rollback_converges_it(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    text = "The nightly brain.db backup collided with cortex_dedupe at 03:00."
    records = [
        memory("kept", text, 20, keys=["db:brain.db"], tags=["ops/backup"]),
        memory("dup-1", text.upper(), 15, keys=["job:cortex_dedupe"], tags=["ops/lock"]),
        memory("other", "the payments API timed out at the charge endpoint", 14, keys=["err:timeout"]),
    ]
    store = make_workspace(home, records)
    engine = dict(external_indexes="vectors")
    index = DirectoryIndex(home / "indexes" / "vectors", "vectors")
    seed_index(store, index)
    before = index_state(index)

    night = run_nightly(home, **engine)
    assert night.success
    assert dg.materialize([outbox_drain], resources=resources(home, **engine)).success
    after = index_state(index)
    assert not any(name.startswith("dup-1") for name in after)  # the archived twin left the index …
    kept_entry = next(body for name, body in after.items() if name.startswith("kept"))
    assert "job:cortex_dedupe" in kept_entry and "ops/lock" in kept_entry  # … and its keys reach the kept one

    _, plan = rb.rollback(store, [night.run_id], dry_run=False, index_names=["vectors"])
    assert plan.sources == ["dup-1"] and plan.kept_twins == ["kept"] and plan.outbox_actions == 2
    assert dg.materialize([outbox_drain], resources=resources(home, **engine)).success
    assert index_state(index) == before
    assert_invariants(home)


class FailsOnce:
    """An index that refuses the first delete it sees (e.g. a timeout), then works."""

    def __init__(self, inner: DirectoryIndex) -> None:
        self.inner, self.name, self.failed = inner, inner.name, False

    def apply(self, action: OutboxAction) -> None:
        if action.action == "delete" and not self.failed:
            self.failed = True
            raise TimeoutError("index timed out")
        self.inner.apply(action)


def test_a_failed_compaction_delete_holds_back_the_rollback_upsert_of_the_same_memory(tmp_path: Path) -> None:
    """Otherwise the next drain would apply the delete after the re-upsert and the index would lose the memory."""
    home = tmp_path / "ws"
    store = make_workspace(home, [memory("a", "a note", 10, keys=["err:x"]), memory("s", "a summary", 1)])
    index = DirectoryIndex(home / "indexes" / "vectors", "vectors")
    seed_index(store, index)
    with store.transaction() as con:
        outbox.enqueue_compaction(
            con, index_names=["vectors"], summary_id="s", summary_payload={}, source_ids=["a"], run_id="r", now=NOW
        )
        outbox.enqueue_rollback(
            con,
            index_names=["vectors"],
            restored=[("a", "observation", ["err:x"], [])],
            summary_ids=["s"],
            rollback_id="rb",
            now=NOW - timedelta(days=1),  # a clock behind the night's: still queued after it
        )
        order = con.execute("SELECT action, target_id, run_id FROM outbox ORDER BY created_at, id").fetchall()
    assert [o[2] for o in order] == ["r", "r", "rb", "rb"]
    first = outbox.drain(store, {"vectors": FailsOnce(index)}, "d1", lambda: NOW, lambda _: False)
    assert first.failed == 1 and first.deferred == 1 and index.holds("a")
    second = outbox.drain(store, {"vectors": index}, "d2", lambda: NOW, lambda _: False)
    assert second.remaining == 0 and index.holds("a") and not index.holds("s")
