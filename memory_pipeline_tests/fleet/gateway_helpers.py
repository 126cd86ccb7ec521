"""Shared by the gateway tests: a fleet of agents, the gateway app in-process, JSON-RPC calls."""

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
from starlette.applications import Starlette

from memory_pipeline.embedding.hashing import hashing_embed
from memory_pipeline.embedding.spec import HASHING
from memory_pipeline.fleet import registry, tokens
from memory_pipeline.fleet.gateway import GatewayConfig, Limiter, build_app
from memory_pipeline.mcp.server import build_server

NOW = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def fleet(root: Path, agents: list[str]) -> dict[str, str]:
    """Registered agents and a token each."""
    for agent in agents:
        registry.add_agent(root, agent, NOW)
    return {agent: tokens.issue(root, agent, NOW) for agent in agents}


def app_for(root: Path, config: GatewayConfig | None = None, limiter: Limiter | None = None) -> Starlette:
    return build_app(root, lambda home: build_server(home, (hashing_embed, HASHING), record_usage=False), config,
                     limiter=limiter)  # fmt: skip


@asynccontextmanager
async def serving(app: Starlette) -> AsyncIterator[httpx2.AsyncClient]:
    async with app.state.gateway.running():
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://gateway", timeout=60) as http:
            yield http


def rpc(name: str, arguments: dict[str, Any], rid: int = 1) -> bytes:
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    return json.dumps(body).encode()


async def call(http: httpx2.AsyncClient, token: str | None, name: str, arguments: dict[str, Any]) -> httpx2.Response:
    headers = dict(HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return await http.post("/mcp", content=rpc(name, arguments), headers=headers)


def result(response: httpx2.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return dict(json.loads(response.text)["result"])
