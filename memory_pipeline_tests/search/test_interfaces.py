import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters

from memory_pipeline.cli import main
from memory_pipeline.mcp.server import build_server
from memory_pipeline.resources.embedder import MINILM
from memory_pipeline.search.usage_spool import flush, pending_files
from memory_pipeline_tests.search.conftest import minilm


@pytest.fixture
def cli_home(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(workspace))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", MINILM)
    return workspace


def test_cli_prints_hits_and_json(cli_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "price alert on TIA", "-k", "3"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(" 1. m-001") and "Set a price alert on TIA at 5.99" in out
    assert main(["search", "price alert on TIA", "-k", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["hits"][0]["id"] == "m-001" and set(data["hits"][0]["parts"]) >= {"bm25", "vector"}
    assert len(data["hits"]) <= 2


def test_cli_nothing_relevant(cli_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "quantum chromodynamics lattice gauge simulations"]) == 0
    assert "nothing relevant" in capsys.readouterr().out


def test_cli_record_usage_spools_store_hits(cli_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "price alert on TIA", "-k", "1", "--record-usage"]) == 0
    [spool] = pending_files(cli_home)
    rows = [json.loads(line) for line in spool.read_text().splitlines()]
    assert [r["memory_id"] for r in rows] == ["m-001"] and rows[0]["count"] == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["search", ""], "empty query"),
        (["search", "alert", "-k", "0"], "k must be between 1 and 1000"),
        (["search", "alert", "-k", "1001"], "k must be between 1 and 1000"),
        (["search", "alert", "--category", "nope"], "unknown category 'nope'"),
        (["search", "x" * 1_048_576], "query too long"),
    ],
)
def test_cli_bad_input_one_line(
    cli_home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_usage_spool_is_ingested_by_the_graph_usage_import(cli_home: Path) -> None:
    from memory_pipeline.search.usage_ingest import ingest_spool
    from memory_pipeline.store import MemoryStore

    assert main(["search", "price alert on TIA", "-k", "1", "--record-usage"]) == 0
    result = ingest_spool(cli_home)
    assert result == {"files": 1, "events": 1}
    assert not pending_files(cli_home)
    with MemoryStore(cli_home / "memory.duckdb").connect() as con:
        total = con.execute("SELECT included_count_total FROM memories WHERE id = 'm-001'").fetchone()[0]
    assert total == 1
    assert ingest_spool(cli_home) == {"files": 0, "events": 0}


async def _exercise(client: Client) -> None:
    tools = await client.list_tools()
    tool = next(t for t in tools.tools if t.name == "search")
    assert {"query", "k", "category", "with_sources"} <= set(tool.input_schema["properties"])
    ok = await client.call_tool("search", {"query": "price alert on TIA", "k": 3})
    assert not ok.is_error and ok.structured_content["hits"][0]["id"] == "m-001"
    none = await client.call_tool("search", {"query": "quantum chromodynamics lattice gauge simulations"})
    assert not none.is_error and none.structured_content["hits"] == []
    assert none.structured_content["notice"] == "nothing relevant"
    for bad in ({"query": "alert", "k": 0}, {"query": ""}, {"query": "alert", "category": "nope"}, {"k": 3}):
        err = await client.call_tool("search", bad)
        assert err.is_error, bad
    err = await client.call_tool("search", {"query": "alert", "category": "nope"})
    assert "unknown category 'nope'" in err.content[0].text
    # a rejected argument is one line naming it and what is allowed, not pydantic's dump
    for bad, expected in (
        ({"query": "alert", "k": 0}, "search: argument 'k' must be a whole number from 1 to 1000"),
        ({"k": 3}, "search: argument 'query' is required: text of 1 to 4,096 characters"),
        ({"query": "alert", "tier": "hot"}, "search: argument 'tier' must be one of active, archived"),
    ):
        text = (await client.call_tool("search", bad)).content[0].text
        assert text.startswith(expected) and "\n" not in text, text
        assert not any(s in text for s in ("validation error", "pydantic", "Arguments", "search_memory")), text
    assert client.server_info is not None and client.server_info.version == version("memory_pipeline") != ""
    assert client.server_capabilities.prompts is None  # no prompts, so none advertised


def test_mcp_in_process(workspace: Path) -> None:
    server = build_server(workspace, minilm())

    async def run() -> None:
        async with Client(server) as client:
            await _exercise(client)

    anyio.run(run)
    flush()
    assert pending_files(workspace)  # the hits were spooled as inclusions


def _titles(schema: object) -> Iterator[str]:
    """Every schema title (not property names, which are the arguments)."""
    if isinstance(schema, dict):
        if isinstance(schema.get("title"), str):
            yield schema["title"]
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                for prop in value.values():
                    yield from _titles(prop)
            elif key != "title":
                yield from _titles(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _titles(item)


def test_mcp_schemas_are_titled_for_people_and_flush_states_its_time(workspace: Path) -> None:
    async def run() -> list[dict[str, object]]:
        async with Client(build_server(workspace, minilm(), record_usage=False)) as client:
            return [t.model_dump(mode="json", by_alias=True) for t in (await client.list_tools()).tools]

    tools = {t["name"]: t for t in anyio.run(run)}
    for name, tool in tools.items():
        assert tool["inputSchema"]["title"] == f"{name} arguments"
        assert tool["outputSchema"]["title"] == f"{name} result"
        titles = set(_titles(tool["inputSchema"])) | set(_titles(tool["outputSchema"]))
        if name in ("search", "context", "flush"):  # the tools with nested models: those are titled too
            assert {"search hit", "history turn"} & titles, titles
        for title in titles:  # the SDK's defaults are Python names: search_memoryArguments, SearchResponse
            assert not re.search(r"_|[a-z](Arguments|Output)$|[a-z][A-Z]", title), (name, title)
    kind = tools["search"]["inputSchema"]["properties"]["kind"]["description"]
    assert "kinds the workspace holds" in kind and "core" not in kind and "sphere" not in kind
    assert "10 to 20 seconds, up to a minute on a busy machine" in tools["flush"]["description"]  # hooks benchmark


def test_mcp_resources_read_memory_md_journals_and_identity_files_only(workspace: Path) -> None:
    knowledge = workspace / "knowledge"
    (knowledge / "memory").mkdir(parents=True)
    (knowledge / "memory" / "MEMORY.md").write_text("# Core memory\n\n- ferries sell out in June\n", encoding="utf-8")
    (knowledge / "identity").mkdir()
    (knowledge / "identity" / "SOUL.md").write_text("# Soul\n", encoding="utf-8")
    server = build_server(workspace, minilm(), record_usage=False)

    async def run() -> None:
        async with Client(server) as client:
            listed = {str(r.uri): r for r in (await client.list_resources()).resources}
            assert set(listed) == {"memory://MEMORY.md", "memory://identity/SOUL.md"}
            assert all(r.mime_type == "text/markdown" and r.description for r in listed.values())
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            assert templates == {"memory://journal/{day}", "memory://identity/{name}"}
            read = await client.read_resource("memory://MEMORY.md")
            assert read.contents[0].text == (knowledge / "memory" / "MEMORY.md").read_text(encoding="utf-8")
            day = await client.read_resource("memory://journal/2026-10-20")
            assert "ferry to Naxos" in day.contents[0].text
            assert (await client.read_resource("memory://identity/SOUL")).contents[0].text == "# Soul\n"
            for uri, message in (
                ("memory://journal/yesterday", "not an ISO date"),
                ("memory://journal/2020-01-01", "knowledge/journal/2020-01-01.md does not exist"),
                ("memory://identity/..%2F..%2Fmemory.duckdb", "Unknown resource"),
                ("memory://identity/NOPE", "no identity file 'NOPE' (known: SOUL.md)"),
            ):
                with pytest.raises(MCPError, match=re.escape(message)):
                    await client.read_resource(uri)
            (knowledge / "memory" / "MEMORY.md").unlink()
            os.mkfifo(knowledge / "memory" / "MEMORY.md")  # nobody writes to it: a plain open() would hang
            with anyio.fail_after(30), pytest.raises(MCPError, match="is a named pipe"):
                await client.read_resource("memory://MEMORY.md")
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["search"].annotations.read_only_hint and not tools["flush"].annotations.read_only_hint

    anyio.run(run)


def test_mcp_server_keeps_alembic_and_dagster_info_off_stderr(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from memory_pipeline.mcp.server import quiet_libraries

    names = ("alembic", "dagster")
    levels = {name: logging.getLogger(name).level for name in names}
    try:
        build_server(tmp_path, record_usage=False)  # the SDK sets up logging (INFO to stderr) here
        quiet_libraries()  # what `serve` does next
        with caplog.at_level(logging.INFO):  # INFO reaches every handler unless the logger itself drops it
            logging.getLogger("alembic.runtime.migration").info("Context impl SQLiteImpl.")
            logging.getLogger("dagster").info("run started")
            logging.getLogger("alembic.runtime.migration").warning("a real problem")
        assert "SQLiteImpl" not in caplog.text and "run started" not in caplog.text and "a real problem" in caplog.text
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


WAIT_S = 300  # every wait on a server process: minutes, far above the seconds each step needs


def _server_env(workspace: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MEMORY_PIPELINE_HOME": str(workspace),
        "MEMORY_PIPELINE_EMBEDDER": MINILM,
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }


def test_mcp_stdio_subprocess(workspace: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "memory_pipeline.cli", "mcp"],
                                   env=_server_env(workspace))  # fmt: skip

    async def run() -> None:
        with anyio.fail_after(WAIT_S):  # the client stops the server when it leaves, however it leaves
            async with Client(params, read_timeout_seconds=WAIT_S) as client:
                await _exercise(client)

    anyio.run(run)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server whatever happened: SIGTERM, minutes to exit, then SIGKILL (a wait that ran out used to
    leave it serving)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=WAIT_S)


@pytest.mark.slow
def test_mcp_streamable_http_on_loopback(workspace: Path, tmp_path: Path) -> None:
    import socket

    port = _free_port()
    log = tmp_path / "server.log"  # a file, not a pipe nobody reads: a full pipe would block the server's logging
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memory_pipeline.cli", "mcp", "--transport", "http", "--port", str(port)],
            env=_server_env(workspace),
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            assert proc.poll() is None, f"the server exited {proc.returncode}: {log.read_text()[-2000:]}"
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, f"nothing listened on {port} within {WAIT_S} s: {log.read_text()}"
            time.sleep(0.2)

        async def run() -> None:
            with anyio.fail_after(WAIT_S):
                async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=WAIT_S) as client:
                    await _exercise(client)

        anyio.run(run)
        import httpx2

        batch = httpx2.post(f"http://127.0.0.1:{port}/mcp", content=b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]',
                            headers={"Accept": "application/json, text/event-stream",
                                     "Content-Type": "application/json"}, timeout=WAIT_S)  # fmt: skip
        assert batch.status_code == 400 and batch.json()["error"] == {  # one line, not pydantic's dump
            "code": -32600, "message": "Invalid Request: a batch (a JSON array of messages) is not supported; send "
            "one JSON-RPC message per request"}  # fmt: skip
    finally:
        _stop(proc)


def test_usage_batches_queued_together_are_all_written_with_unique_event_ids(tmp_path: Path) -> None:
    from memory_pipeline.search.usage_spool import append_later

    for n in range(50):
        append_later(tmp_path, [f"m-{n}", f"m-{n + 1}", f"m-{n}"])  # a repeated id within a batch counts once
    flush()
    events = [json.loads(line) for f in pending_files(tmp_path) for line in f.read_text().splitlines()]
    assert len(events) == 100 and len({e["event_id"] for e in events}) == 100
    assert [e["memory_id"] for e in events][:4] == ["m-0", "m-1", "m-1", "m-2"]  # queued order kept
