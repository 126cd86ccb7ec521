import json
import sqlite3
import struct
from pathlib import Path

import numpy as np
import pytest

from memory_pipeline.store import MemoryStore, StoreError
from memory_pipeline.store import repository as repo
from memory_pipeline.store.importers import import_brain_db, import_jsonl, import_path
from memory_pipeline.store.migrations import MIGRATIONS
from memory_pipeline.store.records import ImportRejected

GOOD = {
    "id": "m-1",
    "content": "Whales bought BTC.",
    "importance": 1.2,
    "categories": ["trading"],
    "created_at": "2026-10-01T10:00:00Z",
}


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def count(store: MemoryStore) -> int:
    with store.connect() as con:
        return repo.memory_count(con)


def test_migrations_are_versioned_and_idempotent(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m.duckdb")
    assert store.migrate() == [m.version for m in MIGRATIONS]
    assert store.migrate() == []
    assert store.schema_version() == max(m.version for m in MIGRATIONS)
    assert len({m.version for m in MIGRATIONS}) == len(MIGRATIONS)  # domains never reuse a version


def test_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="workspace folder does not exist"):
        MemoryStore(tmp_path / "nope" / "m.duckdb").migrate()


def test_jsonl_import_round_trip(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m.duckdb")
    second = GOOD | {
        "id": "m-2",
        "categories": "ops, meta",
        "pinned": True,
        "embedding": [0.1, 0.2],
        "embedding_model": "toy",
    }
    summary = import_jsonl(store, write_jsonl(tmp_path / "in.jsonl", [GOOD, "", second]))
    assert (summary.memories, summary.embeddings) == (2, 1)
    with store.connect() as con:
        rows = con.execute("SELECT id, categories, pinned, lifecycle, token_count FROM memories ORDER BY id").fetchall()
        assert rows[0] == ("m-1", ["trading"], False, "active", 6)
        assert rows[1][1:3] == (["ops", "meta"], True)
        np.testing.assert_allclose(repo.vectors_for(con, "toy", ["m-2"]), [[0.1, 0.2]], rtol=1e-6)


BAD_LINES = [
    ({"id": "", "content": "x", "created_at": "2026-10-01"}, "field 'id'"),
    (GOOD | {"content": "   "}, "field 'content': required non-empty string"),
    (GOOD | {"importance": "NaN"}, "field 'importance': must be a finite number"),
    (GOOD | {"importance": True}, "field 'importance': expected a number"),
    (GOOD | {"created_at": "yesterday"}, "field 'created_at': not an ISO-8601 timestamp"),
    ({k: v for k, v in GOOD.items() if k != "created_at"}, "field 'created_at': required"),
    (GOOD | {"categories": [1, 2]}, "field 'categories': expected a list of strings"),
    (GOOD | {"lifecycle": "gone"}, "field 'lifecycle'"),
    (GOOD | {"pinned": "yes"}, "field 'pinned'"),
    (GOOD | {"embedding": [0.1]}, "field 'embedding_model': required"),
    ("{not json", "field '<line>': invalid JSON"),
    ("[1, 2]", "expected a JSON object"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_LINES)
def test_bad_jsonl_rejected_whole_naming_file_line_and_field(tmp_path: Path, bad: object, message: str) -> None:
    store = MemoryStore(tmp_path / "m.duckdb")
    path = write_jsonl(tmp_path / "in.jsonl", [GOOD | {"id": "ok-1"}, GOOD | {"id": "ok-2"}, bad])
    with pytest.raises(ImportRejected) as info:
        import_jsonl(store, path)
    text = str(info.value)
    assert f"{path}:3" in text and message in text and "nothing was written" in text
    assert count(store) == 0


def test_invalid_utf8_and_duplicate_ids_are_rejected(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m.duckdb")
    path = tmp_path / "in.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n" + b'{"id": "\xff\xfe"}\n' + json.dumps(GOOD).encode() + b"\n")
    with pytest.raises(ImportRejected) as info:
        import_jsonl(store, path)
    assert f"{path}:2: field '<line>': invalid UTF-8" in str(info.value)
    assert f"{path}:3: field 'id': duplicate id 'm-1' (first at {path}:1)" in str(info.value)
    assert count(store) == 0


def test_wrong_vector_dimension_is_rejected(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m.duckdb")
    vec = {"embedding_model": "toy"}
    import_jsonl(store, write_jsonl(tmp_path / "a.jsonl", [GOOD | vec | {"embedding": [0.1, 0.2]}]))
    path = write_jsonl(tmp_path / "b.jsonl", [GOOD | vec | {"id": "m-2", "embedding": [0.1, 0.2, 0.3]}])
    with pytest.raises(ImportRejected, match=rf"{path}:1: field 'embedding': dimension 3, expected 2 for 'toy'"):
        import_jsonl(store, path)
    path = write_jsonl(
        tmp_path / "c.jsonl",
        [
            GOOD | vec | {"id": "n-1", "embedding": [1.0, 0.0], "embedding_model": "x"},
            GOOD | vec | {"id": "n-2", "embedding": [1.0], "embedding_model": "x"},
        ],
    )
    with pytest.raises(ImportRejected, match=rf"{path}:2: field 'embedding': dimension 1, expected 2"):
        import_jsonl(store, path)
    assert count(store) == 1


def test_ids_already_in_store_are_rejected(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m.duckdb")
    import_jsonl(store, write_jsonl(tmp_path / "a.jsonl", [GOOD]))
    with pytest.raises(ImportRejected, match=r"1 id\(s\) already in the store \(m-1\)"):
        import_jsonl(store, write_jsonl(tmp_path / "b.jsonl", [GOOD | {"id": "m-9"}, GOOD]))
    assert count(store) == 1


def make_brain_db(path: Path, rows: list[tuple[object, ...]], vectors: dict[str, bytes | str]) -> Path:
    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE memories (id TEXT PRIMARY KEY, content TEXT, importance REAL, categories TEXT, created_at TEXT,"
        " compressed_from TEXT, archived_by TEXT, archived_at TEXT)"
    )
    con.execute("CREATE TABLE embeddings (memory_id TEXT, vector BLOB)")
    con.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, NULL, NULL, NULL)", rows)
    con.executemany("INSERT INTO embeddings VALUES (?, ?)", list(vectors.items()))
    con.commit()
    con.close()
    return path


def test_brain_db_import(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m.duckdb")
    db = make_brain_db(
        tmp_path / "brain.db",
        [
            ("a", "first memory", 1.0, '["trading","meta"]', "2026-10-01 10:00:00"),
            ("b", "second memory", 2.7, "ops", "2026-10-02T10:00:00Z"),
        ],
        {"a": struct.pack("<3f", 0.5, 0.25, 0.125), "b": "[1.0, 0.0, 0.0]"},
    )
    summary = import_path(store, db)
    assert (summary.memories, summary.embeddings) == (2, 2)
    with store.connect() as con:
        cats = con.execute("SELECT categories FROM memories ORDER BY id").fetchall()
        assert cats == [(["trading", "meta"],), (["ops"],)]
        np.testing.assert_allclose(repo.vectors_for(con, "imported:brain.db", ["a"]), [[0.5, 0.25, 0.125]])


def test_bad_brain_db_row_names_row_and_field(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m.duckdb")
    db = make_brain_db(
        tmp_path / "brain.db",
        [("a", "fine", 1.0, "x", "2026-10-01"), ("b", "", 1.0, "x", "2026-10-01")],
        {"a": b"\x00\x00\x80"},
    )
    with pytest.raises(ImportRejected) as info:
        import_brain_db(store, db)
    assert f"{db}: memories row 2: field 'content'" in str(info.value)
    assert f"{db}: embeddings row 1: field 'vector': BLOB of 3 bytes is not float32" in str(info.value)
    assert count(store) == 0


def test_unknown_format_and_missing_file(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m.duckdb")
    (tmp_path / "x.csv").write_text("id\n")
    with pytest.raises(ValueError, match="unknown import format"):
        import_path(store, tmp_path / "x.csv")
    with pytest.raises(FileNotFoundError, match="no such file"):
        import_path(store, tmp_path / "missing.jsonl")


def test_eligible_set_survives_the_io_manager_pickle_with_its_list_columns(tmp_path: Path) -> None:
    import pickle
    from datetime import datetime

    from memory_pipeline.store.records import MemoryRecord

    store = MemoryStore(tmp_path / "m.duckdb")
    store.migrate()
    records = [
        MemoryRecord(
            id=f"m-{i}",
            content=f"memory {i}",
            importance=1.0,
            created_at=datetime(2026, 10, 1),
            categories=["ops", f"c{i}"],
            tags=[f"t{i}"] if i % 2 else [],
            nexus_keys=["k:shared"],
        )
        for i in range(5)
    ]
    vectors = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    with store.transaction() as con:
        repo.insert_memories(con, records)
        repo.upsert_embeddings(con, "model", [r.id for r in records], vectors, datetime(2026, 10, 2))
    with store.connect() as con:
        eligible = repo.load_eligible(con, "model", 2.5, datetime(2026, 11, 1))
    back = pickle.loads(pickle.dumps(eligible))
    assert list(back.frame.columns) == list(eligible.frame.columns) and len(back.frame) == 5
    assert back.frame.dtypes.to_dict() == eligible.frame.dtypes.to_dict()
    for column in ("categories", "tags", "nexus_keys"):
        assert [list(v) for v in back.frame[column]] == [list(v) for v in eligible.frame[column]]
    assert np.array_equal(back.vectors, vectors) and back.vectors.dtype == np.float32
