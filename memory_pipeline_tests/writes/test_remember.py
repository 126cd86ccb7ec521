import json
import os
from pathlib import Path
from typing import Any

import duckdb
import pytest

from memory_pipeline.cli import main
from memory_pipeline.search import search
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.invariants import archived_without_summary, summaries_with_unarchived_sources
from memory_pipeline.store.remember import WriteError, forget, ingest_writes, remember
from memory_pipeline.store.spool import build_record, pending, spool_dir
from memory_pipeline_tests.writes.conftest import hashing, mcp_calls, night_holds


def _ids(home: Path, query: str) -> list[str]:
    return [h.id for h in search(query, 5, home=home, embedder=hashing())]


def _row(home: Path, mid: str) -> tuple[Any, ...] | None:
    con = duckdb.connect(str(home / "memory.duckdb"), read_only=True)
    try:
        return con.execute("SELECT content, lifecycle, archived_by, source FROM memories WHERE id = ?",
                           [mid]).fetchone()  # fmt: skip
    finally:
        con.close()


def _count(home: Path) -> int:
    con = duckdb.connect(str(home / "memory.duckdb"), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM memories").fetchall()[0][0])
    finally:
        con.close()


def test_remember_over_mcp_is_searchable_at_once_and_idempotent_on_its_id(home: Path) -> None:
    text = "The harbour master at Piraeus is called Eleni Vasilaki"
    first, again, other, found = mcp_calls(
        home,
        ("remember", {"text": text, "id": "client-1", "category": "travel", "tags": ["greece"], "importance": 2}),
        ("remember", {"text": text, "id": "client-1"}),
        ("remember", {"text": "Something else entirely", "id": "client-1"}),
        ("search", {"query": "harbour master Piraeus", "k": 3}),
    )
    assert not first.is_error and first.structured_content == {"id": "client-1", "created": True, "revived": False,
                                                                "stored": True, "if_taken": "", "note": ""}  # fmt: skip
    assert not again.is_error and again.structured_content["created"] is False
    assert other.is_error
    message = other.content[0].text
    assert "client-1" in message and "Eleni Vasilaki" in message and "Something else entirely" in message
    assert "\n" not in message
    assert found.structured_content["hits"][0]["id"] == "client-1"
    assert _row(home, "client-1") == (text, "active", None, "mcp:remember")


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"text": "   "}, "'text'"),
        ({"text": "x" * 10_000_000}, "'text'"),
        ({"text": "fine", "importance": -1}, "'importance'"),
        ({"text": "fine", "importance": float("nan")}, "'importance'"),
        ({"text": "fine", "id": "  "}, "'id'"),
        ({"text": "nul \x00 inside"}, "'text'"),
    ],
)
def test_bad_remember_is_one_line_and_writes_nothing(home: Path, args: dict[str, Any], field: str) -> None:
    before = _count(home)
    with pytest.raises(ValueError) as err:
        remember(home, build_record(args.get("text"), None, args.get("importance"), None, args.get("id")))
    assert field in str(err.value) and "nothing was written" in str(err.value) and "\n" not in str(err.value)
    assert _count(home) == before and not spool_dir(home).exists()


def test_forget_hides_from_search_and_context_keeps_a_tombstone_and_is_restored_by_the_operator(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _ids(home, "Biscuit the cat allergic chicken")[0] == "m-002"
    done, again, unknown, ctx = mcp_calls(
        home,
        ("forget", {"id": "m-002", "reason": "the user asked me to"}),
        ("forget", {"id": "m-002", "reason": "twice"}),
        ("forget", {"id": "no-such-id", "reason": "x"}),
        ("context", {"message": "What should Biscuit the cat eat, chicken?", "budget_tokens": 4000}),
    )
    assert not done.is_error and done.structured_content["stored"] is True
    assert again.is_error and "already forgotten" in again.content[0].text
    assert "the user asked me to" in again.content[0].text
    assert unknown.is_error and "no memory with id 'no-such-id'" in unknown.content[0].text
    assert not ctx.is_error and "Biscuit" not in ctx.structured_content["prompt"]
    assert "m-002" not in _ids(home, "Biscuit the cat allergic chicken")
    row = _row(home, "m-002")
    assert row is not None and row[1] == "forgotten" and str(row[2]).startswith("forgotten:")
    con = duckdb.connect(str(home / "memory.duckdb"), read_only=True)
    try:
        tomb = con.execute("SELECT reason, run_id, reverted_at FROM tombstones WHERE memory_id = 'm-002'").fetchall()
        assert tomb == [("the user asked me to", "forget", None)]
        assert archived_without_summary(con) == [] and summaries_with_unarchived_sources(con) == []
    finally:
        con.close()
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hashing-bow-256")
    assert main(["forgotten", "list"]) == 0
    assert "m-002" in capsys.readouterr().out
    assert main(["forgotten", "restore", "m-002", "--by", "tester"]) == 0
    assert _row(home, "m-002")[1] == "active"
    assert _ids(home, "Biscuit the cat allergic chicken")[0] == "m-002"
    assert main(["forgotten", "restore", "m-002"]) == 2  # not forgotten any more: one line, nothing written
    assert "not forgotten" in capsys.readouterr().err


def test_while_a_night_holds_the_store_writes_are_spooled_searchable_and_imported_afterwards(home: Path) -> None:
    with night_holds(home / "memory.duckdb"):
        done = remember(home, build_record("The spare key hangs behind the boiler in the cellar", memory_id="k-1"))
        assert done.created and not done.stored
        assert remember(home, build_record("The spare key hangs behind the boiler in the cellar", memory_id="k-1")
                        ).created is False  # fmt: skip
        with pytest.raises(ValueError, match="already stored with other text"):
            remember(home, build_record("Another text", memory_id="k-1"))
        assert _ids(home, "spare key boiler cellar")[0] == "k-1"
        assert forget(home, "k-1", "moved the key").stored is False
        assert "k-1" not in _ids(home, "spare key boiler cellar")
        lines = [json.loads(x) for p in spool_dir(home).glob("*.jsonl") for x in p.read_text().splitlines()]
        assert [e["op"] for e in lines] == ["remember", "forget"]
        assert ingest_writes(home) is None  # still busy: kept
    assert ingest_writes(home) == {"files": 1, "inserted": 1, "revived": 0, "restated": 0, "forgotten": 1,
                                   "renamed": 0, "conflicts": 0, "rejected": 0}  # fmt: skip
    assert _row(home, "k-1")[:2] == ("The spare key hangs behind the boiler in the cellar", "forgotten")
    assert pending(home).records == {} and "k-1" not in _ids(home, "spare key boiler cellar")
    assert ingest_writes(home) == {"files": 0, "inserted": 0, "revived": 0, "restated": 0, "forgotten": 0,
                                   "renamed": 0, "conflicts": 0, "rejected": 0}  # fmt: skip


def test_a_summary_or_an_archived_memory_cannot_be_forgotten(home: Path) -> None:
    store = MemoryStore(home / "memory.duckdb")
    with store.transaction() as con:
        con.execute("UPDATE memories SET lifecycle = 'archived', archived_by = 'c-1' WHERE id = 'm-003'")
        con.execute("UPDATE memories SET kind = 'summary', compressed_from = '{\"source_ids\": [\"m-003\"]}' "
                    "WHERE id = 'm-004'")  # fmt: skip
    with pytest.raises(ValueError, match="is archived into c-1, not active"):
        forget(home, "m-003", "x")
    with pytest.raises(ValueError, match="is a summary"):
        forget(home, "m-004", "x")
    with pytest.raises(ValueError, match="field 'reason'"):
        forget(home, "m-001", "  ")
    assert not spool_dir(home).exists()


def test_the_agent_writes_asset_imports_what_was_spooled_while_the_store_was_busy(home: Path) -> None:
    import dagster as dg

    from memory_pipeline.defs.search.assets import agent_writes
    from memory_pipeline.resources import MemoryStoreResource

    with night_holds(home / "memory.duckdb"):
        assert not remember(home, build_record("Dentist appointment moved to Thursday 9:30", memory_id="d-1")).stored
    result = dg.materialize([agent_writes], resources={"store": MemoryStoreResource(home=str(home))})
    [mat] = result.asset_materializations_for_node("agent_writes")
    assert mat.metadata["inserted"].value == 1 and _row(home, "d-1") is not None


def test_spooled_writes_are_imported_in_the_order_they_were_made_whatever_their_files_names(home: Path) -> None:
    folder = spool_dir(home)
    folder.mkdir(parents=True)
    record = {"id": "o-1", "content": "Order matters here", "importance": 1.0, "categories": [], "tags": [],
              "created_at": "2026-11-20T09:00:00", "kind": "observation", "source": "mcp:remember"}  # fmt: skip
    forget_line = {"op": "forget", "id": "o-1", "reason": "later", "event": "e1", "at": "2026-11-20T09:00:02.000000"}
    (folder / "20261120-1.jsonl").write_text(json.dumps(forget_line) + "\n")  # sorts first, happened last
    (folder / "20261120-2.jsonl").write_text(
        json.dumps({"op": "remember", "record": record, "at": "2026-11-20T09:00:01.000000"}) + "\n"
    )
    assert "o-1" not in _ids(home, "order matters")  # pending: remembered, then forgotten
    assert ingest_writes(home) == {"files": 2, "inserted": 1, "revived": 0, "restated": 0, "forgotten": 1,
                                   "renamed": 0, "conflicts": 0, "rejected": 0}  # fmt: skip
    row = _row(home, "o-1")
    assert row is not None and row[1] == "forgotten"


def test_a_stored_memory_stays_findable_while_another_process_holds_the_store(home: Path) -> None:
    remember(home, build_record("The spare key to the boathouse hangs behind the barometer", memory_id="k-1"))
    assert _ids(home, "spare key boathouse barometer")[0] == "k-1"  # the store's view, read after the write
    with night_holds(home / "memory.duckdb"):
        os.utime(home / "memory.duckdb", ns=(1, 1))  # as a writer's commit changes the file: the view is stale
        done = remember(home, build_record("The boathouse alarm code is written in the log book", memory_id="k-2"))
        assert done.stored is False
        hits = search("boathouse", 5, home=home, embedder=hashing())
        assert {"k-1", "k-2"} <= {h.id for h in hits}  # the view last read, and the spool
        assert "store busy" not in hits.notice


def test_remember_checks_the_schema_once_per_store_and_again_for_a_replaced_file(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_pipeline.store import remember as module

    migrations: list[Path] = []
    real = MemoryStore.migrate

    def counted(self: MemoryStore) -> list[int]:
        migrations.append(self.path)
        return real(self)

    monkeypatch.setattr(MemoryStore, "migrate", counted)
    monkeypatch.setattr(module, "_MIGRATED", set())
    for n in range(3):
        assert remember(home, build_record(f"Tide table number {n} for the estuary", memory_id=f"t-{n}")).stored
    assert len(migrations) == 1
    fresh = home.parent / "fresh"
    fresh.mkdir()
    assert remember(fresh, build_record("A new workspace's first memory", memory_id="f-1")).stored
    assert len(migrations) == 2 and _row(fresh, "f-1") is not None


def test_batched_remembers_wait_spooled_and_searchable_until_the_batch_is_full(home: Path) -> None:
    before = _count(home)
    texts = [f"Lighthouse keeper log entry {n} mentions the quayside crane" for n in range(3)]
    first = [remember(home, build_record(t, memory_id=f"b-{n}"), import_at=3) for n, t in enumerate(texts[:2])]
    assert all(r.created and not r.stored for r in first)
    assert _count(home) == before  # the store is untouched: nothing for a server's store view to re-read
    assert sorted(pending(home).records) == ["b-0", "b-1"]
    assert "b-1" in _ids(home, "lighthouse keeper log entry quayside crane")
    again = remember(home, build_record(texts[0], memory_id="b-0"), import_at=3)
    assert not again.created and not again.stored  # the same id and text, still spooled: nothing written
    with pytest.raises(WriteError, match="'b-0' is already stored with other text"):
        remember(home, build_record("Something else entirely", memory_id="b-0"), import_at=3)
    assert forget(home, "b-1", "a duplicate log line").stored  # a forget imports what waits, then forgets
    assert _row(home, "b-1")[1] == "forgotten" and _row(home, "b-0") is not None
    third = remember(home, build_record(texts[2], memory_id="b-2"), import_at=2)
    assert third.created and not third.stored and _row(home, "b-2") is None  # one waiting: under the batch
    fourth = remember(home, build_record("Quayside crane inspection passed", memory_id="b-3"), import_at=2)
    assert fourth.stored and _row(home, "b-2") is not None and _row(home, "b-3") is not None
    assert pending(home).records == {} and _count(home) == before + 4
