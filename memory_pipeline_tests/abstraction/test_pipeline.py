"""The nightly_consolidation job, end to end, on the sample workspace with the real embedder."""

import json
from pathlib import Path

import pytest

from memory_pipeline.store import MemoryStore, invariants
from memory_pipeline.store import repository as repo
from memory_pipeline_tests.conftest import run_job

INVARIANT_CHECKS = {
    "no_memory_deleted",
    "protected_memories_untouched",
    "no_summary_recompressed",
    "lineage_consistent",
    "no_orphan_pending",
    "token_reduction_not_negative",
}


def snapshot(home: Path) -> dict[str, tuple]:
    with MemoryStore(home / "memory.duckdb").connect() as con:
        rows = con.execute("SELECT id, importance, lifecycle, archived_by FROM memories").fetchall()
    return {r[0]: r[1:] for r in rows}


def table_counts(home: Path) -> dict[str, int]:
    with MemoryStore(home / "memory.duckdb").connect() as con:
        return {
            t: int(con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0])
            for t in ("memories", "embeddings", "compression_log", "atoms", "atom_sources", "consolidation_runs")
        }


def protected_ids(home: Path) -> set[str]:
    """Critical, pinned, locked, fresh (relative to the run's clock) and summaries."""
    with MemoryStore(home / "memory.duckdb").connect() as con:
        rows = con.execute(
            """SELECT id FROM memories WHERE lifecycle = 'active' AND (importance >= 2.5 OR pinned OR locked
               OR kind = 'summary' OR created_at >= TIMESTAMP '2026-10-31 03:30:00')"""
        ).fetchall()
    return {r[0] for r in rows}


def load_report(home: Path, run_id: str) -> dict:
    return json.loads((home / "reports" / f"compression-{run_id}.json").read_text())


def test_nightly_run_compresses_and_keeps_every_invariant(workspace: Path) -> None:
    before = snapshot(workspace)
    protected = protected_ids(workspace)
    assert len(protected) > 20
    result = run_job(workspace)
    assert result.success
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert INVARIANT_CHECKS <= set(checks)
    assert all(checks[name].passed for name in INVARIANT_CHECKS), {n: checks[n].passed for n in INVARIANT_CHECKS}

    report = load_report(workspace, result.run_id)
    assert report["verdict"] == "PASS"
    assert report["clusters_compressed"] > 0
    assert report["token_reduction_pct"] > 0
    assert report["tokens_after"] < report["tokens_before"]
    assert report["abstractions_created"] == report["clusters_compressed"]
    assert report["min_compression_ratio"] >= 1.5

    after = snapshot(workspace)
    assert set(before) <= set(after)  # nothing deleted
    for mid in protected:
        assert after[mid] == before[mid], f"protected memory {mid} changed"

    store = MemoryStore(workspace / "memory.duckdb")
    with store.connect() as con:
        summaries = repo.summaries_of_run(con, result.run_id)
        assert len(summaries) == report["clusters_compressed"]
        for s in summaries.itertuples():
            lineage = json.loads(s.compressed_from)
            sources = repo.fetch_members(con, lineage["source_ids"])
            assert (sources["lifecycle"] == "archived").all()
            assert (sources["importance"] == 0.5).all()
            prior = [before[i][0] for i in sources["id"]]
            assert sources["prior_importance"].tolist() == prior  # the exact prior importance is kept
            row = con.execute("SELECT importance, categories FROM memories WHERE id = ?", [s.id]).fetchall()[0]
            assert row[0] == max(1.0, max(prior))
            assert row[1][-1] == "compressed" and 2 <= len(row[1]) <= 3
            assert s.id in {
                r[0] for r in con.execute("SELECT memory_id FROM embeddings WHERE memory_id = ?", [s.id]).fetchall()
            }
        assert invariants.pending_rows(con) == []


def test_second_run_on_unchanged_data_creates_nothing(workspace: Path) -> None:
    first = run_job(workspace)
    assert first.success
    counts = table_counts(workspace)
    rows = snapshot(workspace)
    second = run_job(workspace)
    assert second.success
    report = load_report(workspace, second.run_id)
    assert report["clusters_compressed"] == 0
    assert report["memories_archived"] == 0
    # every cluster was tried by the first night: nothing new to consolidate, a quiet night's PASS
    assert report["clusters_recently_processed"] == report["clusters_found"]
    assert report["verdict"] == "PASS" and report["verdict_reason"].startswith("nothing new to consolidate")
    after = table_counts(workspace)
    for table in ("memories", "embeddings", "atoms", "atom_sources"):
        assert after[table] == counts[table], table
    assert snapshot(workspace) == rows


def test_failure_inside_phase_two_leaves_that_cluster_as_before(workspace: Path, monkeypatch) -> None:
    before = snapshot(workspace)
    real = repo.activate_summaries
    doomed: list[str] = []

    def flaky(con, summary_ids):  # the sources have already been archived in this transaction
        doomed[:] = doomed or summary_ids[:1]
        if doomed[0] in summary_ids:  # the batch that holds it rolls back, then that cluster alone fails
            raise RuntimeError("injected fault inside the phase-2 transaction")
        return real(con, summary_ids)

    monkeypatch.setattr(repo, "activate_summaries", flaky)
    result = run_job(workspace)
    assert result.success
    report = load_report(workspace, result.run_id)
    assert report["verdict"] == "PARTIAL"
    assert report["clusters_failed"] == 1
    assert report["errors"][0]["stage"] == "archive"
    store = MemoryStore(workspace / "memory.duckdb")
    with store.connect() as con:
        failed = con.execute(
            "SELECT cluster_id, reason FROM compression_log WHERE run_id = ? AND status = 'failed'", [result.run_id]
        ).fetchall()
        assert len(failed) == 1 and "injected fault" in failed[0][1]
        archived_by_failed = con.execute(
            "SELECT count(*) FROM memories WHERE archived_by = ?", [failed[0][0]]
        ).fetchall()[0][0]
        assert archived_by_failed == 0
        assert invariants.pending_rows(con) == []
        assert invariants.archived_without_summary(con) == []
    after = snapshot(workspace)
    untouched = [mid for mid, row in before.items() if after[mid] == row]
    assert len(untouched) < len(before)  # other clusters did compress
    assert report["clusters_compressed"] > 0


def test_dry_run_writes_nothing(workspace: Path) -> None:
    counts, rows = table_counts(workspace), snapshot(workspace)
    result = run_job(workspace, "consolidation_dry_run")
    assert result.success
    found = result.output_for_node("clusters")
    assert len(found) > 0
    assert table_counts(workspace) == counts
    assert snapshot(workspace) == rows


def test_dry_run_lists_the_clusters_the_real_run_compresses(workspace: Path) -> None:
    planned = run_job(workspace, "consolidation_dry_run").output_for_node("clusters")
    result = run_job(workspace)
    assert [c.cluster_id for c in result.output_for_node("clusters")] == [c.cluster_id for c in planned]


def test_rerun_one_cluster_by_id(workspace: Path) -> None:
    found = run_job(workspace, "consolidation_dry_run").output_for_node("clusters")
    target = found[-1]
    result = run_job(workspace, run_config={"ops": {"distillations": {"config": {"cluster_id": target.cluster_id}}}})
    assert result.success
    with MemoryStore(workspace / "memory.duckdb").connect() as con:
        logged = con.execute(
            "SELECT DISTINCT cluster_id FROM compression_log WHERE run_id = ?", [result.run_id]
        ).fetchall()
    assert logged == [(target.cluster_id,)]


def test_unknown_cluster_id_fails_clearly(workspace: Path) -> None:
    result = run_job(workspace, run_config={"ops": {"distillations": {"config": {"cluster_id": "nope"}}}})
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert "cluster nope is not among" in str(failure.event_specific_data.error)


@pytest.mark.parametrize("threshold", [0.99])
def test_no_clusters_gives_a_quiet_pass_and_no_writes(workspace: Path, threshold: float) -> None:
    counts = table_counts(workspace)
    result = run_job(workspace, similarity_threshold=threshold, min_cluster_size=50)
    assert result.success
    report = load_report(workspace, result.run_id)
    assert report["clusters_found"] == 0 and report["verdict"] == "PASS"
    assert report["verdict_reason"].startswith("nothing new to consolidate: the ")
    after = table_counts(workspace)
    assert after["memories"] == counts["memories"]
