"""A full index build takes the vectors the store already holds for the model and embeds nothing else (found by
`python -m benchmarks gateway`: with DuckDB 2 the statement before the vector lookup left its result open, the
lookup failed, was taken for "no stored vectors", and every memory was embedded again)."""

from datetime import datetime
from pathlib import Path

import numpy as np

from memory_pipeline.search import build_index, search
from memory_pipeline.search.scoring import load_ranking
from memory_pipeline.store import MemoryStore
from memory_pipeline.store import repository as repo
from memory_pipeline.store.records import MemoryRecord

MODEL = "test-stored-16"
NOW = datetime(2026, 11, 1, 3, 30)
# without the abstention gate: it reads each memory's likeness to everyday questions through the embedder, which
# these one-vector test embedders make meaningless (and the process caches per model, so one test's would decide
# another's); what is tested here is which vector the index holds
NO_GATE = load_ranking().with_(background_gate=0.0)


def _store(home: Path, n: int) -> np.ndarray:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((n, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    records = [MemoryRecord(id=f"m-{i:03d}", content=f"note {i} about the ferry {i % 7}", importance=1.0,
                            created_at=NOW)
               for i in range(n)]  # fmt: skip
    store = MemoryStore(home / "memory.duckdb")
    store.migrate()
    with store.transaction() as con:
        repo.insert_memories(con, records)
        repo.upsert_embeddings(con, MODEL, [r.id for r in records], vectors, NOW)
    return vectors


def test_a_full_build_uses_the_stored_vectors_and_embeds_nothing(tmp_path: Path) -> None:
    vectors = _store(tmp_path, 30)
    asked: list[int] = []

    def encode(texts: list[str]) -> np.ndarray:
        asked.append(len(texts))
        return np.tile(vectors[:1], (len(texts), 1))

    stats = build_index(tmp_path, encode, MODEL, full=True)
    assert stats.embedded == 0 and asked == [] and stats.docs == 30
    hits = search("ferry", 3, home=tmp_path, embedder=(lambda texts: vectors[[5]], MODEL), floor=0.0, ranking=NO_GATE)
    assert hits[0].id == "m-005"  # the stored vector of m-005 is what the index holds


def test_an_update_reads_the_new_rows_stored_vectors_with_them_and_embeds_the_rest(tmp_path: Path) -> None:
    _store(tmp_path, 30)
    rng = np.random.default_rng(5)
    fresh = rng.standard_normal((5, 16)).astype(np.float32)
    asked: list[int] = []

    def encode(texts: list[str]) -> np.ndarray:
        asked.append(len(texts))
        return np.tile(fresh[:1] / np.linalg.norm(fresh[0]), (len(texts), 1))

    build_index(tmp_path, encode, MODEL, full=True)
    records = [MemoryRecord(id=f"n-{i}", content=f"a new note {i}", importance=1.0, created_at=NOW) for i in range(5)]
    with MemoryStore(tmp_path / "memory.duckdb").transaction() as con:
        repo.insert_memories(con, records)
        repo.upsert_embeddings(con, MODEL, [r.id for r in records[1:4]], fresh[1:4], NOW)  # n-0 and n-4 have none
        repo.upsert_embeddings(con, "another-model", ["n-4"], fresh[4:], NOW)
    stats = build_index(tmp_path, encode, MODEL)
    assert (stats.added, stats.embedded, asked) == (5, 2, [2])
    hits = search("unrelated words", 1, home=tmp_path, embedder=(lambda texts: fresh[[2]] * 3, MODEL), floor=0.0,
                  ranking=NO_GATE)
    assert hits[0].id == "n-2"  # its stored vector, made unit length
