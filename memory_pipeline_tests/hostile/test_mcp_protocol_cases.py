"""Hostile input on the MCP server's protocol and tool arguments, over every way in: the stdio server, the
streamable-HTTP app of `memory-pipeline mcp --transport http`, and the fleet gateway (which serves the same
tools, one MemoryServer per agent).

Requests whose id is not one (`"id": null`, `"id": {"a": 1}`), batches, protocol params of the wrong type
(`"arguments": "TIA"`), arguments a tool does not take (`search {"home": "/etc"}`), values of the wrong JSON type
(`k: true`, `k: "3"`), tool errors that named the server's absolute paths or the tool twice, and journal lines a
flush made with a doubled label or a role name in them. The SDK's own client drives the server wherever a
well-formed request can carry the case; the rest are raw lines or bodies, since the client cannot send them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver.exceptions import ToolError
from starlette.testclient import TestClient

from memory_pipeline.context.sample import install_sample_knowledge
from memory_pipeline.embedding.hashing import hashing_embed
from memory_pipeline.embedding.spec import HASHING
from memory_pipeline.journals.extractors import EXTRACTORS
from memory_pipeline.journals.flush import parse_turns, write_flush
from memory_pipeline.journals.knowledge import JournalItem, journal_text
from memory_pipeline.journals.transcript import parse_transcript
from memory_pipeline.mcp.server import build_server
from memory_pipeline.mcp.stdio import frame_error
from memory_pipeline.search import build_index
from memory_pipeline.search.engine import clear_cache
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline_tests.fleet.gateway_helpers import HEADERS, app_for, fleet, serving
from memory_pipeline_tests.hostile.test_read_path_cases import _Lines, env_for

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "search_memories.jsonl"
WAIT_S = 180  # every wait on a subprocess: minutes, far above the seconds each step needs


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The search fixture's memories (hashing embedder, no model weights) and the sample identity files and
    topics; the offline LLM, so the context gate never calls out."""
    ws = tmp_path / "ws"
    ws.mkdir()
    import_jsonl(MemoryStore(ws / "memory.duckdb"), FIXTURE)
    build_index(ws, hashing_embed, HASHING)
    install_sample_knowledge(ws)
    monkeypatch.setenv("MEMORY_PIPELINE_LLM", "offline")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    clear_cache()
    return ws


def _server(home: Path) -> Any:
    return build_server(home, (hashing_embed, HASHING), record_usage=False)


@asynccontextmanager
async def _client(via: str, home: Path, tmp_path: Path) -> AsyncIterator[Client]:
    """The SDK's client on the single-agent server (in process), or on the fleet gateway over streamable HTTP
    (in process, one agent whose workspace is a copy of `home`)."""
    if via == "server":
        async with Client(_server(home)) as client:
            yield client
        return
    import shutil

    root = tmp_path / "fleet"
    token = fleet(root, ["ada"])["ada"]
    agent = root / "agents" / "ada"
    shutil.rmtree(agent)
    shutil.copytree(home, agent)
    app = app_for(root)
    async with app.state.gateway.running():
        transport = httpx2.ASGITransport(app=app)
        async with (
            httpx2.AsyncClient(transport=transport, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
            Client(streamable_http_client("http://gateway/mcp", http_client=http)) as client,
        ):
            yield client


def _calls(via: str, home: Path, tmp_path: Path, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    out: list[Any] = []

    async def run() -> None:
        with anyio.fail_after(WAIT_S):
            async with _client(via, home, tmp_path) as client:
                for name, args in calls:
                    out.append(await client.call_tool(name, args))

    anyio.run(run)
    return out


def _one_line_error(result: Any) -> str:
    assert result.is_error, result
    text = str(result.content[0].text)
    assert "\n" not in text and "validation error" not in text and "pydantic" not in text, text
    return text


# ---------------------------------------------------------------------------------------------------------------
# Point 2 and 13: request ids that are not one, batches — one line each, on every transport.

BAD_ID_LINES = [
    '{"jsonrpc": "2.0", "id": null, "method": "ping"}',
    '{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}',
    '{"jsonrpc": "2.0", "id": true, "method": "ping"}',
    '{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',
    '{"jsonrpc": "2.0", "id": [1], "method": "ping"}',
]


@pytest.mark.parametrize("line", BAD_ID_LINES)
def test_a_request_whose_id_is_not_one_gets_invalid_request_with_id_null(line: str) -> None:
    error = frame_error(line)
    assert error is not None, "the SDK reads it as a notification: no answer, the client waits forever"
    assert error.id is None and error.error.code == -32600
    assert error.error.message.startswith("Invalid Request: 'id' must be a string or a whole number; got ")
    assert "\n" not in error.error.message


@pytest.mark.parametrize(
    "line",
    [
        '{"jsonrpc": "2.0", "id": 0, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": "a-1", "method": "ping"}',
        '{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        '{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"id": null, "progressToken": 1, '
        '"progress": 1}}',
    ],
)
def test_a_request_with_a_good_id_and_a_notification_pass_through(line: str) -> None:
    assert frame_error(line) is None


@pytest.mark.parametrize(("unit", "body"), [("line", '[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]'),
                                            ("request", "[]")])  # fmt: skip
def test_a_batch_is_one_line_saying_batches_are_not_supported(unit: str, body: str) -> None:
    error = frame_error(body, unit=unit)
    assert error is not None and error.id is None and error.error.code == -32600
    assert error.error.message == ("Invalid Request: a batch (a JSON array of messages) is not supported; send "
                                   f"one JSON-RPC message per {unit}")  # fmt: skip


def _init(rid: int = 1) -> dict[str, Any]:
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": hello}


TIA = {"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "search", "arguments": "TIA"}}
TIA_MESSAGE = "Invalid params for tools/call: 'arguments' must be an object (argument names to values); got \"TIA\""


@pytest.mark.slow
def test_mcp_stdio_answers_bad_ids_batches_and_bad_params_in_one_line(home: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "memory_pipeline.cli", "mcp"],
                            env=env_for(home, MEMORY_PIPELINE_EMBEDDER=HASHING), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdin is not None
    stdin = proc.stdin

    def send(raw: str) -> None:
        stdin.write(raw.encode() + b"\n")
        stdin.flush()

    try:
        lines = _Lines(proc)
        send(json.dumps(_init()))
        assert lines.next("initialize")["id"] == 1
        send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        for raw in [*BAD_ID_LINES[:2], '[{"jsonrpc": "2.0", "id": 3, "method": "ping"}]']:
            send(raw)
            answer = lines.next(raw)
            assert answer["id"] is None and answer["error"]["code"] == -32600, (raw, answer)
        send(json.dumps(TIA))
        answer = lines.next("tools/call with arguments \"TIA\"")
        assert answer["id"] == 12 and answer["error"]["code"] == -32602, answer
        assert answer["error"]["message"] == TIA_MESSAGE and answer["error"]["data"] == {"fields": ["arguments"]}
        send(json.dumps({"jsonrpc": "2.0", "id": 13, "method": "ping"}))  # still serving
        assert lines.next("ping") == {"jsonrpc": "2.0", "id": 13, "result": {}}
    finally:
        stdin.close()
        try:
            proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=WAIT_S)
            pytest.fail(f"the server did not exit within {WAIT_S} s of stdin closing")
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.returncode == 0 and "Traceback" not in stderr, stderr


HTTP_CASES = [  # body, expected HTTP status, JSON-RPC id and error code, the message's start
    ('[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', 400, None, -32600, "Invalid Request: a batch"),
    ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', 400, None, -32600, "Invalid Request: 'id' must be"),
    ("not json", 400, None, -32700, "Parse error: the request is not JSON"),
    (json.dumps(TIA), 200, 12, -32602, TIA_MESSAGE),
]


def _check_http(status: int, text: str, want: tuple[str, int, Any, int, str]) -> None:
    _, code, rid, error_code, message = want
    assert status == code, text
    answer = json.loads(text)
    assert answer["id"] == rid and answer["error"]["code"] == error_code, answer
    assert answer["error"]["message"].startswith(message) and "\n" not in answer["error"]["message"], answer
    assert "validation error" not in answer["error"]["message"]


@pytest.mark.parametrize("case", HTTP_CASES, ids=["batch", "id-null", "not-json", "arguments-TIA"])
def test_mcp_http_answers_a_batch_a_bad_id_and_bad_params_in_one_line(home: Path, case: tuple[Any, ...]) -> None:
    app = _server(home).streamable_http_app(stateless_http=True, json_response=True)
    with TestClient(app, base_url="http://127.0.0.1:8765") as http:  # its lifespan runs the session manager
        answer = http.post("/mcp", content=case[0], headers=HEADERS)
    _check_http(answer.status_code, answer.text, case)


@pytest.mark.parametrize("case", HTTP_CASES, ids=["batch", "id-null", "not-json", "arguments-TIA"])
def test_the_gateway_answers_a_batch_a_bad_id_and_bad_params_in_one_line(tmp_path: Path, case: tuple[Any, ...]) -> None:
    root = tmp_path / "fleet"
    token = fleet(root, ["ada"])["ada"]

    async def run() -> tuple[int, str]:
        async with serving(app_for(root)) as http:
            answer = await http.post("/mcp", content=case[0], headers={**HEADERS, "Authorization": f"Bearer {token}"})
            return answer.status_code, answer.text

    _check_http(*anyio.run(run), case)
    audit = [json.loads(line) for line in (root / "gateway" / "audit.jsonl").read_text().splitlines()]
    assert audit[-1]["status"] == case[1] and audit[-1]["outcome"] in ("invalid_request", "error"), audit[-1]


# ---------------------------------------------------------------------------------------------------------------
# Point 5: an argument a tool does not take is refused, naming it and the ones it takes — every tool, both servers.

UNKNOWN = [  # tool, arguments, the unknown names as the line quotes them
    ("search", {"query": "price alert", "home": "/etc"}, "'home'"),
    ("search", {"query": "price alert", "agent": "bob"}, "'agent'"),
    ("context", {"message": "deploy now", "budget_token": 50}, "'budget_token'"),
    ("flush", {"turns": [{"role": "user", "content": "hi"}], "session": "s1"}, "'session'"),
    ("remember", {"text": "The ferry leaves at nine", "memory_id": "f-1"}, "'memory_id'"),
    ("forget", {"id": "m-001", "reason": "stale", "force": True}, "'force'"),
    ("search", {"query": "price alert", "home": "/etc", "agent": "bob"}, "'home', 'agent'"),
]


@pytest.mark.parametrize("via", ["server", "gateway"])
def test_an_unknown_argument_is_refused_naming_it_and_the_ones_the_tool_takes(
    home: Path, tmp_path: Path, via: str
) -> None:
    schemas = {t.name: t.input_schema for t in anyio.run(_tools, home)}
    results = _calls(via, home, tmp_path, *[(tool, args) for tool, args, _ in UNKNOWN])
    for (tool, _, names), result in zip(UNKNOWN, results, strict=True):
        text = _one_line_error(result)
        takes = ", ".join(schemas[tool]["properties"])
        assert text.startswith(f"{tool}: unknown argument") and f" {names} (this tool takes: {takes})" in text, text
    assert not (home / "spool" / "writes").exists() or not any((home / "spool" / "writes").iterdir())
    assert not (home / "raw").exists()  # the refused flush wrote no transcript


async def _tools(home: Path) -> list[Any]:
    async with Client(_server(home)) as client:
        return list((await client.list_tools()).tools)


def test_every_tools_schema_says_it_takes_no_other_arguments(home: Path) -> None:
    tools = anyio.run(_tools, home)
    assert {t.name for t in tools} == {"search", "context", "flush", "remember", "forget"}
    for tool in tools:
        assert tool.input_schema.get("additionalProperties") is False, tool.name


def test_context_takes_budget_as_the_cli_says_and_budget_tokens_too(home: Path, tmp_path: Path) -> None:
    negative, budget, older, both, same = _calls(
        "server", home, tmp_path,
        ("context", {"message": "deploy now", "budget": -5}),
        ("context", {"message": "deploy now", "budget": 3000}),
        ("context", {"message": "deploy now", "budget_tokens": 2500}),
        ("context", {"message": "deploy now", "budget": 3000, "budget_tokens": 2500}),
        ("context", {"message": "deploy now", "budget": 3000, "budget_tokens": 3000}),
    )  # fmt: skip
    assert _one_line_error(negative).startswith("context: argument 'budget' must be a whole number from 1 to ")
    assert budget.structured_content["budget"] == 3000 and budget.structured_content["tokens"] <= 3000
    assert older.structured_content["budget"] == 2500
    assert _one_line_error(both) == ("context: 'budget' (3000) and 'budget_tokens' (2500) are the same argument: "
                                     "give one of them")  # fmt: skip
    assert same.structured_content["budget"] == 3000


# ---------------------------------------------------------------------------------------------------------------
# Point 6: strict types — a value of the wrong JSON type is refused in one line, not converted.

LOOSE = [  # tool, arguments, the start of the line
    ("search", {"query": "price alert", "k": True}, "search: argument 'k' must be a whole number from 1 to 1000"),
    ("search", {"query": "price alert", "k": "3"}, "search: argument 'k' must be a whole number from 1 to 1000"),
    ("search", {"query": "price alert", "k": 2.5}, "search: argument 'k' must be a whole number"),
    ("search", {"query": 42}, "search: argument 'query' must be text of 1 to 4,096 characters"),
    ("search", {"query": "price alert", "with_sources": "true"},
     "search: argument 'with_sources' must be true or false"),
    ("context", {"message": "deploy now", "main_session": 0}, "context: argument 'main_session' must be true or false"),
    ("context", {"message": "deploy now", "budget": "4000"}, "context: argument 'budget' must be a whole number"),
    ("context", {"message": "hi", "history": [{"role": "user", "content": 5}]},
     "context: argument 'history.0.content' must be text"),
    ("context", {"message": "hi", "history": [{"role": "user", "content": "a", "mood": "calm"}]},
     "context: argument 'history.0' has no field 'mood' (it takes: role, content, tool)"),
    ("remember", {"text": "The ferry leaves at nine", "importance": "2"}, "remember: argument 'importance' must be"),
    ("remember", {"text": "The ferry leaves at nine", "tags": "travel"}, "remember: argument 'tags' must be a list"),
    ("forget", {"id": 17, "reason": "stale"}, "forget: argument 'id' must be text"),
    ("flush", {"turns": [{"role": "user", "content": ["hi"]}]}, "flush: argument 'turns.0.content' must be text"),
]  # fmt: skip


def test_a_value_of_the_wrong_type_is_refused_not_converted(home: Path, tmp_path: Path) -> None:
    results = _calls("server", home, tmp_path, *[(tool, args) for tool, args, _ in LOOSE])
    for (tool, args, start), result in zip(LOOSE, results, strict=True):
        text = _one_line_error(result)
        assert text.startswith(start) and ("; got " in text or "has no field" in text), (tool, args, text)
    assert not (home / "spool" / "writes").exists() or not any((home / "spool" / "writes").iterdir())


# ---------------------------------------------------------------------------------------------------------------
# Point 11 and 14: tool errors name workspace files relative to it, and the tool once.


def test_tool_errors_and_warnings_name_workspace_paths_relative_to_it(home: Path, tmp_path: Path) -> None:
    os.mkfifo(home / "knowledge" / "identity" / "PIPE.md")
    server = _server(home)

    def broken() -> str:  # a tool whose own error names a file by its absolute path, as a lower layer may
        raise ToolError(f"{home / 'knowledge' / 'journal'} is not writable; nothing in {home} was changed")

    server.add_tool(broken, name="broken")

    async def run() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool("context", {"message": "deploy now", "budget_tokens": 20}),
                    await client.call_tool("context", {"message": "deploy now"}),
                    await client.call_tool("broken", {})]  # fmt: skip

    small, fine, own = anyio.run(run)
    text = _one_line_error(small)
    assert text.startswith("context: budget 20 is smaller than the identity files (") and str(tmp_path) not in text
    assert "tokens, knowledge/identity): raise the budget to at least" in text, text
    warnings = fine.structured_content["warnings"]
    assert warnings == ["knowledge/identity/PIPE.md: is a named pipe (FIFO), not a regular file: skipped; replace "
                        "it with a regular file"], warnings  # fmt: skip
    assert _one_line_error(own) == "broken: knowledge/journal is not writable; nothing in the workspace was changed"


def test_a_tools_error_names_the_tool_once(home: Path, tmp_path: Path) -> None:
    first, conflict, unknown = _calls(
        "server", home, tmp_path,
        ("remember", {"text": "The harbour master is Eleni", "id": "h3-fixed"}),
        ("remember", {"text": "Something else entirely", "id": "h3-fixed"}),
        ("forget", {"id": "no-such-memory", "reason": "stale"}),
    )  # fmt: skip
    assert not first.is_error
    for result, tool in ((conflict, "remember"), (unknown, "forget")):
        text = _one_line_error(result)
        assert text.startswith(f"{tool}: ") and f"{tool}: {tool}:" not in text, text
    assert "h3-fixed" in conflict.content[0].text and "no-such-memory" in unknown.content[0].text


def test_flushed_turns_become_journal_lines_without_a_doubled_label_or_a_role_name(tmp_path: Path) -> None:
    """The flush path as the journal pipeline runs it: the turns as a transcript, the offline extractors on it,
    the day's journal from what they found."""
    turns = parse_turns([
        {"role": "user", "content": "Decided: we will move the nightly backup to 02:00 UTC from now on."},
        {"role": "assistant", "content": "Lesson learned: always check the disk quota before the backup starts."},
    ])  # fmt: skip
    done = write_flush(tmp_path / "raw", turns)
    transcript = parse_transcript(done.path.read_text(encoding="utf-8"), done.path)
    items = [JournalItem("ops", e.kind, c.content, (str(n),)) for e in EXTRACTORS.values()
             for n, c in enumerate(e.find(transcript))]  # fmt: skip
    from datetime import date

    journal = journal_text(date(2026, 11, 20), [done.session_id], items)
    assert "- Decided: We will move the nightly backup to 02:00 UTC from now on." in journal, journal
    assert "- Lesson: Always check the disk quota before the backup starts." in journal, journal
    assert "Decided: Decided:" not in journal and "assistant:" not in journal, journal
    assert write_flush(tmp_path / "raw", turns).written is False  # the same turns are still the same flush


# ---------------------------------------------------------------------------------------------------------------
# Point 15: what the help and the docs say about the server.

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_mcp_help_names_every_tool_and_the_resources(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_pipeline.cli import main

    monkeypatch.setenv("COLUMNS", "400")  # argparse wraps at the terminal's width, hyphenated words too
    with pytest.raises(SystemExit) as done:
        main(["mcp", "--help"])
    assert done.value.code == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "the tools search, context, flush, remember and forget, and read-only resources" in said, said


def _documented_arguments(page: str) -> set[tuple[str, str]]:
    """(tool, argument) for every row of the page's table of tool arguments (the paragraph **Tool arguments.**)."""
    text = page.split("**Tool arguments.**", 1)[1]
    rows = [line for line in text.splitlines() if line.startswith("|")]
    out: set[tuple[str, str]] = set()
    tool = ""
    for row in rows[2:]:  # the header and its rule
        cells = [c.strip() for c in row.strip("|").split("|")]
        tool = cells[0].strip("`") or tool
        out |= {(tool, name) for name in re.findall(r"`([a-z_]+)`", cells[1])}
    return out


def test_reading_memory_lists_every_argument_of_every_tool(home: Path) -> None:
    schemas = {(t.name, arg) for t in anyio.run(_tools, home) for arg in t.input_schema["properties"]}
    documented = _documented_arguments((DOCS / "reading-memory.md").read_text(encoding="utf-8"))
    assert documented == schemas, (sorted(schemas - documented), sorted(documented - schemas))


def test_the_fleet_page_says_serving_needs_neither_postgresql_nor_redis() -> None:
    page = (DOCS / "fleet.md").read_text(encoding="utf-8")
    serving = " ".join(page.split("## Serving a fleet", 1)[1].split("\n## ", 1)[0].split())
    assert "It needs neither PostgreSQL nor Redis" in serving


def test_optional_numbers_have_a_plain_typed_schema(tmp_path: Path) -> None:
    """A client that types its arguments from the schema (the MCP Inspector's CLI) sent "1500" for `anyOf
    [integer, null]`; each optional number is a plain integer or number with a default."""
    import anyio
    from mcp import Client

    from memory_pipeline.embedding.hashing import hashing_embed
    from memory_pipeline.embedding.spec import HASHING
    from memory_pipeline.mcp.server import build_server

    schemas: dict[str, dict] = {}

    async def run() -> None:
        async with Client(build_server(tmp_path, (hashing_embed, HASHING), record_usage=False)) as client:
            for tool in (await client.list_tools()).tools:
                schemas[tool.name] = tool.input_schema["properties"]

    anyio.run(run)
    for tool, name, kind in (("context", "budget", "integer"), ("context", "budget_tokens", "integer"),
                             ("remember", "importance", "number"), ("search", "k", "integer")):  # fmt: skip
        prop = schemas[tool][name]
        assert prop.get("type") == kind and "anyOf" not in prop and "default" in prop, (tool, name, prop)
