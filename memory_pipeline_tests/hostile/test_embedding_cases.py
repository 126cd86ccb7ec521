"""Hostile input for bring-your-own embeddings (vectors whose dimension or model does not fit, plug-ins that fail),
as a table: set-up, command (the real CLI, in process), exit code, memory rows before/after, and the one line that
must say what is wrong."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest

from memory_pipeline import cli
from memory_pipeline.embedding.spec import MINILM
from memory_pipeline.store import MemoryStore
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import utcnow
from memory_pipeline.store.importers import import_jsonl

OPENAI = "text-embedding-3-small"
PLUGIN = "memory_pipeline.embedding.plugins.example:toy_1536"
TOPIC = "the nightly deploy of the billing service failed because the migration lock timed out"


def row(mid: str, vector: list[float] | None = None, model: str | None = None, **extra: Any) -> dict[str, Any]:
    attempt = int.from_bytes(mid.encode(), "little") % 997  # not the id itself: a summary may not leak ids
    out: dict[str, Any] = {"id": mid, "content": f"{TOPIC} on try {attempt}", "created_at": "2026-10-01", **extra}
    if vector is not None:
        out["embedding"] = vector
    if model is not None:
        out["embedding_model"] = model
    return out


def unit(dim: int, seed: int = 0, jitter: float = 0.0) -> list[float]:
    rng = np.random.default_rng(seed)
    v = np.ones(dim) + jitter * rng.normal(size=dim)
    return [float(x) for x in v / np.linalg.norm(v)]


def jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def seed_store(tmp: Path, rows: list[dict[str, Any]]) -> None:
    (tmp / "ws").mkdir(exist_ok=True)
    jsonl(tmp / "seed.jsonl", rows)
    import_jsonl(MemoryStore(tmp / "ws" / "memory.duckdb"), tmp / "seed.jsonl")


def bad_old_store(tmp: Path, good: int = 5, bad: int = 2) -> None:
    """A store written before imports checked dimensions: `good` 4-d 'toy' vectors and `bad` 3-d ones."""
    seed_store(tmp, [row(f"a{i}", unit(4, i, 0.01), "toy") for i in range(good)] + [row(f"b{i}") for i in range(bad)])
    with MemoryStore(tmp / "ws" / "memory.duckdb").transaction() as con:
        ids = [f"b{i}" for i in range(bad)]
        repo.upsert_embeddings(con, "toy", ids, np.ones((bad, 3), np.float32), utcnow(), source="imported")


def parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


def brain_db(path: Path, vectors: list[tuple[str, str, str]]) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE memories (id TEXT PRIMARY KEY, content TEXT, importance REAL, created_at TEXT)")
    con.execute("CREATE TABLE embeddings (memory_id TEXT, model TEXT, vector TEXT)")
    memories = [(m, f"{TOPIC} {m}") for m, _, _ in vectors]
    con.executemany("INSERT INTO memories VALUES (?, ?, 1.0, '2026-10-01')", memories)
    con.executemany("INSERT INTO embeddings VALUES (?, ?, ?)", vectors)
    con.commit()
    con.close()


@dataclass(frozen=True)
class Case:
    name: str
    setup: Callable[[Path], None]
    command: list[str]  # "{tmp}" is the test's directory
    exit_code: int
    rows: tuple[int, int]  # memory rows before → after
    message: str  # regex: exactly one line of the output matches
    env: dict[str, str] = field(default_factory=dict)
    slow: bool = False  # runs the nightly job


CASES = [
    Case(
        "jsonl: 384-d vector declared as text-embedding-3-small",
        lambda t: jsonl(t / "in.jsonl", [row("x1", unit(1536), OPENAI), row("x2", unit(384), OPENAI)]),
        ["import", "{tmp}/in.jsonl"], 2, (0, 0),
        r"in\.jsonl:2: field 'embedding': dimension 384, expected 1536 for model 'text-embedding-3-small' "
        r"\(its native dimension; import shortened vectors under a name of their own",
    ),
    Case(
        "jsonl: wrong dimension under the configured embedder's name, empty store (item 2a)",
        lambda t: jsonl(t / "in.jsonl", [row("x1", unit(8), MINILM)]),
        ["import", "{tmp}/in.jsonl"], 2, (0, 0),
        r"in\.jsonl:1: field 'embedding': dimension 8, expected 384 for model 'sentence-transformers/all-MiniLM",
    ),
    Case(
        "jsonl: unknown model, the file's first vector fixes its dimension",
        lambda t: jsonl(t / "in.jsonl", [row(f"x{i}", unit(4 + (i == 3)), "toy") for i in (1, 2, 3)]),
        ["import", "{tmp}/in.jsonl"], 2, (0, 0),
        r"in\.jsonl:3: field 'embedding': dimension 5, expected 4 for model 'toy' \(the dimension of its first "
        r"vector, at .*in\.jsonl:1\)",
    ),
    Case(
        "jsonl: unknown model, the store's vectors fix its dimension",
        lambda t: (seed_store(t, [row(f"a{i}", unit(4, i), "toy") for i in range(5)]),
                   jsonl(t / "in.jsonl", [row("x1", unit(6), "toy")])),
        ["import", "{tmp}/in.jsonl"], 2, (5, 5),
        r"in\.jsonl:1: field 'embedding': dimension 6, expected 4 for model 'toy' \(the dimension of its vectors "
        r"already in the store\)",
    ),
    Case(
        "jsonl: a vector without its model",
        lambda t: jsonl(t / "in.jsonl", [row("x1", unit(4))]),
        ["import", "{tmp}/in.jsonl"], 2, (0, 0),
        r"in\.jsonl:1: field 'embedding_model': required when 'embedding' is given",
    ),
    Case(
        "parquet: a row with a vector and no embedding_model",
        lambda t: parquet(t / "in.parquet", [row("x1", unit(1536), OPENAI), row("x2", unit(1536), None)]),
        ["import", "{tmp}/in.parquet"], 2, (0, 0),
        r"in\.parquet: row 2: field 'embedding_model': required when 'embedding' is given",
    ),
    Case(
        "parquet: the embedding_model column is honoured (3-large is 3072-d)",
        lambda t: parquet(t / "in.parquet", [row("x1", unit(1536), "text-embedding-3-large")]),
        ["import", "{tmp}/in.parquet"], 2, (0, 0),
        r"in\.parquet: row 1: field 'embedding': dimension 1536, expected 3072 for model 'text-embedding-3-large'",
    ),
    Case(
        "brain.db: a 2-d text-embedding-3-small vector names the embeddings row and the vector field",
        lambda t: brain_db(t / "brain.db", [("x1", OPENAI, json.dumps(unit(2)))]),
        ["import", "{tmp}/brain.db"], 2, (0, 0),
        r"brain\.db: embeddings row 1: field 'vector': dimension 2, expected 1536 for model 'text-embedding-3-small'",
    ),
    Case(
        "jsonl: the configured plug-in's declared dimension decides for its model",
        lambda t: jsonl(t / "in.jsonl", [row("x1", unit(10), "my-model")]),
        ["import", "{tmp}/in.jsonl"], 2, (0, 0),
        r"in\.jsonl:1: field 'embedding': dimension 10, expected 1536 for model 'my-model' \(the dimension the "
        r"configured embedder plug-in declares\)",
        env={"MEMORY_PIPELINE_EMBEDDER": "my-model", "MEMORY_PIPELINE_EMBEDDER_PLUGIN": PLUGIN},
    ),
    Case(
        "run: an unknown model name without imported: or a plug-in",
        lambda t: seed_store(t, [row(f"a{i}", unit(1536, i), OPENAI) for i in range(3)]),
        ["run"], 2, (3, 3),
        r"^configuration error: MEMORY_PIPELINE_EMBEDDER=text-embedding-3-small: unknown model .* set "
        r"MEMORY_PIPELINE_EMBEDDER=imported:text-embedding-3-small",
        env={"MEMORY_PIPELINE_EMBEDDER": OPENAI},
    ),
    Case(
        "run: a plug-in that cannot be imported",
        lambda t: seed_store(t, [row("a0")]),
        ["run"], 2, (1, 1),
        r"^configuration error: MEMORY_PIPELINE_EMBEDDER_PLUGIN=no_such_pkg\.mod:fn: cannot import 'no_such_pkg\.mod'",
        env={"MEMORY_PIPELINE_EMBEDDER": "my-model", "MEMORY_PIPELINE_EMBEDDER_PLUGIN": "no_such_pkg.mod:fn"},
    ),
    Case(
        "embeddings: a store with wrong-dimension vectors is named with the command that fixes it",
        bad_old_store,
        ["embeddings"], 1, (7, 7),
        r"^2 'toy' vector\(s\) have the wrong dimension \(2× 3-d; expected 4, the dimension of most of its "
        r"vectors\) and are left out of clustering: b0, b1; remove them with `memory-pipeline embeddings drop "
        r"--model 'toy' --dim 3`$",
    ),
    Case(
        "embeddings drop: removes the vectors, keeps the memories, snapshots first",
        bad_old_store,
        ["embeddings", "drop", "--model", "toy", "--dim", "3"], 0, (7, 7),
        r"^dropped 2 'toy' vectors \(b0, b1\); memories kept; snapshot before: .*memory-embeddings-drop-\d+T\d+"
        r"\.duckdb$",
    ),
    Case(
        "embeddings drop: nothing of that dimension",
        bad_old_store,
        ["embeddings", "drop", "--model", "toy", "--dim", "9"], 1, (7, 7),
        r"^no 'toy' vectors of dimension 9; nothing dropped$",
    ),
    Case(
        "run: wrong-dimension vectors in the store are left out and named, the night goes on (item 2a)",
        bad_old_store,
        ["run"], 0, (7, 8),
        r"eligible_memories - 2 'toy' vector\(s\) have the wrong dimension \(2× 3-d; expected 4, .*\) and are "
        r"left out of clustering: b0, b1; remove them with `memory-pipeline embeddings drop --model 'toy' --dim 3`",
        env={"MEMORY_PIPELINE_EMBEDDER": "imported:toy"},
        slow=True,
    ),
    Case(
        "run: vectors of mixed dimensions with no majority fail the step with one line",
        lambda t: bad_old_store(t, good=2, bad=2),
        ["run"], 1, (4, 4),
        r"^error: run \S+ failed before writing its report: step \S+ failed: "
        r"cannot tell which 'toy' vectors have the right "
        r"dimension \(\d-d and 2× \d-d, no majority; .*\): remove the wrong ones with `memory-pipeline embeddings "
        r"drop --model 'toy' --dim D`$",
        env={"MEMORY_PIPELINE_EMBEDDER": "imported:toy"},
        slow=True,
    ),
    Case(
        "run: a plug-in whose vectors do not have the stored vectors' dimension stops the night before it embeds",
        lambda t: seed_store(t, [row(f"a{i}", unit(4, i), "toy") for i in range(3)] + [row("n0")]),
        ["run"], 1, (4, 4),
        r"^error: run \S+ failed before writing its report: step \S+ failed: "
        r"MEMORY_PIPELINE_EMBEDDER_PLUGIN=\S+:toy_1536 makes "
        r"1536-d vectors but 'toy' vectors are 4-d \(the dimension of its vectors in the store\): point "
        r"MEMORY_PIPELINE_EMBEDDER_PLUGIN at an embedder of that model",
        env={"MEMORY_PIPELINE_EMBEDDER": "imported:toy", "MEMORY_PIPELINE_EMBEDDER_PLUGIN": PLUGIN},
        slow=True,
    ),
    Case(
        "run: imported vectors the night does not use are mentioned, with the setting that would use them",
        lambda t: seed_store(t, [row(f"a{i}", unit(1536, i), OPENAI) for i in range(5)]),
        ["run"], 0, (5, 6),
        r"memory_embeddings - the store holds 5 imported 'text-embedding-3-small' vectors \(1536-d\) that tonight "
        r"does not use .*; to cluster on them set MEMORY_PIPELINE_EMBEDDER=imported:text-embedding-3-small$",
        env={"MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256"},
        slow=True,
    ),
]


def _memory_rows(tmp: Path) -> int:
    path = tmp / "ws" / "memory.duckdb"
    if not path.exists():
        return 0
    con = duckdb.connect(str(path), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM memories").fetchall()[0][0])
    finally:
        con.close()


def _vectors(tmp: Path) -> list[tuple[str, str, int]]:
    if not (tmp / "ws" / "memory.duckdb").exists():
        return []
    con = duckdb.connect(str(tmp / "ws" / "memory.duckdb"), read_only=True)
    try:
        return con.execute("SELECT memory_id, model, len(vector) FROM embeddings ORDER BY 1, 2").fetchall()
    finally:
        con.close()


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.slow else []) for c in CASES]
)
def test_embedding_case(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    for name in ("MEMORY_PIPELINE_EMBEDDER", "MEMORY_PIPELINE_EMBEDDER_PLUGIN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "ws"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("MEMORY_PIPELINE_PROGRESS", "log")
    case.setup(tmp_path)
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    before = _memory_rows(tmp_path)
    vectors_before = _vectors(tmp_path)

    code = cli.main([part.replace("{tmp}", str(tmp_path)) for part in case.command])

    out, err = capfd.readouterr()
    lines = (out + err).splitlines()
    matching = {line for line in lines if re.search(case.message, line)}  # Dagster repeats a failure per event
    assert len(matching) == 1, f"{len(matching)} distinct lines match {case.message!r}:\n{out}\n{err}"
    assert (code, (before, _memory_rows(tmp_path))) == (case.exit_code, case.rows)
    if case.rows[0] == case.rows[1] and case.command[:2] != ["embeddings", "drop"]:  # nothing half-written
        assert _vectors(tmp_path) == vectors_before
    if case.command[0] != "run":  # the nightly job's own log is Dagster's; our commands print no traceback
        assert "Traceback" not in out + err
