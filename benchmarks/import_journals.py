"""`python -m benchmarks import-journals`: one `transcripts import` of Claude Code sessions spread over several days,
journals and MEMORY.md rebuilt in process — the wall time of the whole command and the Dagster runs it launched.

The sessions are synthetic (a decision, a lesson and some chatter each), written to a temporary folder; the
workspace and the Dagster instance are new and temporary too, so every run starts from nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from benchmarks import common

FIRST = date(2026, 10, 13)
DAY_OFFSETS = (0, 2, 5, 8)  # 4 days, none next to another, over two weeks


def session_lines(n: int, day: date) -> list[str]:
    """One Claude Code session file's lines: a question, an answer with a decision and a lesson, a thank-you."""
    sid = f"{n:08d}-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/shop", "sessionId": sid,
            "version": "2.1.3", "gitBranch": "main"}  # fmt: skip
    answer = (f"## Worker pool {n}\n\nDecision: {2 + n % 4} workers, 30 s timeout, retries with jitter.\n\n"
              f"Lesson: the queue {n} must be drained before a deploy, otherwise jobs run twice.")
    records = [
        {**base, "type": "user", "uuid": "u1", "timestamp": f"{day}T10:00:00.000Z",
         "message": {"role": "user", "content": f"How should worker pool {n} be sized?"}},
        {**base, "type": "assistant", "uuid": "u2", "parentUuid": "u1", "timestamp": f"{day}T10:02:00.000Z",
         "message": {"id": f"m{n}", "role": "assistant", "content": [{"type": "text", "text": answer}]}},
        {**base, "type": "user", "uuid": "u3", "parentUuid": "u2", "timestamp": f"{day}T10:03:00.000Z",
         "message": {"role": "user", "content": "Thanks, that works."}},
    ]  # fmt: skip
    return [json.dumps(r) for r in records]


def write_sessions(folder: Path, files: int) -> list[date]:
    days = [FIRST + timedelta(days=d) for d in DAY_OFFSETS]
    for n in range(files):
        day = days[n % len(days)]
        (folder / f"{n:08d}-4a5b-4c6d-8e7f-9a0b1c2d3e4f.jsonl").write_text("\n".join(session_lines(n, day)) + "\n")
    return days


def run_once(files: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        days = write_sessions(root / "src", files)
        env = {**os.environ, "MEMORY_PIPELINE_HOME": str(root / "ws"), "DAGSTER_HOME": str(root / "dagster"),
               "MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256", "MEMORY_PIPELINE_JOURNAL_GIT": "0",
               "MEMORY_PIPELINE_LLM": "offline"}  # fmt: skip
        command = [sys.executable, "-m", "memory_pipeline.cli", "transcripts", "import", str(root / "src"),
                   "--in-process"]  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        runs = sum(1 for line in done.stdout.splitlines() if ": ok (run " in line)
        memory = root / "ws" / "knowledge" / "memory" / "MEMORY.md"
        return {"wall_s": wall, "exit": done.returncode, "runs": runs, "days": len(days),
                "journals": len(list((root / "ws" / "knowledge" / "journal").glob("*.md"))),
                "memory_lines": len(memory.read_text().splitlines()) if memory.exists() else 0,
                "stderr": done.stderr[-400:]}  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks import-journals", description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=7)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--record", action=argparse.BooleanOptionalAction, default=True)
    args = p.parse_args(argv)
    env, load_before = common.machine(), common.load_average()
    results = [run_once(args.files) for _ in range(args.repeats)]
    rows = [[i + 1, args.files, r["days"], r["runs"], f"{r['wall_s']:.1f} s", r["journals"], r["memory_lines"],
             r["exit"]] for i, r in enumerate(results)]  # fmt: skip
    text = "### One `transcripts import` rebuilding journals and MEMORY.md (in process)\n\n" + common.table(
        ["repeat", "session files", "days", "Dagster runs", "wall", "journals", "MEMORY.md lines", "exit"], rows
    )
    if args.record:
        common.append_results("import-journals", text, env, load_before)
    print(text)
    for r in results:
        if r["exit"]:
            print(r["stderr"], file=sys.stderr)
    return {"results": results}
