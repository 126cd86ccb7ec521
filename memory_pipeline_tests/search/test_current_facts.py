"""Reading what holds now: superseded values ranked after the current one and marked, `as_of` answering with
what held then, the compiled prompt saying which value no longer holds, and a bad `--as-of` refused in one line."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_pipeline.cli import main
from memory_pipeline.context.gate import Gate
from memory_pipeline.context.search_adapter import default_search
from memory_pipeline.context.service import compile_for_agent
from memory_pipeline.embedding.hashing import hashing_embed
from memory_pipeline.embedding.spec import HASHING
from memory_pipeline.search import build_index, search
from memory_pipeline.search.engine import clear_cache
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline.store.validity import Supersession, apply, undo

T0 = datetime(2026, 9, 1, 9, 0)
EMBED = (hashing_embed, HASHING)
VERSIONS = [("r1", "Per-trade risk cap is 2%.", 0), ("r2", "Per-trade risk cap is now 1.5%.", 13),
            ("r3", "Per-trade risk cap is now 1%.", 49), ("n1", "The garden hose is in the shed.", 3)]  # fmt: skip


@pytest.fixture
def home(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    lines = [{"id": i, "content": t, "created_at": (T0 + timedelta(days=d)).isoformat()} for i, t, d in VERSIONS]
    (tmp_path / "v.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    import_jsonl(MemoryStore(ws / "memory.duckdb"), tmp_path / "v.jsonl")
    build_index(ws, *EMBED)
    clear_cache()
    return ws


def _supersede(home: Path) -> None:
    plan = [Supersession("r1", "r2", T0 + timedelta(days=13), "risk cap"),
            Supersession("r2", "r3", T0 + timedelta(days=49), "risk cap")]  # fmt: skip
    with MemoryStore(home / "memory.duckdb").transaction() as con:
        apply(con, plan, "test-run", T0 + timedelta(days=60))


@pytest.mark.parametrize("night", [True, False], ids=["after-a-night", "before-any-night"])
def test_the_current_value_ranks_first_and_older_ones_are_marked(home: Path, night: bool) -> None:
    if night:
        _supersede(home)
    hits = search("per-trade risk cap", 3, home=home, embedder=EMBED, floor=0.0)
    assert [h.id for h in hits] == ["r3", "r2", "r1"]
    assert [(h.superseded_by, h.valid_until[:10]) for h in hits] == [("", ""), ("r3", "2026-10-20"),
                                                                     ("r2", "2026-09-14")]  # fmt: skip


@pytest.mark.parametrize("night", [True, False], ids=["after-a-night", "before-any-night"])
def test_a_small_k_returns_the_current_value(home: Path, night: bool) -> None:
    """The oldest value ranks first on relevance alone (its text is the query's words): `-k 1` returned it and
    `-k 2` skipped the middle one. The current versions are what a small k returns, newest first."""
    if night:
        _supersede(home)
    plain = search("per-trade risk cap", 3, home=home, embedder=EMBED, floor=0.0)
    assert max(plain, key=lambda h: h.score).id == "r1"  # the case: relevance alone puts the oldest first
    assert [h.id for h in search("per-trade risk cap", 1, home=home, embedder=EMBED, floor=0.0)] == ["r3"]
    assert [h.id for h in search("per-trade risk cap", 2, home=home, embedder=EMBED, floor=0.0)] == ["r3", "r2"]


def test_supersessions_are_read_once_per_change_of_the_store(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search on a steady store opens no connection to read validity (one costs more than the search); an
    operator's undo, a commit of its own, is seen by the very next search, and reading does not redo it (the two
    values still read as one fact's versions to the read-time rule)."""
    import memory_pipeline.search.current as current

    opened: list[Path] = []
    real = current.reading_store

    def counting(path: Path) -> Any:
        opened.append(path)
        return real(path)

    monkeypatch.setattr(current, "reading_store", counting)
    _supersede(home)

    def ask() -> list[tuple[str, str]]:
        return [(h.id, h.superseded_by) for h in search("per-trade risk cap", 3, home=home, embedder=EMBED, floor=0.0)]

    assert ask() == [("r3", ""), ("r2", "r3"), ("r1", "r2")]
    first = len(opened)
    assert ask() == [("r3", ""), ("r2", "r3"), ("r1", "r2")]
    assert len(opened) == first  # the store did not change: nothing read again
    undo(MemoryStore(home / "memory.duckdb"), "r2", by="test")
    assert ("r2", "") in ask()  # current again, though r3 states the same fact later
    assert len(opened) == first + 1


def test_as_of_answers_with_what_held_then(home: Path) -> None:
    _supersede(home)
    hits = search("per-trade risk cap", 3, home=home, embedder=EMBED, floor=0.0, as_of="2026-09-20")
    assert [(h.id, h.superseded_by) for h in hits] == [("r2", ""), ("r1", "r2")]  # r3 was not yet stated


def test_the_prompt_says_which_value_no_longer_holds(home: Path) -> None:
    _supersede(home)
    out, _ = compile_for_agent(home, "What is my per-trade risk cap?", budget_tokens=1000, gate=Gate(),
                               search=default_search(home, EMBED, floor=0.0))  # fmt: skip
    now, was = out.prompt.index("is now 1%"), out.prompt.index("is now 1.5%")
    assert now < was and "[2026-09-14, no longer holds since 2026-10-20]" in out.prompt
    then, _ = compile_for_agent(home, "What is my per-trade risk cap?", budget_tokens=1000, gate=Gate(),
                                search=default_search(home, EMBED, floor=0.0, as_of=datetime(2026, 9, 20)))  # fmt: skip
    assert "is now 1%" not in then.prompt and then.prompt.index("1.5%") < then.prompt.index("is 2%")


# (what was typed, what the one line must say): the value as typed (not as expanded to the day's end) and the
# accepted forms; an empty value is refused, not read as "now"
BAD_AS_OF = [("last tuesday", "'last tuesday'"), ("2026-13-45", "'2026-13-45'"), ("", "is empty"), ("  ", "is empty")]


@pytest.mark.parametrize("command", ["search", "context"])
@pytest.mark.parametrize(("value", "said"), BAD_AS_OF, ids=["words", "no-such-day", "empty", "blank"])
def test_a_bad_as_of_is_one_line(home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                 command: str, value: str, said: str) -> None:  # fmt: skip
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", HASHING)
    assert main([command, "risk cap", "--as-of", value]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and said in err and "\n" not in err, err
    assert "2026-11-01" in err and "T23:59:59" not in err  # an accepted form named; nothing we added quoted


def test_mcp_tools_take_as_of_and_refuse_a_bad_one_in_one_line(home: Path) -> None:
    import anyio
    from mcp import Client

    from memory_pipeline.mcp.server import build_server

    _supersede(home)
    out: list[Any] = []

    async def run() -> None:
        async with Client(build_server(home, EMBED, record_usage=False)) as client:
            out.append(await client.call_tool("search", {"query": "per-trade risk cap", "k": 3}))
            out.append(await client.call_tool("search", {"query": "per-trade risk cap", "as_of": "2026-09-20"}))
            out.append(await client.call_tool("context", {"message": "per-trade risk cap?", "as_of": "2026-09-20"}))
            for bad in ("next friday", ""):
                for tool, args in (("search", {"query": "risk cap"}), ("context", {"message": "risk cap?"})):
                    out.append(await client.call_tool(tool, {**args, "as_of": bad}))

    anyio.run(run)
    now, then, ctx, bad_search, bad_context, empty_search, empty_context = out
    for empty in (empty_search, empty_context):
        assert empty.is_error and "as_of is empty" in empty.content[0].text, empty
    hits = now.structured_content["hits"]
    assert hits[0]["superseded_by"] == "" and hits[1]["superseded_by"] == "r3" and hits[1]["valid_until"]
    assert [h["id"] for h in then.structured_content["hits"]][:1] == ["r2"]
    assert "is now 1%" not in ctx.structured_content["prompt"]
    for bad in (bad_search, bad_context):
        assert bad.is_error and "next friday" in bad.content[0].text and "\n" not in bad.content[0].text


def test_a_fact_restated_in_other_words_is_told_apart_before_any_night(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    texts = [("c1", "Our CI runners: 4 in total.", 0), ("c2", "We now run 6 CI runners.", 20),
             ("c3", "The CI cache bucket is ci-cache-eu.", 5)]  # fmt: skip
    lines = [{"id": i, "content": t, "created_at": (T0 + timedelta(days=d)).isoformat()} for i, t, d in texts]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    import_jsonl(MemoryStore(ws / "memory.duckdb"), tmp_path / "c.jsonl")
    build_index(ws, *EMBED)
    clear_cache()
    hits = {h.id: h for h in search("how many CI runners do we run", 3, home=ws, embedder=EMBED, floor=0.0)}
    assert hits["c1"].superseded_by == "c2" and not hits["c2"].superseded_by and not hits["c3"].superseded_by


def _night_over(tmp_path: Path, texts: list[tuple[str, str, int]]) -> Path:
    """A store of `texts`, the night's version plan applied, the index built."""
    from memory_pipeline.abstraction.versions import plan
    from memory_pipeline.store.validity import fact_rows

    ws = tmp_path / "ws"
    ws.mkdir()
    lines = [{"id": i, "content": t, "created_at": (T0 + timedelta(days=d)).isoformat()} for i, t, d in texts]
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    store = MemoryStore(ws / "memory.duckdb")
    import_jsonl(store, tmp_path / "m.jsonl")
    with store.transaction() as con:
        apply(con, plan(fact_rows(con)).supersessions, "test-run", T0 + timedelta(days=90))
    build_index(ws, *EMBED)
    clear_cache()
    return ws


LOOK_ALIKES = [("front", "The front door code is 4711.", 0), ("back", "The back door code is 9022.", 30),
               ("stg", "The staging database host is db-stage-1.", 1),
               ("prod", "The production database host is db-prod-3.", 31),
               ("trade", "Max leverage per trade is 5x.", 2), ("day", "Max leverage per day is 3x.", 32)]  # fmt: skip


@pytest.mark.parametrize(("question", "answer", "other"), [
    ("What is the front door code?", "4711", "9022"),
    ("What is the production database host?", "db-prod-3", "db-stage-1"),
    ("What is the max leverage per trade?", "5x", "3x"),
])  # fmt: skip
def test_a_question_naming_one_qualifier_is_never_answered_with_the_others_value(
    tmp_path: Path, question: str, answer: str, other: str
) -> None:
    ws = _night_over(tmp_path, LOOK_ALIKES)
    hits = search(question, 1, home=ws, embedder=EMBED, floor=0.0)
    assert answer in hits[0].text and other not in hits[0].text
    assert not any(h.superseded_by for h in search(question, 6, home=ws, embedder=EMBED, floor=0.0))


def test_a_note_that_says_the_value_changed_is_what_holds_now_and_as_of_reads_the_older(tmp_path: Path) -> None:
    ws = _night_over(tmp_path, [("s1", "Daily standup is at 9:30.", 0), ("s2", "Standup moved to 10.", 30),
                                ("n1", "The garden hose is in the shed.", 3)])  # fmt: skip
    now = {h.id: h for h in search("when is the standup", 3, home=ws, embedder=EMBED, floor=0.0)}
    assert list(now)[0] == "s2" and now["s1"].superseded_by == "s2"
    then = search("when is the standup", 1, home=ws, embedder=EMBED, floor=0.0, as_of=T0 + timedelta(days=10))
    assert [h.id for h in then] == ["s1"]
