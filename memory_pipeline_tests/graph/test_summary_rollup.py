"""Summary-of-summary (seed 004 §6): refused by default; only explicit, with summary_of provenance."""

import json
from pathlib import Path

import pytest

from memory_pipeline.definitions import defs_with
from memory_pipeline.defs.abstraction.checks import keys_stay_reachable, lineage_consistent, no_summary_recompressed
from memory_pipeline.graph.summary_rollup import SummaryOfSummaryRefused, check_request
from memory_pipeline.resources import MemoryStoreResource
from memory_pipeline.store import MemoryStore
from memory_pipeline.store import repository as repo
from memory_pipeline.store.records import MemoryRecord
from memory_pipeline_tests.graph.helpers import make_workspace, memory, resources, timeout_family


def summaries(n: int) -> list[MemoryRecord]:
    out = []
    for i, s in enumerate(timeout_family("s", [5.0 + d for d in range(n)], ["err:timeout"])):
        s.nexus_keys = [*s.nexus_keys, f"path:/v{i}"]
        s.kind = "summary"
        s.compressed_from = {"source_ids": [], "cluster_id": f"c{i}"}
        s.rolled_up_nexus_keys = s.nexus_keys
        out.append(s)
    return out


def test_summary_of_summary_is_refused_unless_explicit_and_above_the_threshold(tmp_path: Path) -> None:
    store = make_workspace(tmp_path / "ws", [*summaries(4), memory("plain", "an observation", 5)])
    with store.connect() as con:
        with pytest.raises(SummaryOfSummaryRefused, match="never automatic"):
            check_request(con, [], min_sources=6)
        with pytest.raises(SummaryOfSummaryRefused, match="at least 6 summaries"):
            check_request(con, [f"s-0{i}" for i in range(4)], min_sources=6)
        with pytest.raises(SummaryOfSummaryRefused, match="plain \\(kind=observation"):
            check_request(con, ["s-00", "s-01", "plain"], min_sources=3)
        # and the engine's own eligibility never offers a summary
        eligible = repo.load_eligible(con, "none", 2.5, memory("x", "x", 0).created_at)
    assert eligible.frame.empty


def test_an_explicit_rollup_keeps_provenance_and_the_invariants(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    store = make_workspace(home, summaries(6))
    defs = defs_with(resources(home))
    job = defs.resolve_job_def("summary_rollup_job")
    refused = job.execute_in_process(
        run_config={"ops": {"roll_up_summaries": {"config": {"summary_ids": ["s-00", "s-01"]}}}}, raise_on_error=False
    )
    assert not refused.success
    ids = [f"s-0{i}" for i in range(6)]
    done = job.execute_in_process(run_config={"ops": {"roll_up_summaries": {"config": {"summary_ids": ids}}}})
    assert done.success
    rollup_id = done.output_for_node("roll_up_summaries")["rollup_id"]
    with MemoryStore(home / "memory.duckdb").connect() as con:
        row = con.execute("SELECT summary_of, compressed_from, lifecycle FROM memories WHERE id = ?", [rollup_id])
        summary_of, lineage, lifecycle = row.fetchall()[0]
        lower = con.execute("SELECT DISTINCT lifecycle FROM memories WHERE id LIKE 's-%'").fetchall()
    assert summary_of == ids and lifecycle == "active" and lower == [("archived",)]
    assert json.loads(lineage)["level"] == 2
    res = MemoryStoreResource(home=str(home))
    assert no_summary_recompressed(store=res).passed  # the explicit rollup is the allowed exception
    assert lineage_consistent(store=res).passed
    assert keys_stay_reachable(store=res).passed
    del store
