"""The gateway as it runs: `memory-pipeline fleet serve --workers 2` in a subprocess, reached with the SDK's own
streamable-HTTP client; a revoked token; the rate limit across both workers; a server killed after it acknowledged
writes loses none of them; workers whose command is killed stop serving."""

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
from memory_pipeline.store.spool import pending
from memory_pipeline_tests.fleet.gateway_helpers import HEADERS, fleet, rpc
from memory_pipeline_tests.writes.conftest import night_holds

pytestmark = pytest.mark.slow
WAIT_S = 300  # the gateway's start and its workers' stop: minutes, far above the seconds each needs


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def gateway(root: Path, *extra: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = _free_port()
    env = {**os.environ, "MEMORY_PIPELINE_FLEET_ROOT": str(root), "MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # fmt: skip
    log = root / f"serve-{port}.log"  # a file: a pipe nobody reads while the server runs could fill and block it
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "memory_pipeline.cli", "fleet", "serve", "--port", str(port),
                                 *extra], env=env, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            try:
                if httpx2.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert time.monotonic() < deadline, f"the gateway not ready in {WAIT_S} s: {log.read_text(errors='ignore')}"
            time.sleep(0.2)
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.terminate()  # the command stops its workers
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=60)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of its process group
        except ProcessLookupError:
            pass


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
    with gateway(tmp_path, "--workers", "2") as (base, _proc):
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
                              headers={**HEADERS, "Authorization": f"Bearer {keys['bob']}"}, timeout=120)  # fmt: skip
        assert refused.status_code == 401
        again = httpx2.post(f"{base}/mcp", content=rpc("search", {"query": "parks"}),
                            headers={**HEADERS, "Authorization": f"Bearer {keys['alice']}"}, timeout=120)  # fmt: skip
        assert again.status_code == 200 and "a-1" in again.text


def test_every_acknowledged_remember_survives_a_killed_server(tmp_path: Path) -> None:
    keys = fleet(tmp_path, ["alice"])
    home = tmp_path / "agents" / "alice"
    acked: list[str] = []
    with night_holds(home / "memory.duckdb"), gateway(tmp_path, "--workers", "2") as (base, proc):
        for n in range(5):
            r = httpx2.post(f"{base}/mcp", content=rpc("remember", {"text": f"note number {n} about the boiler",
                                                                     "id": f"n-{n}"}),
                            headers={**HEADERS, "Authorization": f"Bearer {keys['alice']}"}, timeout=120)  # fmt: skip
            assert r.status_code == 200 and _structured(r)["stored"] is False
            acked.append(f"n-{n}")
        os.killpg(proc.pid, signal.SIGKILL)  # the command and both workers, as a container is killed
        proc.wait(timeout=60)
    with gateway(tmp_path, "--workers", "1") as (base, _proc):  # one: no other worker still warming holds the store
        con = duckdb.connect(str(home / "memory.duckdb"), read_only=True)  # the restart imported what was spooled
        try:
            ids = {str(row[0]) for row in con.execute("SELECT id FROM memories").fetchall()}
        finally:
            con.close()
        assert set(acked) <= ids and pending(home).records == {}
        r = httpx2.post(f"{base}/mcp", content=rpc("remember", {"text": "after the restart", "id": "n-after"}),
                        headers={**HEADERS, "Authorization": f"Bearer {keys['alice']}"}, timeout=120)  # fmt: skip
        assert r.status_code == 200 and _structured(r)["created"] is True  # spooled until a batch of 32 waits
        assert "n-after" in pending(home).records


def _post(base: str, token: str, name: str, args: dict) -> httpx2.Response:
    # a new connection each time, so the kernel spreads the calls over the workers
    return httpx2.post(f"{base}/mcp", content=rpc(name, args), headers={**HEADERS, "Authorization": f"Bearer {token}"},
                       timeout=120)  # fmt: skip


def test_the_rate_limit_holds_per_agent_across_the_workers(tmp_path: Path) -> None:
    keys = fleet(tmp_path, ["alice", "bob"])
    with gateway(tmp_path, "--workers", "2", "--rate", "0.001", "--burst", "4") as (base, _proc):
        codes = [_post(base, keys["alice"], "search", {"query": "anything"}).status_code for _ in range(10)]
        assert codes == [200] * 4 + [429] * 6
        assert _post(base, keys["bob"], "search", {"query": "anything"}).status_code == 200
    lines = [json.loads(x) for x in (tmp_path / "gateway" / "audit.jsonl").read_text().splitlines()]
    assert [x["status"] for x in lines if x["agent"] == "alice"] == codes


def test_the_workers_stop_when_their_command_is_killed(tmp_path: Path) -> None:
    keys = fleet(tmp_path, ["alice"])
    with gateway(tmp_path, "--workers", "2") as (base, proc):
        assert _post(base, keys["alice"], "search", {"query": "anything"}).status_code == 200
        proc.send_signal(signal.SIGKILL)  # the command alone: its workers get SIGTERM from the kernel
        proc.wait(timeout=60)
        deadline = time.monotonic() + WAIT_S  # the workers' own stop beside load: a bound, not a target
        while True:
            try:
                httpx2.get(f"{base}/healthz", timeout=10)
            except httpx2.ConnectError:
                break  # refused: nobody listens on the port any more
            except httpx2.TransportError:
                pass  # a busy worker that did not answer in time is still a worker: ask again
            assert time.monotonic() < deadline, f"a worker still serves {WAIT_S} s after its command was killed"
            time.sleep(0.3)
