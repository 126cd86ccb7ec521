"""The gateway as it runs: `memory-pipeline fleet serve` in a subprocess, reached with the SDK's own streamable-HTTP
client; a revoked token; a server killed after it acknowledged writes loses none of them."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import duckdb
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memory_pipeline.fleet import tokens
from memory_pipeline_tests.fleet.gateway_helpers import HEADERS, fleet, rpc
from memory_pipeline_tests.writes.conftest import night_holds

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def gateway(root: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = _free_port()
    env = {**os.environ, "MEMORY_PIPELINE_FLEET_ROOT": str(root), "MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "memory_pipeline.cli", "fleet", "serve", "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
            try:
                if httpx2.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert time.monotonic() < deadline, "the gateway did not get ready in 90 s"
            time.sleep(0.2)
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)


def _structured(r: httpx2.Response) -> dict:
    return dict(json.loads(r.text)["result"]["structuredContent"])


async def _sdk(base: str, token: str, *calls: tuple[str, dict]) -> list:
    out = []
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with Client(streamable_http_client(f"{base}/mcp", http_client=http), read_timeout_seconds=60) as c:
            out.append({t.name for t in (await c.list_tools()).tools})
            for name, args in calls:
                out.append(await c.call_tool(name, args))
    return out


def test_the_sdk_client_over_http_each_agent_its_own_memory_and_a_revoked_token_is_refused(tmp_path: Path) -> None:
    keys = fleet(tmp_path, ["alice", "bob"])
    with gateway(tmp_path) as (base, _proc):
        names, stored, found = anyio.run(
            _sdk, base, keys["alice"], ("remember", {"text": "Alice parks on level minus two", "id": "a-1"}),
            ("search", {"query": "parks level minus two"}),
        )  # fmt: skip
        assert {"search", "context", "flush", "remember", "forget"} <= names
        assert stored.structured_content["created"] is True
        assert [h["id"] for h in found.structured_content["hits"]] == ["a-1"]
        _names, theirs = anyio.run(_sdk, base, keys["bob"], ("search", {"query": "parks level minus two"}))
        assert theirs.structured_content["hits"] == []
        tokens.revoke(tmp_path, "bob")
        refused = httpx2.post(f"{base}/mcp", content=rpc("search", {"query": "parks"}),
                              headers={**HEADERS, "Authorization": f"Bearer {keys['bob']}"}, timeout=30)  # fmt: skip
        assert refused.status_code == 401
        again = httpx2.post(f"{base}/mcp", content=rpc("search", {"query": "parks"}),
                            headers={**HEADERS, "Authorization": f"Bearer {keys['alice']}"}, timeout=30)  # fmt: skip
        assert again.status_code == 200 and "a-1" in again.text


def test_every_acknowledged_remember_survives_a_killed_server(tmp_path: Path) -> None:
    keys = fleet(tmp_path, ["alice"])
    home = tmp_path / "agents" / "alice"
    acked: list[str] = []
    with night_holds(home / "memory.duckdb"), gateway(tmp_path) as (base, proc):
        for n in range(5):
            r = httpx2.post(f"{base}/mcp", content=rpc("remember", {"text": f"note number {n} about the boiler",
                                                                     "id": f"n-{n}"}),
                            headers={**HEADERS, "Authorization": f"Bearer {keys['alice']}"}, timeout=30)  # fmt: skip
            assert r.status_code == 200 and _structured(r)["stored"] is False
            acked.append(f"n-{n}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=20)
    with gateway(tmp_path) as (base, _proc):
        r = httpx2.post(f"{base}/mcp", content=rpc("remember", {"text": "after the restart", "id": "n-after"}),
                        headers={**HEADERS, "Authorization": f"Bearer {keys['alice']}"}, timeout=30)  # fmt: skip
        assert r.status_code == 200 and _structured(r)["stored"] is True
    con = duckdb.connect(str(home / "memory.duckdb"), read_only=True)
    try:
        ids = {str(row[0]) for row in con.execute("SELECT id FROM memories").fetchall()}
    finally:
        con.close()
    assert set(acked) | {"n-after"} <= ids
