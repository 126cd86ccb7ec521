"""`python -m benchmarks read-cpu [--calls 1200] [--base DIR]`: the CPU one `search`, `context` and `remember`
cost in a server process, on one agent of the gateway benchmark's fleet (10,000 memories, MiniLM embedding the
queries), with the gateway's mix and arguments (search 80 %, context 15 %, remember 5 %; context at 2,048 tokens).
The first half of the calls' writes are made before the clock starts, so the reads see what a serving gateway's
do: memories written since the index was built. Each call runs the MCP tool's own work function in this process
(no HTTP), timed with `time.process_time` (every thread of the process: the usage spool's included), which load
changes far less than wall time.

`--base DIR`: the same measurement, on the same workspace copy and calls, with the code of another checkout (a
`git worktree` of the commit to compare with) in a subprocess; both rows and the ratio are reported."""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import append_results, load_average, machine, table

TOOLS = ("search", "context", "remember")


def measure(home: Path, calls: int, seed: int) -> dict[str, Any]:
    """CPU ms per call of each tool over `calls` calls of the gateway's mix on the workspace at `home`."""
    from benchmarks.gateway import EMBEDDERS, arguments, choose_tool

    os.environ.update({"MEMORY_PIPELINE_EMBEDDER": EMBEDDERS["minilm"], "MEMORY_PIPELINE_LLM": "offline",
                       "MEMORY_PIPELINE_HOME": str(home)})  # fmt: skip
    from memory_pipeline.context.service import gate_from_env
    from memory_pipeline.mcp import server
    from memory_pipeline.mcp.write_tools import _remember
    from memory_pipeline.search import search

    server.warm_server(home)
    gate = gate_from_env()
    rng = random.Random(seed)
    plan = [(tool, arguments(rng, tool, 0, 0, n)) for n, tool in enumerate(choose_tool(rng) for _ in range(calls))]

    def call(tool: str, a: dict[str, Any]) -> None:
        if tool == "remember":
            _remember(home, 32, a["text"], a["category"], None, [], a["id"])  # the gateway imports in batches of 32
        elif tool == "context":
            server._context_work(home, None, gate, True, a["message"], a["budget_tokens"], [], "", True)
        else:
            server._search_work(lambda: search(a["query"], a["k"], home=home), home, True)

    for tool, a in plan[: calls // 2]:
        if tool == "remember":
            call(tool, a)
    cpu: dict[str, list[float]] = {t: [] for t in TOOLS}
    for tool, a in plan[calls // 2 :]:
        t0 = time.process_time()
        call(tool, a)
        cpu[tool].append((time.process_time() - t0) * 1000)
    return {t: {"calls": len(v), "cpu_ms": statistics.fmean(v) if v else None} for t, v in cpu.items()}


def _child(argv: list[str]) -> None:
    """`read_cpu.py --child HOME CALLS SEED`: one measurement, as JSON on stdout's last line."""
    home, calls, seed = Path(argv[0]), int(argv[1]), int(argv[2])
    print(json.dumps(measure(home, calls, seed)))


def _run(code: Path, cache: Path, calls: int, seed: int, tmp: Path, name: str) -> dict[str, Any]:
    home = tmp / name
    shutil.copytree(cache, home, symlinks=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), *(p for p in sys.path if p)])}
    # this file run as a script, with `code`'s packages first on the path: a baseline need not have this file
    out = subprocess.run([sys.executable, __file__, "--child", str(home), str(calls), str(seed)],
                         cwd=code, env=env, capture_output=True, text=True, timeout=3600)  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"read-cpu: the run with the code in {code} failed: {out.stderr.strip().splitlines()[-1:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        _child(argv[1:])
        return
    from benchmarks.gateway import agent_id, ensure_cache

    p = argparse.ArgumentParser(prog="python -m benchmarks read-cpu", description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=1200, help="calls of the mix; the first half's writes come first")
    p.add_argument("--base", type=Path, help="a checkout of the code to compare with")
    p.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "memory-pipeline-gateway-bench",
                   help="the gateway benchmark's cache (built here when missing)")  # fmt: skip
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2, help="runs of each variant, alternated; the median is reported")
    args = p.parse_args(argv)
    env_info, load_before = machine(), load_average()
    root, _ = ensure_cache(args.work, 1, 10_000, "minilm")
    cache = root / "agents" / agent_id(0)
    here = Path(__file__).resolve().parent.parent
    variants = {"this checkout": here, **({"baseline": args.base.resolve()} if args.base else {})}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(prefix="read-cpu-") as tmp:
        for r in range(args.rounds):  # A B, B A, …: load that drifts over the run falls on both alike
            names = list(variants) if r % 2 == 0 else list(variants)[::-1]
            for name in names:
                runs[name].append(_run(variants[name], cache, args.calls, args.seed, Path(tmp), f"ws{r}-{name[:4]}"))

    def cpu(name: str, tool: str) -> float | None:
        got = [one[tool]["cpu_ms"] for one in runs[name] if one[tool]["cpu_ms"] is not None]
        return statistics.median(got) if got else None

    rows = []
    for tool in TOOLS:
        mine = cpu("this checkout", tool)
        row = [tool, runs["this checkout"][0][tool]["calls"], _ms(mine)]
        if args.base:
            theirs = cpu("baseline", tool)
            row += [_ms(theirs), f"×{mine / theirs:.2f}" if mine and theirs else "—"]
        rows.append(row)
    header = ["tool", "calls", "CPU ms/call"] + (["baseline CPU ms/call", "ratio"] if args.base else [])
    body = table(header, rows) + (f"\n\n{args.calls} calls of the gateway's mix (seed {args.seed}), the first "
                                  f"{args.calls // 2}'s writes made before the clock; one agent, 10,000 memories, "
                                  "MiniLM; CPU of this process per call: the mean of a run, the median of "
                                  f"{args.rounds} runs, the variants alternated\n")  # fmt: skip
    append_results("Read CPU: search, context and remember in a server process", body, env_info, load_before)


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f}"


if __name__ == "__main__":
    main(sys.argv[1:])
