"""`python -m benchmarks hooks`: what an agent host waits for — `memory-pipeline flush FILE` (the MCP `flush` tool's
work: a transcript, the day's journal run and the week's MEMORY.md run, in one process) and the PreCompact hook's
`transcripts import --no-journals FILE` (a transcript and the search index's update) — each a new process, on a
copy of the demo workspace (`memory-pipeline demo` first), each call on a fresh copy. CPU is the child's user +
system time (`resource.getrusage`), which machine load changes far less than wall time; medians of `--repeat`."""

from __future__ import annotations

import argparse
import json
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
from memory_pipeline.settings import REPO_ROOT

SESSION = (REPO_ROOT / "memory_pipeline_tests" / "fixtures" / "transcript_imports" / "claude_code"
           / "3f2a9c1e-7b4d-4e8a-9c2f-5d6e7f8a9b0c.jsonl")  # fmt: skip
TURNS = [
    {"role": "user", "content": "The staging deploy failed again on the migration step; what did we decide?"},
    {"role": "assistant", "content": "Run migrations in a separate job before the rollout, with a 10 minute "
                                     "timeout, and page the on-call if it fails twice."},
    {"role": "user", "content": "Good. Keep that: migrations first, separate job, 10 minute timeout."},
]  # fmt: skip


def _one(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memory_pipeline.cli", *argv], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)  # fmt: skip
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks hooks", description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--home", type=Path, default=REPO_ROOT / "data" / "workspace",
                   help="the workspace to copy (default: the demo's, data/workspace)")  # fmt: skip
    args = p.parse_args(argv)
    if not (args.home / "memory.duckdb").exists():
        print(f"no workspace in {args.home}: run `memory-pipeline demo` first (or give --home)", file=sys.stderr)
        raise SystemExit(2)
    env_info, load_before = machine(), load_average()
    commands = {"flush (MCP `flush`)": ["flush", "{turns}"],
                "PreCompact hook: `transcripts import --no-journals`": ["transcripts", "import", "--no-journals",
                                                                         str(SESSION)]}  # fmt: skip
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory(prefix="hooks-") as tmp:
        turns = Path(tmp) / "turns.json"
        turns.write_text(json.dumps(TURNS), encoding="utf-8")
        for i in range(args.repeat):
            for k, (name, command) in enumerate(commands.items()):
                home = Path(tmp) / f"ws-{i}-{k}"
                shutil.copytree(args.home, home, symlinks=True)
                env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(home.with_suffix(".dh"))}
                runs[name].append(_one([str(turns) if a == "{turns}" else a for a in command], env))
                shutil.rmtree(home, ignore_errors=True)
    rows = [[name, f"{statistics.median(c for c, _ in got):.2f} s", f"{statistics.median(w for _, w in got):.2f} s",
             f"{min(w for _, w in got):.2f}–{max(w for _, w in got):.2f} s"] for name, got in runs.items()]  # fmt: skip
    body = (f"\nWorkspace: a copy of `{args.home.name}` per call; {args.repeat} call(s) each, interleaved.\n\n"
            + table(["command", "CPU (median)", "wall (median)", "wall range"], rows))  # fmt: skip
    append_results("hooks: what an agent host waits for (flush, the PreCompact import)", body, env_info, load_before)
