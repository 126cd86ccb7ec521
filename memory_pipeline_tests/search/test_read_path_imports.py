"""The read path imports what it reads: `search`, `context`, `recall` and the MCP server answer without Dagster, the
night's code or the LLM SDK loaded, and once the index is built without pandas either (each import is tenths of a
second to seconds of CPU on every call: a hook, a script, an agent's turn)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = "from memory_pipeline.cli import main\ncode = main(sys.argv[1:])\nsys.stdout.flush()"
MCP = """import anyio
from mcp import Client
from memory_pipeline.mcp.server import build_server, warm_server
async def ask():
    warm_server()
    async with Client(build_server(record_usage=False)) as client:
        for tool, args in (("search", {"query": "retro time"}), ("context", {"message": "When is the retro?"})):
            assert not (await client.call_tool(tool, args)).is_error
anyio.run(ask)
code = 0"""
REPORT = """
night = ("memory_pipeline.defs", "memory_pipeline.abstraction", "memory_pipeline.resources")
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("dagster", "anthropic", "pandas") or m.startswith(night))
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_jsonl

    ws = tmp_path_factory.mktemp("read") / "ws"
    ws.mkdir()
    src = ws.parent / "in.jsonl"
    src.write_text(json.dumps({"id": "m1", "content": "The retro is on Thursdays at 16:30.",
                               "created_at": "2026-10-01T09:00:00Z"}) + "\n")  # fmt: skip
    import_jsonl(MemoryStore(ws / "memory.duckdb"), src)
    return ws


def _loaded(home: Path, body: str, argv: list[str]) -> list[str]:
    """The modules of the night, Dagster, the SDK and pandas that one read in a new process imported."""
    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256",
           "PYTHONPATH": os.pathsep.join(sys.path)}  # fmt: skip
    env.pop("ANTHROPIC_API_KEY", None)
    probe = f"import json, sys\n{body}\n{REPORT}"
    done = subprocess.run([sys.executable, "-c", probe, *argv], env=env, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, done.stdout + done.stderr
    return list(report["loaded"])


@pytest.mark.parametrize(("body", "argv"), [(CLI, ["search", "retro time"]),
                                            (CLI, ["context", "When is the retro?", "--budget", "500"]),
                                            (CLI, ["recall", "When is the retro?"]),
                                            (MCP, [])], ids=["search", "context", "recall", "mcp"])  # fmt: skip
def test_a_read_answers_without_the_night(home: Path, body: str, argv: list[str]) -> None:
    first = _loaded(home, body, argv)  # the first reader may build the index (Arrow from lists loads pandas)
    assert [m for m in first if m.split(".")[0] != "pandas"] == [], f"imported {first[:8]}"
    again = _loaded(home, body, argv)
    assert again == [], f"imported {again[:8]}"
