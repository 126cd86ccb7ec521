"""`memory-pipeline fleet serve`: one streamable-HTTP MCP endpoint (`/mcp`) for every agent of the fleet, with
`/healthz` and `/readyz` for probes.

Each request carries `Authorization: Bearer <token>`; the token names its agent (memory_pipeline.fleet.tokens),
and the request goes to that agent's own MCP server — built by the caller's `factory` for the agent's workspace
and nothing else, with its own session manager (stateless, JSON responses). So a call can only ever open the
workspace of the token's agent: there is no argument naming an agent, and no shared server state between them.

In order, before the MCP layer sees anything: no token, a bad or revoked token, or a removed agent's → 401
(the same answer for all of them); over the agent's rate → 429 with Retry-After; a body over the size limit →
413; a body that is not one JSON-RPC message (a batch) → 400 with a one-line JSON-RPC error
(memory_pipeline.mcp.frames). Every request then writes one JSON line to `<fleet root>/gateway/audit.jsonl`:
time, agent, method, tool, latency, number of hits, HTTP status and outcome — never arguments or results. The
tools, and how they check their arguments, are the agent's MemoryServer's (memory_pipeline.mcp.server). Pure
ASGI (Starlette and the `mcp` SDK); no Dagster."""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.abc
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from memory_pipeline.fleet import IMPORT_BATCH
from memory_pipeline.fleet.registry import agents_dir
from memory_pipeline.fleet.tokens import TokenBook, gateway_dir
from memory_pipeline.mcp.frames import frame_response

ServerFactory = Callable[[Path], MCPServer]  # an agent's workspace -> the MCP server for it alone
Warm = Callable[[Path], object]  # an agent's workspace -> loads its embedder and index (before the first request)


@dataclass(frozen=True)
class GatewayConfig:
    max_body_bytes: int = 1 << 20  # a remember is at most 64 Ki characters; 1 MiB leaves room for JSON
    rate_per_s: float = 20.0  # calls per second per agent, sustained
    burst: int = 40  # calls an agent may make at once after a quiet spell
    import_batch: int = IMPORT_BATCH  # an agent's remembers imported into its store once this many wait
    # a kept-alive connection is closed after this many requests (0: never), as nginx's keepalive_requests: a
    # connection stays with the worker process that accepted it, so a few busy clients could all sit on one
    # worker while another idles; reconnecting lets the kernel hand them to whichever worker is free
    requests_per_connection: int = 100

    def __post_init__(self) -> None:
        if self.max_body_bytes <= 0 or self.rate_per_s <= 0 or self.burst < 1 or self.import_batch < 1:
            raise ValueError("max body bytes, rate, burst and import batch must be positive")
        if self.requests_per_connection < 0:
            raise ValueError("requests per connection must be 0 (never close) or more")


class RateLimiter:
    """A token bucket per agent: `burst` calls at once, refilled at `rate` per second."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, float(burst), clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, agent: str) -> float:
        """0 when the call may go ahead (and it is counted), else the seconds until it may."""
        with self._lock:
            now = self.clock()
            level, then = self._buckets.get(agent, (self.burst, now))
            level = min(self.burst, level + (now - then) * self.rate)
            if level >= 1.0:
                self._buckets[agent] = (level - 1.0, now)
                return 0.0
            self._buckets[agent] = (level, now)
            return (1.0 - level) / self.rate


class Limiter(Protocol):
    def take(self, agent: str) -> float: ...


class AuditLog:
    """One JSON line per request, appended to `<fleet root>/gateway/audit.jsonl` (never any content).

    Each line is one `write()` on a descriptor opened with O_APPEND, so the lines of several worker processes
    interleave whole and never tear into each other. The descriptor is kept open, and opened again when the file
    at the path is another one (rotated away or removed)."""

    def __init__(self, root: Path) -> None:
        self.path = gateway_dir(root) / "audit.jsonl"
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._ino = -1

    def _descriptor(self) -> int:
        try:
            current = os.stat(self.path).st_ino
        except FileNotFoundError:
            current = -1
        if self._fd is not None and current == self._ino:
            return self._fd
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._fd, self._ino = fd, os.fstat(fd).st_ino
        return fd

    def write(self, **fields: Any) -> None:
        line = json.dumps({"time": datetime.now(UTC).isoformat(timespec="milliseconds"), **fields}) + "\n"
        data = line.encode("utf-8")
        with self._lock:
            os.write(self._descriptor(), data)  # the whole line in one append

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd, self._ino = None, -1


def bearer(scope: Scope) -> str | None:
    for key, value in scope.get("headers", []):
        if key == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


def _json_error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


class _TooLarge(Exception):
    pass


async def _read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    for key, value in scope.get("headers", []):
        if key == b"content-length" and value.isdigit() and int(value) > limit:
            raise _TooLarge
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _call_of(body: bytes) -> tuple[str, str]:
    """(JSON-RPC method, tool name) of a request body, '' where it has none."""
    try:
        obj = json.loads(body) if body else None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return "", ""
    if not isinstance(obj, dict):
        return "", ""
    method = obj.get("method") if isinstance(obj.get("method"), str) else ""
    params: dict[str, Any] = obj["params"] if isinstance(obj.get("params"), dict) else {}
    tool = params.get("name") if method == "tools/call" and isinstance(params.get("name"), str) else ""
    return str(method)[:64], str(tool)[:64]


def _result_of(status: int, body: bytes) -> tuple[str, int | None]:
    """(outcome, number of hits) of a JSON response: 'ok', 'error' (a JSON-RPC or tool error), or 'http_<n>'."""
    if status >= 400:
        return f"http_{status}", None
    if b"data:" in body[:64] or body.startswith(b":"):  # an SSE stream (a slow call): its last event is the answer
        events = [line[5:].strip() for line in body.splitlines() if line.startswith(b"data:")]
        body = events[-1] if events else b""
    try:
        obj = json.loads(body) if body else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return "ok", None
    if not isinstance(obj, dict):
        return "ok", None
    if "error" in obj:
        return "error", None
    result: dict[str, Any] = obj["result"] if isinstance(obj.get("result"), dict) else {}
    structured: dict[str, Any] = (
        result["structuredContent"] if isinstance(result.get("structuredContent"), dict) else {}
    )
    hits = structured.get("hits")
    count = len(hits) if isinstance(hits, list) else None
    return ("error" if result.get("isError") else "ok"), count


class Gateway:
    """The `/mcp` ASGI app. Run it inside `running()` (the Starlette lifespan does): agents' session managers
    are started on first use in its task group and stopped with it."""

    def __init__(
        self,
        root: Path,
        factory: ServerFactory,
        config: GatewayConfig | None = None,
        warm: Warm | None = None,
        limiter: Limiter | None = None,
    ) -> None:
        self.root = Path(root)
        self.factory = factory
        self.warm = warm
        self.warmed: list[str] = []  # agents whose server was built and warmed at start-up, in order
        self.config = config or GatewayConfig()
        self.tokens = TokenBook(self.root)
        self.limiter = limiter or RateLimiter(self.config.rate_per_s, self.config.burst)
        self.audit = AuditLog(self.root)
        self._managers: dict[str, StreamableHTTPSessionManager] = {}
        self._served: dict[tuple[Any, ...], int] = {}  # requests answered on each open client connection
        self._lock = anyio.Lock()
        self._tg: anyio.abc.TaskGroup | None = None
        self._open = False  # every agent warmed: /readyz says ready

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                await self._warm_all()
                self._open = True
                yield
            finally:
                self._open = False
                self._tg = None
                self._managers.clear()
                self.audit.close()
                tg.cancel_scope.cancel()

    async def _warm_all(self) -> None:
        """Every registered agent's server built and, with `warm`, its embedder and index loaded — before the
        lifespan lets the first request in (an agent added later is built on its first request, as before)."""
        from memory_pipeline.fleet.registry import list_agents

        for agent in list_agents(self.root):
            await self._manager(agent)
            if self.warm is not None:
                await anyio.to_thread.run_sync(self.warm, agents_dir(self.root) / agent)
            self.warmed.append(agent)

    @property
    def ready(self) -> bool:
        return self._tg is not None and self._open

    async def _manager(self, agent: str) -> StreamableHTTPSessionManager:
        async with self._lock:
            manager = self._managers.get(agent)
            if manager is None:
                if self._tg is None:
                    raise RuntimeError("the gateway is not running (use Gateway.running())")
                server = self.factory(agents_dir(self.root) / agent)
                manager = StreamableHTTPSessionManager(
                    app=server._lowlevel_server,
                    json_response=True,
                    stateless=True,
                    max_request_body_size=self.config.max_body_bytes,
                )
                await self._tg.start(self._host, manager)
                self._managers[agent] = manager
            return manager

    @staticmethod
    async def _host(manager: StreamableHTTPSessionManager, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        async with manager.run():
            task_status.started()
            await anyio.sleep_forever()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        started = time.perf_counter()
        audit: dict[str, Any] = {"agent": None, "method": "", "tool": "", "hits": None}

        def done(status: int, outcome: str) -> None:
            latency = round((time.perf_counter() - started) * 1000, 2)
            self.audit.write(**audit, http_method=scope.get("method", ""), status=status, outcome=outcome,
                             latency_ms=latency)  # fmt: skip

        agent = self.tokens.agent(bearer(scope))
        if agent is None:
            await _json_error(401, "unauthorized: send a valid bearer token (Authorization: Bearer <token>)",
                              {"WWW-Authenticate": 'Bearer realm="memory-pipeline"'})(scope, receive, send)  # fmt: skip
            done(401, "unauthorized")
            return
        audit["agent"] = agent
        wait = self.limiter.take(agent)
        if wait > 0:
            retry = max(1, math.ceil(wait))
            await _json_error(429, f"rate limit: at most {self.config.rate_per_s:g} calls per second; retry in "
                              f"{retry} s", {"Retry-After": str(retry)})(scope, receive, send)  # fmt: skip
            done(429, "rate_limited")
            return
        try:
            body = await _read_body(scope, receive, self.config.max_body_bytes)
        except _TooLarge:
            await _json_error(413, f"request body over {self.config.max_body_bytes:,} bytes")(scope, receive, send)
            done(413, "too_large")
            return
        audit["method"], audit["tool"] = _call_of(body)
        answer = frame_response(body) if scope.get("method") == "POST" else None
        if answer is not None:  # not one JSON-RPC message (a batch, an id that is not one): one line, as stdio
            await answer(scope, receive, send)
            done(400, "invalid_request")
            return
        status, captured = await self._forward(agent, scope, body, receive, send, self._last_on_connection(scope))
        outcome, audit["hits"] = _result_of(status, captured)
        done(status, outcome)

    def _last_on_connection(self, scope: Scope) -> bool:
        """Whether this request's answer closes its connection (`requests_per_connection`)."""
        limit = self.config.requests_per_connection
        if not limit:
            return False
        key = (tuple(scope.get("client") or ()), tuple(scope.get("server") or ()))
        n = self._served.pop(key, 0) + 1
        if n < limit:
            self._served[key] = n  # re-inserted last: the oldest connections are forgotten first
            while len(self._served) > 4096:  # connections the clients closed themselves
                self._served.pop(next(iter(self._served)))
        return n >= limit

    async def _forward(
        self, agent: str, scope: Scope, body: bytes, receive: Receive, send: Send, close: bool = False
    ) -> tuple[int, bytes]:
        """The request, with its body replayed, through the agent's session manager; its status and body. `close`:
        the answer says `Connection: close`."""
        manager = await self._manager(agent)
        sent = False
        status = 500
        captured: list[bytes] = []

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # the body is read: what comes now is the client's disconnect

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                if close:
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            elif message["type"] == "http.response.body" and sum(map(len, captured)) < (1 << 20):
                captured.append(message.get("body", b""))
            await send(message)

        await manager.handle_request(scope, replay, watch)
        return status, b"".join(captured)


def build_app(
    root: Path,
    factory: ServerFactory,
    config: GatewayConfig | None = None,
    warm: Warm | None = None,
    limiter: Limiter | None = None,
) -> Starlette:
    """The whole gateway: `/mcp`, `/healthz` (the process answers) and `/readyz` (it serves: every agent warmed,
    the fleet root and its token table readable). `limiter`: the per-agent rate limit, by default this process's
    own token buckets (`fleet serve --workers N` shares one set between its processes: fleet/serving.py)."""
    # The SDK logs every request at INFO through a rich console handler (~1–5 ms of CPU a call, more than a search
    # of the index); the audit log is the gateway's record of each call, so the SDK says only what went wrong.
    logging.getLogger("mcp").setLevel(logging.WARNING)
    gateway = Gateway(root, factory, config, warm, limiter)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        problems = []
        if not gateway.ready:
            problems.append("not started")
        if not agents_dir(gateway.root).is_dir():
            problems.append(f"no agents directory at {agents_dir(gateway.root)}")
        if not gateway.tokens.readable():
            problems.append("token table unreadable")
        if problems:
            return JSONResponse({"status": "not ready", "problems": problems}, status_code=503)
        return JSONResponse({"status": "ready"})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with gateway.running():
            yield

    app = Starlette(
        routes=[Route("/healthz", healthz), Route("/readyz", readyz), Route("/mcp", gateway)],
        lifespan=lifespan,
    )
    app.state.gateway = gateway
    return app
