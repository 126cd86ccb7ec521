"""Warm first call: the MCP servers (in process, stdio) and the fleet gateway load the embedder and the
index before they accept a request, so the first call neither loads the model nor the index. No timing here:
each test asserts from the server's own state or log that the loading happened before readiness."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import anyio
import numpy as np
import pytest
from mcp import Client

from memory_pipeline.embedding.hashing import hashing_embed
from memory_pipeline.embedding.spec import HASHING
from memory_pipeline.fleet.gateway import Gateway
from memory_pipeline.mcp.server import build_server, warm_server
from memory_pipeline.resources.embedder import MINILM
from memory_pipeline.search import build_index, live, warm
from memory_pipeline_tests.fleet.gateway_helpers import fleet
from memory_pipeline_tests.search.conftest import minilm


class Recording:
    """An embedder that records each call, its first standing for loading the weights."""

    def __init__(self) -> None:
        self.encode, self.model = minilm()
        self.calls: list[float] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(time.monotonic())
        return self.encode(texts)


def test_the_first_tool_call_loads_neither_model_nor_index(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recording()
    server = build_server(workspace, (rec, rec.model), record_usage=False)
    line = warm_server(workspace, (rec, rec.model))
    warmth = warm.WARMED[str(workspace)]
    assert warmth.problem == "" and warmth.version and warmth.model == MINILM, line
    assert rec.calls and rec.calls[0] <= warmth.done_at  # the weights were loaded by the warm-up
    loads: list[Path] = []
    real = live.load_index
    monkeypatch.setattr(live, "load_index", lambda home: loads.append(home) or real(home))

    async def first_call() -> dict:
        async with Client(server) as client:
            result = await client.call_tool("search", {"query": "price alert on TIA", "k": 3})
            return dict(result.structured_content or {})

    idx = live._cached_index(workspace)
    assert all(seg._docs is not None for seg in idx.segments)  # the documents a first hit reads are built
    before = len(rec.calls)
    answer = anyio.run(first_call)
    assert answer["hits"][0]["id"] == "m-001"
    assert loads == []  # the index was already in memory
    assert len(rec.calls) == before + 1  # only the query's own embedding: no warm-up call left to the request


WAIT_S = 600  # every wait on the stdio server: minutes, far above the seconds each step needs


def _line(stream: IO[bytes], deadline: float) -> bytes:
    """One line from the server's stdout, failing at `deadline` instead of hanging the session on a silent server."""
    line = b""
    while not line.endswith(b"\n"):
        assert time.monotonic() < deadline, f"no whole line from the server by the deadline: {line!r}"
        if select.select([stream], [], [], 1)[0]:
            chunk = os.read(stream.fileno(), 1)
            assert chunk, f"the server closed its stdout: {line!r}"
            line += chunk
    return line


def test_the_stdio_server_says_it_is_warm_before_it_reads_a_request(workspace: Path) -> None:
    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(workspace), "MEMORY_PIPELINE_EMBEDDER": MINILM,
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "memory_pipeline.cli", "mcp"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        assert proc.stderr is not None and proc.stdin is not None and proc.stdout is not None
        deadline, said = time.monotonic() + WAIT_S, b""  # a MiniLM load on busy cores: minutes, not a target
        while b"warm in" not in said:  # nothing has been sent yet: the server warmed on its own
            assert time.monotonic() < deadline and proc.poll() is None, said
            if select.select([proc.stderr], [], [], 1)[0]:
                said += os.read(proc.stderr.fileno(), 4096)
        version = live.current_folder(workspace)
        assert version is not None and version.name in said.decode() and MINILM in said.decode()
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "price alert on TIA", "k": 3}}}  # fmt: skip
        for msg in (init, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call):
            proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()
        answers = [json.loads(_line(proc.stdout, deadline=time.monotonic() + WAIT_S)) for _ in range(2)]
        assert answers[1]["result"]["structuredContent"]["hits"][0]["id"] == "m-001"
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=60)


def test_the_gateway_builds_and_warms_every_agent_before_it_is_ready(tmp_path: Path) -> None:
    fleet(tmp_path, ["alice", "bob"])
    for agent in ("alice", "bob"):
        build_index(tmp_path / "agents" / agent, hashing_embed, HASHING)
    built: list[str] = []
    warmed: list[str] = []

    def factory(home: Path):  # type: ignore[no-untyped-def]
        built.append(home.name)
        return build_server(home, (hashing_embed, HASHING), record_usage=False)

    def warm_up(home: Path) -> None:
        warmed.append(warm.warm(home, (hashing_embed, HASHING)).home)

    gateway = Gateway(tmp_path, factory, warm=warm_up)

    async def start() -> None:
        async with gateway.running():
            assert gateway.ready and gateway.warmed == ["alice", "bob"] == built
            assert warmed == [str(tmp_path / "agents" / a) for a in ("alice", "bob")]
            assert all(warm.WARMED[w].version and not warm.WARMED[w].problem for w in warmed)

    anyio.run(start)
