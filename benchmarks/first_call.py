"""`python -m benchmarks first-call`: an MCP stdio server's first `search` and `context` calls, with MiniLM, timed
from the client once the server has said it is warm (the model and the index load before the first
request, so the first call costs what a later one does; target ≤ 150 ms). The workspace is the search tests'
fixture (24 memories and a journal, indexed with MiniLM), built in a temporary folder."""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import append_results, load_average, machine, table

FIXTURE = Path(__file__).resolve().parent.parent / "memory_pipeline_tests" / "fixtures" / "search_memories.jsonl"


def _workspace(home: Path) -> None:
    from memory_pipeline.resources.embedder import MINILM, EmbedderResource
    from memory_pipeline.search import build_index
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_jsonl

    import_jsonl(MemoryStore(home / "memory.duckdb"), FIXTURE)
    build_index(home, EmbedderResource(model=MINILM).encode, MINILM)


def _calls(home: Path, n: int) -> dict[str, Any]:
    from memory_pipeline.resources.embedder import MINILM

    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "MEMORY_PIPELINE_EMBEDDER": MINILM}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "memory_pipeline.cli", "mcp"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    said = b""
    try:
        while b"warm in" not in said:
            if proc.poll() is not None:
                raise RuntimeError(f"the server stopped: {said.decode(errors='replace')}")
            if select.select([proc.stderr], [], [], 1)[0]:
                said += os.read(proc.stderr.fileno(), 4096)
        ready_s = time.perf_counter() - t0

        def rpc(rid: int, method: str, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], float]:
            msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
            if params is not None:
                msg["params"] = params
            if rid:
                msg["id"] = rid
            t = time.perf_counter()
            proc.stdin.write((json.dumps(msg) + "\n").encode())  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
            if not rid:
                return {}, 0.0
            answer = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
            return answer, (time.perf_counter() - t) * 1000

        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
        rpc(1, "initialize", hello)
        rpc(0, "notifications/initialized")
        queries = ["price alert on TIA", "when is the ferry to Naxos", "what is the cat allergic to", "deploy freeze"]
        search_ms, context_ms = [], []
        first_answer_s = 0.0
        for i in range(n):
            q = queries[i % len(queries)] + ("" if i < len(queries) else f" {i}")
            _, ms = rpc(10 + 2 * i, "tools/call", {"name": "search", "arguments": {"query": q, "k": 5}})
            search_ms.append(ms)
            first_answer_s = first_answer_s or time.perf_counter() - t0  # what a client's start-up timeout waits for
            _, ms = rpc(11 + 2 * i, "tools/call", {"name": "context", "arguments": {"message": q}})
            context_ms.append(ms)
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    return {"ready_s": ready_s, "first_answer_s": first_answer_s,
            "warm_line": said.decode(errors="replace").strip().splitlines()[-1],
            "search": search_ms, "context": context_ms}  # fmt: skip


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks first-call", description=__doc__)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args(argv)
    started = datetime.now(UTC)
    env, load = machine(), load_average()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        _workspace(home)
        r = _calls(home, args.calls)
    rows = []
    for tool in ("search", "context"):
        ms = r[tool]
        later = sorted(ms[1:])
        rows.append([tool, f"{ms[0]:.1f}", f"{later[len(later) // 2]:.1f}", f"{max(later):.1f}"])
    body = (f"Server start to its warm line: {r['ready_s']:.2f} s ({r['warm_line']}); to the first search's answer "
            f"(what a client's start-up timeout waits for): {r['first_answer_s']:.2f} s. Then one client, one request "
            f"at a time, {args.calls} calls of each tool (the second and later queries differ from the first). "
            "Target: first call ≤ 150 ms.\n\n")  # fmt: skip
    body += table(["tool", "first call ms", "later calls median ms", "later calls max ms"], rows)
    body += f"\n\nStarted {started:%H:%M} UTC.\n"
    append_results("first call through a persistent MCP stdio session", body, env, load)
