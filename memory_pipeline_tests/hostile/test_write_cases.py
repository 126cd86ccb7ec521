"""Hostile writes: `remember` after `forget`, `forget` while a night holds the store, and field values no store
should keep — through the MCP tools an agent calls and through `import`, which must apply the same rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest
from mcp.server.mcpserver.exceptions import ToolError

from memory_pipeline.cli import main
from memory_pipeline.mcp.server import build_server
from memory_pipeline.search import search
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.forgotten import list_forgotten
from memory_pipeline.store.remember import forget, ingest_writes
from memory_pipeline.store.spool import pending, spool_dir
from memory_pipeline_tests.writes.conftest import hashing, home, mcp_calls, night_holds

__all__ = ["home"]  # the fixture, shared with the writes tests


def _ids(ws: Path, query: str) -> list[str]:
    return [h.id for h in search(query, 5, home=ws, embedder=hashing())]


def _state(ws: Path, mid: str) -> tuple[Any, ...] | None:
    con = duckdb.connect(str(ws / "memory.duckdb"), read_only=True)
    try:
        row = con.execute("SELECT lifecycle FROM memories WHERE id = ?", [mid]).fetchone()
        tombs = con.execute("SELECT reverted_at IS NOT NULL FROM tombstones WHERE memory_id = ? ORDER BY archived_at",
                            [mid]).fetchall()  # fmt: skip
    finally:
        con.close()
    return (row[0] if row else None, [t[0] for t in tombs])


TEXT = "The caretaker's name is Ottilie and she keeps the bike shed key"


@pytest.mark.parametrize("with_id", [True, False], ids=["own-id", "id-from-text"])
def test_remember_after_forget_makes_the_memory_active_again(home: Path, with_id: bool) -> None:
    args = {"text": TEXT, **({"id": "h3-fixed"} if with_id else {})}
    [first] = mcp_calls(home, ("remember", args))
    gone, again, again_twice = mcp_calls(
        home, ("forget", {"id": first.structured_content["id"], "reason": "test"}), ("remember", args),
        ("remember", args),
    )
    mid = first.structured_content["id"]
    assert not gone.is_error, gone.content[0].text
    assert not again.is_error and again.structured_content["revived"] is True
    assert again.structured_content["created"] is False and again.structured_content["stored"] is True
    assert "active again" in again.structured_content["note"]
    assert again_twice.structured_content == {"id": mid, "created": False, "revived": False, "stored": True,
                                              "if_taken": "", "note": "already remembered with this text: nothing "
                                              "written"}  # fmt: skip
    assert _state(home, mid) == ("active", [True])  # the tombstone kept, marked reverted
    assert mid in _ids(home, "caretaker Ottilie bike shed key")
    assert mid not in [r.id for r in list_forgotten(MemoryStore(home / "memory.duckdb"))]


def test_remember_after_forget_while_a_night_holds_the_store(home: Path) -> None:
    text = _content(home, "m-002")
    with night_holds(home / "memory.duckdb"):
        gone, back = mcp_calls(home, ("forget", {"id": "m-002", "reason": "outdated"}),
                            ("remember", {"text": text, "id": "m-002"}))  # fmt: skip
        assert gone.structured_content["stored"] is False and back.structured_content["revived"] is True
        assert "m-002" not in pending(home).forgotten  # the later remember wins in what search reads
    done = ingest_writes(home)
    assert done is not None and (done["forgotten"], done["revived"]) == (1, 1)
    assert _state(home, "m-002") == ("active", [True])


def _content(ws: Path, mid: str) -> str:
    con = duckdb.connect(str(ws / "memory.duckdb"), read_only=True)
    try:
        return str(con.execute("SELECT content FROM memories WHERE id = ?", [mid]).fetchall()[0][0])
    finally:
        con.close()


def test_forget_while_a_night_holds_the_store_is_spooled_hidden_and_applied_afterwards(home: Path) -> None:
    assert _ids(home, "Biscuit the cat allergic chicken")[0] == "m-002"
    with night_holds(home / "memory.duckdb"):
        done, unknown = mcp_calls(home, ("forget", {"id": "m-002", "reason": "moved on"}),
                               ("forget", {"id": "no-such-id", "reason": "typo"}))  # fmt: skip
        assert not done.is_error and done.structured_content["stored"] is False
        assert "applied when the store is free" in done.structured_content["note"]
        # the store cannot be read, the search index can: an id it does not hold is refused at the call
        assert unknown.is_error and "no memory with id 'no-such-id'" in unknown.content[0].text
        assert "m-002" not in _ids(home, "Biscuit the cat allergic chicken")
    counts = ingest_writes(home)
    assert counts is not None and (counts["forgotten"], counts["rejected"]) == (1, 0)
    assert _state(home, "m-002") == ("forgotten", [False])
    assert not (home / "spool" / "rejected.jsonl").exists()
    with pytest.raises(ValueError, match="no memory with id 'no-such-id'"):  # checked at once when free
        forget(home, "no-such-id", "typo")


def test_forget_while_busy_knows_an_id_remembered_since_the_index_was_built(home: Path) -> None:
    """The index can lag the store: a memory an agent remembered since is known from the spool's done files."""
    mcp_calls(home, ("remember", {"text": "The spare key is under the blue pot", "id": "fresh-1"}))
    with night_holds(home / "memory.duckdb"):
        [gone] = mcp_calls(home, ("forget", {"id": "fresh-1", "reason": "moved the key"}))
        assert not gone.is_error, gone.content[0].text
    counts = ingest_writes(home)
    assert counts is not None and (counts["forgotten"], counts["rejected"]) == (1, 0)


BAD_FIELDS: list[tuple[str, dict[str, Any], str]] = [
    ("nan-importance", {"importance": float("nan")}, "importance"),
    ("huge-importance", {"importance": 1e308}, "importance"),
    ("control-chars-id", {"id": "a\nb\tc\x1b[31m"}, "id"),
    ("long-id", {"id": "x" * 5000}, "id"),
    ("path-category", {"category": "../../x"}, "categories"),
    ("ten-thousand-tags", {"tags": [f"t{i}" for i in range(10_000)]}, "tags"),
    ("control-char-tag", {"tags": ["ok", "bad\x1b[2J"]}, "tags"),
]


@pytest.mark.parametrize(("extra", "field"), [c[1:] for c in BAD_FIELDS], ids=[c[0] for c in BAD_FIELDS])
def test_remember_refuses_unbounded_fields_in_one_line(home: Path, extra: dict[str, Any], field: str) -> None:
    server = build_server(home, hashing(), record_usage=False)
    args = {"text": "A perfectly normal note about the garden", **extra}
    with pytest.raises(ToolError) as out:  # straight to the server: a client library would turn NaN into null
        anyio.run(server.call_tool, "remember", args)
    message = str(out.value)
    assert f"field '{field}'" in message and "nothing was written" in message and "\n" not in message
    assert not spool_dir(home).exists()


@pytest.mark.parametrize(("extra", "field"), [c[1:] for c in BAD_FIELDS], ids=[c[0] for c in BAD_FIELDS])
def test_import_applies_the_same_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], extra: dict[str, Any],
    field: str,
) -> None:
    row: dict[str, Any] = {"id": "i-1", "content": "A perfectly normal note", "created_at": "2026-09-01T08:00:00Z"}
    if "category" in extra:
        extra = {"categories": [extra["category"]]}
    row.update(extra)
    source = tmp_path / "bad.jsonl"
    source.write_text(json.dumps(row) + "\n")
    store = tmp_path / "ws" / "memory.duckdb"
    store.parent.mkdir()
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(store.parent))
    assert main(["import", str(source)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"bad.jsonl:1: field '{field}'" in err and "Traceback" not in err
    assert not store.exists() or duckdb.connect(str(store), read_only=True).execute(
        "SELECT count(*) FROM memories").fetchall() == [(0,)]  # fmt: skip
