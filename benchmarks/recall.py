"""`python -m benchmarks recall`: what `memory-pipeline recall "<question>"` costs from a cold process on the demo
workspace, and whether its first hit holds the answer — this checkout against a baseline checkout (`--baseline DIR`:
an earlier commit's worktree set up with `bash scripts/setup.sh`, run with its own .venv) on the same copy of the
workspace, in one run, calls interleaved. CPU is the child's user + system time, which machine load changes far
less than wall time; both are reported (medians of `--repeat`), with the 1-minute load average before each call."""

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
from memory_pipeline.settings import REPO_ROOT

# the README's question, and the words of the decision its answer must lead with
QUESTIONS = {"what did we decide about the status page certificate?":
             "move the status page certificate to automatic renewal"}  # fmt: skip


def _one(python: Path, cwd: Path, question: str, env: dict[str, str]) -> tuple[float, float, float, str]:
    """(CPU s, wall s, load before, what it printed) of one recall in a new process."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([str(python), "-m", "memory_pipeline.cli", "recall", question], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, load, done.stdout


def first_hit(printed: str) -> str:
    """The first hit's passage: the second line after the answer's own (layer, score, key; then the passage)."""
    lines = printed.splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith(("answer from", "Nothing in memory"))), None)
    return lines[at + 2].strip() if at is not None and at + 2 < len(lines) else ""


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks recall", description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--home", type=Path, default=REPO_ROOT / "data" / "workspace",
                   help="the demo workspace to copy (default: the demo's, data/workspace)")  # fmt: skip
    p.add_argument("--baseline", type=Path, default=None,
                   help="a checkout of an earlier commit with its own .venv (scripts/setup.sh), run as the baseline")
    args = p.parse_args(argv)
    if not (args.home / "memory.duckdb").exists():
        print(f"no workspace in {args.home}: run `memory-pipeline demo` first (or give --home)", file=sys.stderr)
        raise SystemExit(2)
    variants = {"this checkout": (Path(sys.executable), REPO_ROOT)}
    if args.baseline is not None:
        python = args.baseline / ".venv" / "bin" / "python"
        if not python.exists():
            print(f"no .venv in {args.baseline}: run `bash scripts/setup.sh` there first", file=sys.stderr)
            raise SystemExit(2)
        variants["baseline"] = (python, args.baseline.resolve())
    env_info, load_before = machine(), load_average()
    runs: dict[tuple[str, str], list[tuple[float, float, float, str]]] = {}
    with tempfile.TemporaryDirectory(prefix="recall-") as tmp:
        home = Path(tmp) / "ws"
        shutil.copytree(args.home, home, symlinks=True)
        env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(Path(tmp) / "dagster")}
        for name in ("ANTHROPIC_API_KEY", "PYTHONPATH"):
            env.pop(name, None)
        for question in QUESTIONS:  # the index and the model's files are in place before the first timed call
            for python, cwd in variants.values():
                _one(python, cwd, question, env)
        for _ in range(args.repeat):
            for question in QUESTIONS:
                for variant, (python, cwd) in variants.items():
                    runs.setdefault((question, variant), []).append(_one(python, cwd, question, env))
    rows, ratios = [], []
    for question, answer in QUESTIONS.items():
        cpu = {v: statistics.median(r[0] for r in runs[(question, v)]) for v in variants}
        for v in variants:
            got = runs[(question, v)]
            loads = [r[2] for r in got]
            found = sum(answer in first_hit(r[3]) for r in got)
            rows.append([question, v, f"{cpu[v]:.2f}", f"{statistics.median(r[1] for r in got):.2f}",
                         f"{min(loads):.1f}–{max(loads):.1f}", f"{found}/{len(got)}"])  # fmt: skip
        if "baseline" in cpu:
            ratios.append(f"CPU ×{cpu['baseline'] / cpu['this checkout']:.1f} less than the baseline")
    body = table(["question", "code", "CPU s (median)", "wall s (median)", "load (1 min)", "first hit = answer"], rows)
    body += f"\n\n{args.repeat} calls each, interleaved, on one copy of the demo workspace; {'; '.join(ratios)}\n"
    append_results("Recall: the README's question from a cold process", body, env_info, load_before)
