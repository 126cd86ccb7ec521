import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from memory_pipeline.cli import main
from memory_pipeline.mcp_server import build_server
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


def test_mcp_in_process(workspace: Path) -> None:
    server = build_server(workspace, minilm())

    async def run() -> None:
        async with Client(server) as client:
            await _exercise(client)

    anyio.run(run)
    flush()
    assert pending_files(workspace)  # the hits were spooled as inclusions


def test_mcp_stdio_subprocess(workspace: Path) -> None:
    env = {
        **os.environ,
        "MEMORY_PIPELINE_HOME": str(workspace),
        "MEMORY_PIPELINE_EMBEDDER": MINILM,
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "memory_pipeline.cli", "mcp"], env=env)

    async def run() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await _exercise(client)

    anyio.run(run)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_mcp_streamable_http_on_loopback(workspace: Path) -> None:
    import subprocess
    import time

    port = _free_port()
    env = {
        **os.environ,
        "MEMORY_PIPELINE_HOME": str(workspace),
        "MEMORY_PIPELINE_EMBEDDER": MINILM,
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_pipeline.cli", "mcp", "--transport", "http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        import socket

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)

        async def run() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120) as client:
                await _exercise(client)

        anyio.run(run)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
