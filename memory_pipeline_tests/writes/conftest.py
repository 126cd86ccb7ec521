import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_pipeline.embedding.hashing import hashing_embed
from memory_pipeline.embedding.spec import HASHING
from memory_pipeline.search import build_index
from memory_pipeline.search.engine import clear_cache
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "search_memories.jsonl"


def hashing() -> tuple[Callable[[list[str]], np.ndarray], str]:
    return hashing_embed, HASHING


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """The search fixture's memories, indexed with the hashing embedder (no model weights, fast)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    import_jsonl(MemoryStore(ws / "memory.duckdb"), FIXTURE)
    build_index(ws, hashing_embed, HASHING)
    clear_cache()
    yield ws
    clear_cache()


@contextmanager
def night_holds(store: Path) -> Iterator[None]:
    """Another process holds DuckDB's write lock on `store`, as a night does, until the block ends."""
    code = "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('held', flush=True); sys.stdin.read()"
    proc = subprocess.Popen([sys.executable, "-c", code, str(store)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


def mcp_calls(home: Path, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """The MCP tool calls, in order, through the SDK's own client against a server on `home` (hashing embedder)."""
    import anyio
    from mcp import Client

    from memory_pipeline.mcp.server import build_server

    out: list[Any] = []

    async def run() -> None:
        async with Client(build_server(home, hashing(), record_usage=False)) as client:
            for name, args in calls:
                out.append(await client.call_tool(name, args))

    anyio.run(run)
    return out
