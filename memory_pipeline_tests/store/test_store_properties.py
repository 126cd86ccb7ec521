"""Any sequence of compressions, crashes, reconciliations and rollbacks never lowers the row count, never
archives a protected memory, and leaves lineage consistent once nothing is pending."""

import json
import tempfile
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.similarity.clustering import cluster_id_for, fingerprint
from memory_pipeline.store import MemoryStore, invariants
from memory_pipeline.store import repository as repo
from memory_pipeline.store import rollback as rb
from memory_pipeline.store.db import atomic
from memory_pipeline.store.records import MemoryRecord

T0 = datetime(2026, 10, 1)
FLOOR = 2.5


class Crash(Exception):
    pass


def seed_store(home: Path) -> MemoryStore:
    store = MemoryStore(home / "memory.duckdb")
    store.migrate()
    records = [
        MemoryRecord(
            f"m{i:02d}",
            f"observation {i}",
            [0.8, 1.2, 2.6, 1.9][i % 4],
            T0 + timedelta(hours=i),
            pinned=i % 7 == 0,
            locked=i % 11 == 0,
        )
        for i in range(24)
    ]
    with store.transaction() as con:
        repo.insert_memories(con, records)
    return store


def compress(store: MemoryStore, pick: list[int], crash: str | None, run_id: str) -> None:
    """The engine's two phases on the store, with an optional crash between or inside them."""
    with store.connect() as con:
        rows = con.execute(
            f"SELECT m.id, m.importance FROM memories m WHERE {repo.ELIGIBLE_WHERE} ORDER BY m.id",
            [FLOOR, T0 + timedelta(days=30)],
        ).fetchall()
    if len(rows) < 3:
        return
    members = sorted({rows[i % len(rows)][0] for i in pick})
    if len(members) < 3:
        return
    cid = cluster_id_for(fingerprint(members))
    summary = MemoryRecord(
        "s-" + uuid.uuid4().hex[:8],
        "summary",
        1.0,
        T0,
        kind="summary",
        lifecycle="pending",
        compressed_from={"source_ids": members, "cluster_id": cid},
    )
    with store.transaction() as con:
        repo.insert_memories(con, [summary], run_id=run_id)
    if crash == "between":
        return
    with store.connect() as con:
        try:
            with atomic(con):
                repo.archive_sources(
                    con, members, cluster_id=cid, archived_importance=0.5, critical_floor=FLOOR, now=T0, run_id=run_id
                )
                if crash == "inside":
                    raise Crash()
                repo.activate_summary(con, summary.id)
                repo.log_cluster(
                    con,
                    fingerprint=fingerprint(members),
                    cluster_id=cid,
                    status="compressed",
                    member_count=len(members),
                    run_id=run_id,
                    now=T0,
                    compressed_memory_id=summary.id,
                )
        except Crash:
            return  # the process "died": the pending summary stays for the next reconcile


def settled_count(con) -> int:  # noqa: ANN001
    return int(con.execute("SELECT count(*) FROM memories WHERE lifecycle <> 'pending'").fetchall()[0][0])


operation = st.one_of(
    st.tuples(
        st.just("compress"),
        st.lists(st.integers(0, 50), min_size=3, max_size=8),
        st.sampled_from([None, None, "between", "inside"]),
    ),
    st.tuples(st.just("reconcile")),
    st.tuples(st.just("rollback"), st.integers(0, 10)),
)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operation, min_size=1, max_size=10))
def test_no_sequence_loses_rows_or_archives_a_protected_memory(ops: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = seed_store(Path(tmp))
        runs: list[str] = []
        with store.connect() as con:
            count = settled_count(con)
            protected = {
                r[0]: r[1:]
                for r in con.execute(
                    "SELECT id, importance, lifecycle FROM memories WHERE importance >= ? OR pinned OR locked", [FLOOR]
                ).fetchall()
            }
        for op in ops:
            if op[0] == "compress":
                runs.append("run-" + uuid.uuid4().hex[:6])
                compress(store, op[1], op[2], runs[-1])
            elif op[0] == "reconcile":
                with store.transaction() as con:
                    repo.reconcile_pending(con)
            elif runs:
                try:
                    rb.rollback(store, [runs[op[1] % len(runs)]], dry_run=False)
                except rb.UnknownRun:  # a compression that wrote nothing left no run to roll back
                    pass
            with store.connect() as con:
                new_count = settled_count(con)
                assert new_count >= count  # pending summaries were never memories; everything else stays
                count = new_count
                assert invariants.protected_archived(con, FLOOR) == []
                now_protected = {
                    r[0]: r[1:]
                    for r in con.execute(
                        "SELECT id, importance, lifecycle FROM memories WHERE id IN (SELECT unnest(?::VARCHAR[]))",
                        [list(protected)],
                    ).fetchall()
                }
                assert now_protected == protected
        with store.transaction() as con:
            repo.reconcile_pending(con)
        with store.connect() as con:
            assert invariants.pending_rows(con) == []
            assert invariants.archived_without_summary(con) == []
            assert invariants.summaries_with_unarchived_sources(con) == []
            for row in con.execute(
                "SELECT compressed_from FROM memories WHERE lifecycle = 'active' AND kind = 'summary'"
            ).fetchall():
                assert json.loads(row[0])["source_ids"]
