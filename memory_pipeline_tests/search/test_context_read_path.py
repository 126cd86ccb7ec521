"""The context compiler on the real read path: P3 from the hybrid search, the `context` CLI and MCP tool,
and inclusions spooled as usage."""

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client

from memory_pipeline.cli import main
from memory_pipeline.context.sample import install_sample_knowledge
from memory_pipeline.context.search_adapter import default_search, usage_recorder
from memory_pipeline.context.service import compile_for_agent
from memory_pipeline.mcp.server import build_server
from memory_pipeline.resources.embedder import MINILM
from memory_pipeline.search.usage_spool import flush, pending_files
from memory_pipeline_tests.search.conftest import minilm


@pytest.fixture
def ctx_home(workspace: Path) -> Path:
    install_sample_knowledge(workspace)
    return workspace


def test_p3_is_the_hybrid_search_and_inclusions_are_spooled(ctx_home: Path) -> None:
    out, errors = compile_for_agent(
        ctx_home,
        "did I set a price alert on TIA?",
        budget_tokens=2000,
        search=default_search(ctx_home, minilm()),
        record_usage=usage_recorder(ctx_home),
    )
    assert errors == []
    p3 = [e for e in out.manifest if e.slot == "P3" and e.included and e.label != "knowledge"]  # less the header
    assert p3 and p3[0].memory_id == "m-001"  # the stored fact, ranked first by search
    assert "TIA" in out.prompt and out.tokens <= 2000
    assert out.memory_ids[0] == "m-001"
    spooled = [json.loads(line) for f in pending_files(ctx_home) for line in f.read_text().splitlines()]
    assert {row["memory_id"] for row in spooled} == set(out.memory_ids)


def test_context_cli_explain_and_errors(ctx_home: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(ctx_home))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", MINILM)
    assert main(["context", "price alert on TIA", "--budget", "1500", "--explain"]) == 0
    text = capsys.readouterr().out
    assert "+ P0 identity:SOUL.md" in text and "m-001" in text
    assert main(["context", "price alert on TIA", "--budget", "10"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: budget 10 is smaller than the identity files") and len(err.splitlines()) == 1
    history = ctx_home / "h.jsonl"
    history.write_text('{"role": "user", "content": "hi"}\n{"role": "robot", "content": "x"}\n')
    assert main(["context", "hello", "--history", str(history)]) == 2
    assert "h.jsonl:2: field 'role'" in capsys.readouterr().err


def test_context_over_mcp(ctx_home: Path) -> None:
    server = build_server(ctx_home, minilm())

    async def run() -> None:
        async with Client(server) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"search", "context"} <= names
            ok = await client.call_tool(
                "context",
                {"message": "market order on JTO/USDT: price alert on TIA?", "budget_tokens": 3000,
                 "history": [{"role": "user", "content": "morning"}], "agent_output": "    print 'x'"},
            )
            assert not ok.is_error
            sc = ok.structured_content
            assert sc["tokens"] <= 3000 and sc["prompt"].startswith("<!-- identity:SOUL.md -->")
            assert any(s["label"] == "topic:trading-risk" and s["included"] for s in sc["manifest"])
            assert sc["corrections"] == ["code-quality: Use Python 3 syntax: print(...) is a function."]
            small = await client.call_tool("context", {"message": "hi", "budget_tokens": 5})
            assert small.is_error and "raise the budget" in small.content[0].text
            empty = await client.call_tool("context", {"message": ""})
            assert empty.is_error

    anyio.run(run)
    flush()
    assert pending_files(ctx_home)
