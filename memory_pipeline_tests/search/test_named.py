"""A question that names a person, host or thing no memory names is not answered confidently with another's value
(search, the MCP search tool), and an empty date range is refused in one line."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_pipeline.cli import main
from memory_pipeline.embedding.hashing import hashing_embed
from memory_pipeline.embedding.spec import HASHING
from memory_pipeline.search import build_index, search
from memory_pipeline.search.engine import SearchInputError, clear_cache
from memory_pipeline.search.named import checked, unnamed
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl

EMBED = (hashing_embed, HASHING)
T0 = datetime(2026, 9, 1, 9)
MEMORIES = ["Alice's birthday is March 3.", "Dan's phone number is 07700 900123.",
            "The staging Redis host is redis-stg-1.", "The front door code is 4711.",
            "Ticket OPS-2231 is about the flaky login test.", "The garden hose is in the shed."]  # fmt: skip


@pytest.fixture
def home(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    lines = [{"id": f"m{i}", "content": t, "created_at": (T0 + timedelta(days=i)).isoformat()}
             for i, t in enumerate(MEMORIES)]  # fmt: skip
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    import_jsonl(MemoryStore(ws / "memory.duckdb"), tmp_path / "m.jsonl")
    build_index(ws, *EMBED)
    clear_cache()
    return ws


NEVER_STORED = [("When is Carol's birthday?", "carol"), ("What is the production Redis host?", "production"),
                ("What is Dan's passport number?", "passport"), ("What is ticket OPS-2232 about?", "ops-2232"),
                ("What is the back door code?", "back")]  # fmt: skip
STORED = ["When is Alice's birthday?", "What is the staging Redis host?", "What is Dan's phone number?",
          "What is ticket OPS-2231 about?", "What is the front door code?"]  # fmt: skip


@pytest.mark.parametrize(("question", "missing"), NEVER_STORED)
def test_a_question_naming_what_no_memory_names_is_not_answered_confidently(home: Path, question: str,
                                                                            missing: str) -> None:  # fmt: skip
    hits = search(question, 3, home=home, embedder=EMBED, floor=0.0)
    assert hits and hits.match == "confident"  # what the engine alone says
    assert missing in unnamed(question, hits)
    out = checked(question, hits)
    assert out.match == "weak" and len(out) == 1 and f"no memory names '{missing}'" in out.notice


@pytest.mark.parametrize("question", STORED)
def test_a_question_whose_named_thing_is_stored_stays_confident(home: Path, question: str) -> None:
    hits = search(question, 3, home=home, embedder=EMBED, floor=0.0)
    assert checked(question, hits).match == "confident"


def test_the_cli_and_the_mcp_tool_mark_it_weak(home: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    import anyio
    from mcp import Client

    from memory_pipeline.mcp.server import build_server

    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setattr("memory_pipeline.search.engine.default_embedder", lambda: EMBED)
    assert main(["search", "-k", "1", "--json", "When is Carol's birthday?"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["match"] == "weak" and "carol" in printed["notice"]
    out: list[Any] = []

    async def run() -> None:
        async with Client(build_server(home, EMBED, record_usage=False)) as client:
            out.append(await client.call_tool("search", {"query": "When is Carol's birthday?", "k": 3}))

    anyio.run(run)
    assert out[0].structured_content["match"] == "weak"


def test_an_empty_date_range_is_refused_in_one_line(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    with pytest.raises(SearchInputError, match="no date is in that range"):
        search("door code", 3, home=home, embedder=EMBED, since="2026-10-01", until="2026-09-01")
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setattr("memory_pipeline.search.engine.default_embedder", lambda: EMBED)
    assert main(["search", "door code", "--since", "2026-10-01", "--until", "2026-09-01"]) == 2
    err = capsys.readouterr().err
    assert "is after until" in err and len(err.strip().splitlines()) == 1


def test_a_word_of_grammar_is_never_taken_for_a_qualifier() -> None:
    from memory_pipeline.search.named import _modifiers

    top = "We will move the status page certificate to automatic renewal, because manual renewals were missed twice."
    assert _modifiers("what did we decide about the status page certificate?", top, [top]) == []
    phone = "Dan's phone number is 555-0134."
    assert _modifiers("What is Dan's passport number?", phone, [phone]) == ["passport"]


def _hit(text: str) -> Any:
    from memory_pipeline.search.hits import Hit

    return Hit(id="m", kind="memory", snippet=text, score=1.0, parts={}, date="2026-09-01", source="store",
               tier="working", categories=[], text=text)


# (question, the first hit, what the question names that the hit does not, or None)
PAIRS = [
    ("What is the max position size per trade?", "Max position size per coin is 2% of the account.", "trade"),
    ("What is the max position size per coin?", "Max position size per coin is 2% of the account.", None),
    # "per" qualifies the noun before it, an identifier names which one, a pronoun is no qualifier
    ("How much may I risk on a single trade?", "Risk limits: at most 2% risk per trade.", None),
    ("Why is the third database server filling up?", "WAL piling up on db-03 and filling the disk.", None),
    ("What should I do to avoid making it worse?", "Volume was low and it was a fakeout.", None),
    # a name said as a part of an identifier is said
    ("What went wrong with the API on Friday?", "Shipped cortex-api to production late on Friday.", None),
    ("What went wrong with the Gateway on Friday?", "Shipped cortex-api to production late on Friday.", "gateway"),
]


@pytest.mark.parametrize(("question", "top", "missing"), PAIRS)
def test_what_a_question_names_against_its_first_hit(question: str, top: str, missing: str | None) -> None:
    found = unnamed(question, [_hit(top)])
    assert (missing in found) if missing else found == [], found
