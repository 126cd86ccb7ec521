"""Crash safety, one writer, rollback — each proved by trying to break it."""

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memory_pipeline.faults import ENV as CRASH_ENV
from memory_pipeline.faults import HOLD_ENV, HOLD_LIMIT_ENV
from memory_pipeline.store import MemoryStore, invariants, lease
from memory_pipeline.store import rollback as rb
from memory_pipeline_tests.abstraction.test_pipeline import load_report, snapshot, table_counts
from memory_pipeline_tests.conftest import SAMPLE_NOW, run_job

LEASE_HELD = "night_lease_held"
WAIT_S = 1800  # every wait on a CLI run below: minutes (a sample night beside other work took 15), not a target


def atoms_state(home: Path) -> dict[str, tuple]:
    with MemoryStore(home / "memory.duckdb").connect() as con:
        return {r[0]: r[1:] for r in con.execute("SELECT id, confidence, status FROM atoms").fetchall()}


def assert_consistent(home: Path) -> None:
    with MemoryStore(home / "memory.duckdb").connect() as con:
        assert invariants.archived_without_summary(con) == []
        assert invariants.summaries_with_unarchived_sources(con) == []
        assert invariants.protected_archived(con, 2.5) == []
        assert invariants.recompressed_summaries(con) == []


def test_rollback_by_run_id_restores_exactly_and_twice_is_a_no_op(workspace: Path) -> None:
    before = snapshot(workspace)
    first = run_job(workspace)
    assert first.success and load_report(workspace, first.run_id)["clusters_compressed"] > 0
    store = MemoryStore(workspace / "memory.duckdb")

    _, dry = rb.rollback(store, [first.run_id], dry_run=True)
    assert dry.sources and dry.summaries and dry.fingerprints
    assert snapshot(workspace) != before  # the dry run changed nothing, so the run's effects are still there

    _, applied = rb.rollback(store, [first.run_id], dry_run=False)
    assert len(applied.sources) == len(dry.sources)
    after = snapshot(workspace)
    for mid, row in before.items():
        assert after[mid] == row, mid  # exact prior importance, lifecycle, archive fields
    with store.connect() as con:
        statuses = dict(con.execute(
            "SELECT lifecycle, count(*) FROM memories WHERE created_by_run = ? GROUP BY 1", [first.run_id]
        ).fetchall())
        assert statuses == {"rolled_back": len(applied.summaries)}  # still rows: nothing deleted
        assert con.execute("SELECT count(*) FROM atoms WHERE status = 'active'").fetchall()[0][0] == 0
    assert_consistent(workspace)

    counts = table_counts(workspace)
    _, again = rb.rollback(store, [first.run_id], dry_run=False)
    assert again.empty and table_counts(workspace) == counts and snapshot(workspace) == after

    # the fingerprints are free again: the next run compresses the same clusters
    second = run_job(workspace)
    report = load_report(workspace, second.run_id)
    assert report["clusters_compressed"] == load_report(workspace, first.run_id)["clusters_compressed"]


def test_rollback_since_covers_every_later_run(workspace: Path) -> None:
    first = run_job(workspace)
    assert first.success
    store = MemoryStore(workspace / "memory.duckdb")
    with store.connect() as con:
        started = con.execute("SELECT min(started_at) FROM consolidation_runs").fetchall()[0][0]
        assert rb.runs_since(con, started) == [first.run_id]
    _, p = rb.rollback(store, [first.run_id], dry_run=False)
    assert p.sources
    assert_consistent(workspace)


def test_a_run_holding_the_lease_makes_the_next_skip(workspace: Path) -> None:
    store = MemoryStore(workspace / "memory.duckdb")
    with store.transaction() as con:
        lease.acquire(con, "someone-else", SAMPLE_NOW.replace(tzinfo=None), __import__("datetime").timedelta(days=9999))
    counts = table_counts(workspace)
    result = run_job(workspace)
    assert result.success
    assert not result.asset_materializations_for_node("exact_duplicates")
    skipped = {e.step_key for e in result.all_events if e.event_type_value == "STEP_SKIPPED"}
    assert {"memory_embeddings", "compressed_memories", "archive_updates", "report"} <= skipped
    assert table_counts(workspace) == counts


# ----------------------------------------------------------------------------- real processes


def cli(
    home: Path, dagster_home: Path, *args: str, crash_at: str | None = None, hold_in: Path | None = None
) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env |= {"MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(dagster_home)}
    if hold_in:
        env[HOLD_ENV] = f"{LEASE_HELD}:{hold_in}"
        env[HOLD_LIMIT_ENV] = str(WAIT_S)  # parked until the test releases it, however slowly the other starts
    if crash_at:
        env[CRASH_ENV] = crash_at
    return subprocess.Popen(
        [sys.executable, "-m", "memory_pipeline.cli", "run", "--as-of", SAMPLE_NOW.isoformat(), *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )


def finish(proc: subprocess.Popen) -> tuple[str, str]:
    """Its output once it exits (WAIT_S at most); its process group is killed whatever happens."""
    try:
        return proc.communicate(timeout=WAIT_S)
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)


@pytest.mark.slow
@pytest.mark.parametrize("point", ["after_phase1", "inside_phase2", "writing_report"])
def test_sigkill_at_each_point_leaves_a_consistent_store_and_the_next_run_finishes(
    workspace: Path, tmp_path: Path, point: str
) -> None:
    before = snapshot(workspace)
    proc = cli(workspace, tmp_path / "dh", crash_at=point)
    finish(proc)
    assert proc.returncode == -9, f"expected SIGKILL at {point}"
    after_crash = snapshot(workspace)
    assert set(before) <= set(after_crash)
    with MemoryStore(workspace / "memory.duckdb").connect() as con:
        pending = invariants.pending_rows(con)
        held = lease.current(con)
    assert held is not None  # the killed run's lease is left behind …
    if point == "after_phase1":
        assert pending  # only pending summaries; no source archived
        assert all(after_crash[m] == before[m] for m in before)
    if point == "inside_phase2":
        assert pending  # the open transaction died with the process; earlier pending rows remain
    assert_consistent(workspace)

    proc = cli(workspace, tmp_path / "dh")  # … and is stale, because its process is gone
    out, err = finish(proc)
    assert proc.returncode in (0, 1), err[-2000:]
    run_id = next(line.split()[-1] for line in out.splitlines() if line.strip().startswith("run_id"))
    report = json.loads((workspace / "reports" / f"compression-{run_id}.json").read_text())
    if point in ("after_phase1", "inside_phase2"):
        assert report["pending_removed"] > 0
        assert report["clusters_compressed"] > 0
    else:  # the crashed run had committed everything but its report
        assert report["clusters_compressed"] == 0
        # graded by what the store holds: the dead night's work is there, so this one passes and rebuilds its report
        assert report["verdict"] == "PASS" and "completed an interrupted night" in report["verdict_reason"]
        rebuilt = [json.loads(p.read_text()) for p in (workspace / "reports").glob("compression-*.json")]
        dead = [r for r in rebuilt if r.get("recovered_by") == run_id]
        assert len(dead) == 1 and dead[0]["clusters_compressed"] > 0 and dead[0]["run_id"] != run_id
    with MemoryStore(workspace / "memory.duckdb").connect() as con:
        assert invariants.pending_rows(con) == []
        assert lease.current(con) is None
    assert_consistent(workspace)


@pytest.mark.slow
def test_two_runs_at_once_never_both_write(workspace: Path, tmp_path: Path) -> None:
    """Two nights start together (separate instances: only the store's lease stands between them). Whichever
    takes the lease first is parked right after it (a hold point, memory_pipeline.faults) until the other has
    tried and exited, so the two are in flight together by construction, whatever the machine's load."""
    signals = tmp_path / "signals"
    signals.mkdir()
    procs = [cli(workspace, tmp_path / "dh", hold_in=signals), cli(workspace, tmp_path / "dh2", hold_in=signals)]
    with ThreadPoolExecutor(2) as pool:  # their pipes are read while we wait: a full pipe would stall a run
        done = [pool.submit(p.communicate, timeout=WAIT_S) for p in procs]
        try:
            deadline = time.monotonic() + WAIT_S  # bounds both start-ups and one night's way to the lease
            while not ((signals / f"{LEASE_HELD}.reached").exists() and any(f.done() for f in done)):
                if all(f.done() for f in done) or time.monotonic() > deadline:
                    break  # both ended without one holding the lease, or too slow: the assertions below say which
                time.sleep(0.2)
            (signals / f"{LEASE_HELD}.release").touch()
            outs = [f.result() for f in done]
        finally:
            (signals / f"{LEASE_HELD}.release").touch()
            for p in procs:
                stop(p)
    assert (signals / f"{LEASE_HELD}.reached").exists(), [o[1][-1500:] for o in outs]
    assert not (signals / f"{LEASE_HELD}.gave_up").exists(), "the holder's limit ran out before the other tried"
    assert [p.returncode for p in procs].count(0) == 2, [o[1][-1500:] for o in outs]
    texts = [o[0] for o in outs]
    assert sum("consolidation already running, skipping" in t for t in texts) == 1
    assert sum("COMPRESSION RUN PASS" in t for t in texts) == 1
    assert len(list((workspace / "reports").glob("compression-*.json"))) == 1
    assert_consistent(workspace)
