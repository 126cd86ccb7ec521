"""Slow HTTP clients do not hold connections forever: 31 connections that sent headers and part of a body were all
still held after 70 s. Both HTTP servers run as real processes with the read bounds set low (2 s); raw sockets
stall at each point of a request, and every one must be closed by the server (waited for up to two minutes: no
duration is asserted), after which a normal request is still answered."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest

from memory_pipeline.operator.http_timeouts import BODY_ENV, HEADER_ENV, read_timeouts
from memory_pipeline.settings import SettingsError
from memory_pipeline_tests.fleet.gateway_helpers import HEADERS, fleet, rpc

WAIT_S = 300  # how long a stalled connection may stay open before the test calls it held: far above the bound
# (2 s here), minutes beside load; every wait ends as soon as the server closes, so a pass never waits it out
BOUNDS = {HEADER_ENV: "2", BODY_ENV: "2"}
INIT = (b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
        b'"capabilities": {}, "clientInfo": {"name": "slow", "version": "1"}}}')  # fmt: skip

# (what the client sends before it stalls): every point of a request a slow client can stop at
STALLS = {
    "nothing": b"",
    "part of the headers": b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n",
    "headers and part of the body": (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                     b"Accept: application/json, text/event-stream\r\nContent-Length: 4000\r\n\r\n"
                                     + INIT[:40]),  # fmt: skip
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running(args: list[str], env: dict[str, str], ready: str) -> Iterator[str]:
    """`memory-pipeline <args> --port P` until `ready` answers; always stopped (its process group too)."""
    port = _free_port()
    full = {**os.environ, **env, **BOUNDS, "MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256",
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # fmt: skip
    fd, name = tempfile.mkstemp(prefix="slow-clients-", suffix=".log")  # a file: a pipe nobody reads would fill
    os.close(fd)
    log = Path(name)
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "memory_pipeline.cli", *args, "--port", str(port)], env=full,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            try:
                httpx2.get(f"{base}{ready}", timeout=5)
                break
            except httpx2.TransportError:
                pass
            assert time.monotonic() < deadline, f"{args} did not answer {ready} in {WAIT_S} s: {log.read_text()[-999:]}"
            time.sleep(0.3)
        yield base
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=60)
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
        log.unlink(missing_ok=True)


def _stall(base: str, sent: bytes) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)), timeout=WAIT_S)
    if sent:
        s.sendall(sent)
    return s


def _closed_by_server(s: socket.socket, deadline: float) -> bool:
    """True once the server closed the connection (EOF or reset); False if it was still open at `deadline`."""
    s.settimeout(max(0.1, deadline - time.monotonic()))
    try:
        while s.recv(65536):
            pass  # a 408 or 400 the server may send first
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    finally:
        s.close()


def _every_stalled_connection_is_closed(base: str) -> None:
    held = {name: [_stall(base, sent) for _ in range(4)] for name, sent in STALLS.items()}
    deadline = time.monotonic() + WAIT_S  # one wait for all of them
    still_open = [name for name, socks in held.items() for s in socks if not _closed_by_server(s, deadline)]
    assert still_open == [], f"connections still held after {WAIT_S} s: {still_open}"


@pytest.mark.slow
def test_mcp_http_closes_stalled_connections_and_still_answers(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    home.mkdir()
    with running(["mcp", "--transport", "http"], {"MEMORY_PIPELINE_HOME": str(home)}, "/mcp") as base:
        _every_stalled_connection_is_closed(base)
        r = httpx2.post(f"{base}/mcp", content=INIT, headers=HEADERS, timeout=60)
        assert r.status_code == 200, r.text


@pytest.mark.slow
def test_fleet_serve_closes_stalled_connections_in_every_worker_and_still_answers(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    token = fleet(root, ["alice"])["alice"]
    env = {"MEMORY_PIPELINE_FLEET_ROOT": str(root)}
    with running(["fleet", "serve", "--workers", "2"], env, "/readyz") as base:
        _every_stalled_connection_is_closed(base)  # 12 connections: the kernel spreads them over both workers
        assert httpx2.get(f"{base}/healthz", timeout=30).status_code == 200
        headers = {**HEADERS, "Authorization": f"Bearer {token}"}
        r = httpx2.post(f"{base}/mcp", content=rpc("search", {"query": "ferry"}), headers=headers, timeout=60)
        assert r.status_code == 200, r.text


@pytest.mark.parametrize("raw", ["soon", "0", "-2", "inf"])
def test_a_malformed_bound_is_one_line_naming_it(raw: str) -> None:
    for var in (HEADER_ENV, BODY_ENV):
        with pytest.raises(SettingsError, match=var):
            read_timeouts({var: raw})
