"""The `clusters` asset keeps its threshold graph in the store: nightly runs save it (full the first night,
incremental after), the dry run reads it and writes nothing, and `build: full` gives the same clusters."""

from datetime import datetime, timedelta
from pathlib import Path

import dagster as dg
import numpy as np
import pytest

from memory_pipeline.definitions import defs_with
from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.resources.embedder import HASHING, hashing_embed
from memory_pipeline.store import MemoryStore
from memory_pipeline.store import repository as repo
from memory_pipeline.store.records import MemoryRecord

NOW = datetime(2026, 11, 1, 3, 30)
TOPICS = [
    "the nightly deploy of the billing service failed because the migration lock timed out",
    "the search index rebuild stalled because the shard replica ran out of disk space",
    "customer invoices were delayed because the payment webhook retries were exhausted",
    "the vector cache hit rate dropped because the embedding model version changed",
    "the staging cluster lost quorum because two brokers were restarted together",
    "weekly report generation slowed down because the warehouse query lacked a partition filter",
]
GRAPH_TABLES = ("cluster_graph", "cluster_graph_nodes", "cluster_graph_edges")


def _memories(start: int, n: int, rng: np.random.Generator, noise: bool = False) -> list[MemoryRecord]:
    out = []
    for k in range(start, start + n):
        if noise:  # unrelated memories: they stay eligible night after night
            words = [f"w{int(w)}" for w in rng.integers(0, 10**6, size=12)]
        else:
            words = TOPICS[k % len(TOPICS)].split()
            words[int(rng.integers(len(words)))] = f"variant{k}"  # near-duplicates, not exact ones
        out.append(
            MemoryRecord(
                id=f"mem-{k:04d}",
                content=" ".join(words) + ".",
                importance=float(rng.uniform(0.5, 2.0)),
                created_at=NOW - timedelta(days=2, minutes=k),
                categories=["ops"],
            )
        )
    return out


def _add(home: Path, start: int, n: int, rng: np.random.Generator, noise: bool = False) -> None:
    store = MemoryStore(home / "memory.duckdb")
    store.migrate()
    records = _memories(start, n, rng, noise)
    with store.transaction() as con:
        repo.insert_memories(con, records)
        repo.upsert_embeddings(con, HASHING, [r.id for r in records], hashing_embed([r.content for r in records]), NOW)


def _run(home: Path, job: str) -> dg.ExecuteInProcessResult:
    resources = {
        "store": MemoryStoreResource(home=str(home)),
        "embedder": EmbedderResource(model=HASHING),
        "llm": LLMResource(mode="offline"),
        # its clusters are random vectors over unlike texts, a night the grade rightly stops: off, to test the graph
        "engine": EngineConfig(as_of=NOW.isoformat(), grade_floor=0),
    }
    result = (
        defs_with(resources)
        .resolve_job_def(job)
        .execute_in_process(instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)
    )
    assert result.success
    return result


def _graph_rows(home: Path) -> dict[str, list[tuple]]:
    with MemoryStore(home / "memory.duckdb").connect() as con:
        return {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall()) for t in GRAPH_TABLES}


def _graph_meta(result: dg.ExecuteInProcessResult) -> dict[str, object]:
    mat = next(
        e.event_specific_data.materialization
        for e in result.all_events
        if e.event_type_value == "ASSET_MATERIALIZATION" and e.step_key == "clusters"
    )
    keys = ("graph_build", "graph_rows_computed", "graph_edges", "graph_engine", "graph_engine_reason")
    return {k: mat.metadata[k].value for k in keys}


@pytest.mark.slow
def test_nightly_saves_the_graph_and_the_dry_run_reads_it_without_writing(tmp_path: Path, monkeypatch) -> None:
    """Four runs: dry (nothing stored), nightly (full, saved), +24 memories: dry (incremental), dry (full)."""
    monkeypatch.delenv("MEMORY_PIPELINE_CLUSTER_BUILD", raising=False)
    rng = np.random.default_rng(0)
    _add(tmp_path, 0, 90, rng)
    _add(tmp_path, 500, 60, rng, noise=True)

    dry = _run(tmp_path, "consolidation_dry_run")
    assert _graph_meta(dry)["graph_build"] == "full"  # nothing stored yet
    assert all(rows == [] for rows in _graph_rows(tmp_path).values())  # the dry run wrote nothing

    first = _run(tmp_path, "nightly_consolidation")
    assert _graph_meta(first)["graph_build"] == "full"
    engine = str(_graph_meta(first)["graph_engine"])  # which engine ran, and why: on any CPU, never an error
    assert engine.startswith("int8 screen") or _graph_meta(first)["graph_engine_reason"]
    saved = _graph_rows(tmp_path)
    assert saved["cluster_graph"][0][1] == HASHING and len(saved["cluster_graph_nodes"]) == 150

    # a day later: new memories arrive (some join old topics, some make new clusters)
    _add(tmp_path, 90, 24, rng)
    incremental = _run(tmp_path, "consolidation_dry_run")
    meta = _graph_meta(incremental)
    assert meta["graph_build"] == "incremental" and meta["graph_rows_computed"] == 24
    assert _graph_rows(tmp_path) == saved  # read, not written
    monkeypatch.setenv("MEMORY_PIPELINE_CLUSTER_BUILD", "full")  # the env switch (config `build` does the same)
    full = _run(tmp_path, "consolidation_dry_run")
    assert _graph_meta(full)["graph_build"] == "full" and _graph_meta(full)["graph_edges"] == meta["graph_edges"]
    planned = [c.cluster_id for c in incremental.output_for_node("clusters")]
    assert planned == [c.cluster_id for c in full.output_for_node("clusters")]
    assert planned
