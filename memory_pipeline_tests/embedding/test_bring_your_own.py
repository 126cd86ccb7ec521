"""Bring your own embeddings, through the real nightly_consolidation job: clustering on imported 1536-d
vectors, summaries embedded as the mean of their members (marked so) or by a plug-in, and a plug-in that
later re-embeds the averaged summaries."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import numpy as np
import pytest

from memory_pipeline.embedding import spec
from memory_pipeline.embedding.plugins.example import toy_1536
from memory_pipeline.resources import EmbedderResource
from memory_pipeline.resources.embedder import MINILM
from memory_pipeline.store import MemoryStore
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import utcnow
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline_tests.embedding.byo import (
    OPENAI,
    grouped_rows,
    log_lines,
    metadata,
    report_of,
    run_night,
    write_jsonl,
)

PLUGIN = "memory_pipeline.embedding.plugins.example:toy_1536"
TOL = 1e-6  # float32 vectors averaged in float64: far below anything a BLAS kernel could change


def _import(home: Path, rows: list[dict]) -> MemoryStore:
    store = MemoryStore(home / "memory.duckdb")
    import_jsonl(store, write_jsonl(home / "mine.jsonl", rows))
    return store


def _summaries(store: MemoryStore) -> list[tuple[str, list[str], str, np.ndarray]]:
    """(id, source ids, embeddings.source, vector) of every active summary."""
    with store.connect() as con:
        rows = con.execute(
            "SELECT m.id, json_extract(m.compressed_from, '$.source_ids')::VARCHAR[], e.source, e.vector "
            "FROM memories m JOIN embeddings e ON e.memory_id = m.id AND e.model = ? "
            "WHERE m.kind = 'summary' AND m.lifecycle = 'active' ORDER BY m.id",
            [OPENAI],
        ).fetchall()
    return [(r[0], sorted(r[1]), r[2], np.asarray(r[3], dtype=np.float64)) for r in rows]


@pytest.mark.slow  # a nightly run or two (~12-17 s on 2 shared cores)
def test_night_clusters_on_imported_vectors_and_averages_summaries(tmp_path: Path) -> None:
    rows, groups = grouped_rows()
    store = _import(tmp_path, rows)
    embedder = EmbedderResource(model=OPENAI, imported=True)
    result = run_night(tmp_path, embedder)
    assert result.success

    # the clusters are exactly the groups the imported vectors make (the text cannot tell them apart)
    found = sorted(sorted(c.member_ids) for c in result.output_for_node("clusters"))
    assert found == sorted(sorted(g) for g in groups)
    # nothing was computed: no MiniLM, no other model
    with store.connect() as con:
        assert con.execute("SELECT DISTINCT model FROM embeddings").fetchall() == [(OPENAI,)]

    # every summary has a 1536-d vector = the normalised mean of its members' vectors, marked so
    summaries = _summaries(store)
    assert len(summaries) == len(groups)
    by_id = {r["id"]: np.asarray(r["embedding"], dtype=np.float64) for r in rows}
    for _, sources, how, vector in summaries:
        assert how == spec.MEAN_OF_MEMBERS
        mean = np.mean([by_id[s] for s in sources], axis=0)
        np.testing.assert_allclose(vector, mean / np.linalg.norm(mean), atol=TOL)

    # the log, the metadata and the report say which vectors it clustered on and how summaries were embedded
    section = report_of(tmp_path, result)["embedding"]
    assert section == {
        "vector_model": OPENAI,
        "vector_dim": 1536,
        "vector_source": "imported",
        "vectors_by_source": {"imported": 24},
        "summary_embedding": "mean_of_members",
        "summaries_by_source": {"mean_of_members": 4},
        "vectors_wrong_dimension": 0,
    }
    embedded = metadata(result, "memory_embeddings")
    assert (embedded["vector_compute"], embedded["vector_dim"], embedded["embedded"]) == (
        "none (imported vectors only)", 1536, 0
    )
    for step in ("eligible_memories", "clusters"):
        meta = metadata(result, step)
        assert (meta["vector_model"], meta["vector_dim"], meta["vector_source"]) == (OPENAI, 1536, "imported")
    assert metadata(result, "compressed_memories")["summary_embedding"] == "mean_of_members"


def test_memories_without_an_imported_vector_are_left_out_and_named(tmp_path: Path) -> None:
    rows, groups = grouped_rows(groups=2)
    bare = [{k: v for k, v in r.items() if k not in ("embedding", "embedding_model")} for r in rows[:2]]
    store = _import(tmp_path, bare + rows[2:])
    instance = dg.DagsterInstance.ephemeral()
    result = run_night(tmp_path, EmbedderResource(model=OPENAI, imported=True), instance=instance)
    assert result.success
    assert metadata(result, "memory_embeddings")["left_out_no_vector"] == 2
    [line] = [m for m in log_lines(instance, result.run_id) if "have no 'text-embedding-3-small' vector" in m]
    assert line.startswith("2 active memories") and "(m-0-0, m-0-1)" in line and spec.ENV_PLUGIN in line
    members = {m for c in result.output_for_node("clusters") for m in c.member_ids}
    assert members == set(groups[0][2:]) | set(groups[1])
    with store.connect() as con:  # left out, not embedded by anything
        left = con.execute("SELECT count(*) FROM embeddings WHERE memory_id IN ('m-0-0', 'm-0-1')").fetchall()
    assert left == [(0,)]


@pytest.mark.slow  # a nightly run or two (~12-17 s on 2 shared cores)
def test_plugin_embeds_new_memories_and_summaries_then_reembeds_averaged_ones(tmp_path: Path) -> None:
    topics = [
        "the nightly deploy of the billing service failed because the migration lock timed out again",
        "customer invoices were delayed because the payment webhook retries were exhausted by noon",
    ]
    texts = [f"{t}, check {k}" for t in topics for k in range(1, 6)]  # reports of one statement, numbered
    vectors = toy_1536(texts)
    rows = [
        {
            "id": f"p-{i}",
            "content": text,
            "created_at": "2026-10-20T10:00:00Z",
            **({"embedding": vectors[i].tolist(), "embedding_model": OPENAI} if i not in (0, 5) else {}),
        }
        for i, text in enumerate(texts)
    ]
    store = _import(tmp_path, rows)

    # night 1, offline (no plug-in): p-0 and p-5 are left out, the summaries are averages
    first = run_night(tmp_path, EmbedderResource(model=OPENAI, imported=True))
    assert first.success
    averaged = [s for s in _summaries(store) if s[2] == spec.MEAN_OF_MEMBERS]
    assert len(averaged) == 2

    # night 2 with the plug-in: the averaged summaries are re-embedded by it, and so would be new memories
    later = run_night(tmp_path, EmbedderResource(model=OPENAI, imported=True, plugin=PLUGIN))
    assert later.success
    meta = metadata(later, "memory_embeddings")
    assert (meta["mean_vectors_reembedded"], meta["vector_compute"]) == (2, "plugin")
    with store.connect() as con:
        contents = dict(con.execute("SELECT id, content FROM memories").fetchall())
        assert {r[0]: r[1] for r in con.execute(
            "SELECT memory_id, source FROM embeddings WHERE memory_id IN ('p-0', 'p-5')").fetchall()} == {
            "p-0": "plugin", "p-5": "plugin"}
    for sid, _, how, vector in _summaries(store):
        if sid in {s[0] for s in averaged}:
            assert how == spec.PLUGIN
            np.testing.assert_allclose(vector, toy_1536([contents[sid]])[0], atol=TOL)


def test_plugin_embeds_summaries_of_a_fresh_night(tmp_path: Path) -> None:
    texts = [f"the search index rebuild stalled because the shard replica ran out of disk space, check {n}"
             for n in range(1, 5)]  # fmt: skip
    rows = [{"id": f"s-{i}", "content": t, "created_at": "2026-10-20T10:00:00Z"} for i, t in enumerate(texts)]
    store = _import(tmp_path, rows)
    result = run_night(tmp_path, EmbedderResource(model=OPENAI, plugin=PLUGIN))
    assert result.success
    assert metadata(result, "memory_embeddings")["embedded"] == 4
    [(sid, sources, how, vector)] = _summaries(store)
    assert (sources, how) == ([f"s-{i}" for i in range(4)], spec.PLUGIN)
    with store.connect() as con:
        content = con.execute("SELECT content FROM memories WHERE id = ?", [sid]).fetchall()[0][0]
    np.testing.assert_allclose(vector, toy_1536([content])[0], atol=TOL)
    assert report_of(tmp_path, result)["embedding"]["summary_embedding"] == f"plugin:{PLUGIN}"


def test_wrong_dimension_vectors_of_a_builtin_model_are_recomputed(tmp_path: Path) -> None:
    """A store broken before imports checked dimensions: the night replaces them and says so."""
    texts = [f"the staging cluster lost quorum because two brokers restarted together at {h}h" for h in range(5)]
    rows = [{"id": f"q-{i}", "content": t, "created_at": "2026-10-20T10:00:00Z"} for i, t in enumerate(texts)]
    store = _import(tmp_path, rows)
    with store.transaction() as con:
        repo.upsert_embeddings(con, "hashing-bow-256", ["q-0", "q-1"], np.ones((2, 8), np.float32), utcnow())
    result = run_night(tmp_path, EmbedderResource(model="hashing-bow-256"))
    assert result.success
    assert metadata(result, "memory_embeddings")["wrong_dimension_recomputed"] == 2
    with store.connect() as con:
        assert con.execute("SELECT DISTINCT len(vector) FROM embeddings").fetchall() == [(256,)]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MEMORY_PIPELINE_EMBEDDER": OPENAI}, "unknown model"),
        ({"MEMORY_PIPELINE_EMBEDDER": "imported:"}, "needs a model name"),
        ({"MEMORY_PIPELINE_EMBEDDER": MINILM, "MEMORY_PIPELINE_EMBEDDER_PLUGIN": PLUGIN}, "built-in model"),
    ],
)
def test_bad_settings_name_the_variable(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(spec.EmbedderSettingError, match=message) as info:
        EmbedderResource.from_env()
    assert "MEMORY_PIPELINE_EMBEDDER" in str(info.value) and "\n" not in str(info.value)


def test_settings_parse() -> None:
    assert spec.parse_model_setting("imported:text-embedding-3-small") == (OPENAI, True)
    assert spec.parse_model_setting("") == (MINILM, False)
    e = EmbedderResource(model=OPENAI, imported=True)
    assert (e.can_encode, e.summary_method, e.expected_dimension) == (False, "mean_of_members", 1536)
    with pytest.raises(spec.EmbedderSettingError, match="no encoder for the imported model"):
        e.encode(["x"])
    assert e.encode_text(["a text"]).shape == (1, 384)  # atoms and recall still compare texts (MiniLM)
