"""`python -m benchmarks read-start`: what one CLI read costs from a cold process — `memory-pipeline search` and
`context` on the search tests' fixture (MiniLM) — with the bytecode `scripts/setup.sh` compiles, against the same
commands compiling every module from source (the baseline: a venv with no bytecode where
PYTHONDONTWRITEBYTECODE is set, as `uv sync` left it), in one run. CPU is the child's user + system time
(`resource.getrusage`), which machine load changes far less than wall time; both are reported, medians of
`--repeat` calls, the two variants interleaved."""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import append_results, load_average, machine, table
from benchmarks.first_call import _workspace

COMMANDS = {"search": ["search", "What time is the standup?", "-k", "5"],
            "context": ["context", "What time is the standup?", "--budget", "1000"]}  # fmt: skip


def _one(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memory_pipeline.cli", *argv], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)  # fmt: skip
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def _memories(home: Path) -> int:
    import duckdb

    with duckdb.connect(str(home / "memory.duckdb"), read_only=True) as con:
        row = con.execute("SELECT count(*) FROM memories").fetchone()
    return int(row[0]) if row else 0


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks read-start")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--home", type=Path, help="a workspace to read (copied first; default: the search tests' fixture)")
    args = p.parse_args(argv)
    env_info, load_before = machine(), load_average()
    with tempfile.TemporaryDirectory(prefix="read-start-") as tmp:
        home = Path(tmp) / "ws"
        if args.home:
            shutil.copytree(args.home, home, symlinks=True)
        else:
            home.mkdir()
            _workspace(home)
        where = f"{_memories(home):,} memories" + ("" if args.home else " (the search tests' fixture)")
        base = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"}
        base.pop("PYTHONPYCACHEPREFIX", None)
        source = {**base, "PYTHONPYCACHEPREFIX": str(Path(tmp) / "no-bytecode")}  # an empty cache: compile all
        variants = {"bytecode (setup.sh)": base, "from source (baseline)": source}
        for argv_ in COMMANDS.values():  # the index and the model's ONNX file exist before the first timed call
            _one(argv_, base)
        runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.repeat):
            for name, argv_ in COMMANDS.items():
                for variant, env in variants.items():
                    runs.setdefault((name, variant), []).append(_one(argv_, env))
    rows, ratios = [], []
    for name in COMMANDS:
        cpu = {v: statistics.median(c for c, _ in runs[(name, v)]) for v in variants}
        wall = {v: statistics.median(w for _, w in runs[(name, v)]) for v in variants}
        for v in variants:
            rows.append([name, v, f"{cpu[v]:.2f}", f"{wall[v]:.2f}"])
        ratios.append(f"{name}: CPU ×{cpu['bytecode (setup.sh)'] / cpu['from source (baseline)']:.2f}")
    body = table(["command", "variant", "CPU s (median)", "wall s (median)"], rows)
    body += (f"\n\n{args.repeat} calls each, interleaved; bytecode ÷ from source: {'; '.join(ratios)}; "
             f"workspace: {where}\n")
    append_results("Read start: a CLI search or context from a cold process", body, env_info, load_before)
