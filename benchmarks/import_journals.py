"""`python -m benchmarks import-journals`: one `transcripts import` of Claude Code sessions spread over several days,
journals and MEMORY.md rebuilt in process — the wall time of the whole command and the Dagster runs it launched.

The sessions are synthetic (a question, an answer with a decision and a lesson, a thank-you), written to a
temporary folder; the workspace and the Dagster instance are new and temporary too, so every run starts from
nothing. By default 7 sessions over 4 days none next to another; `--days N --per-day K` writes K sessions on
each of N consecutive days, and `--year` is 365 days of 3 (target: ≤ 10 minutes). Each session takes its
component, decision and lesson from import_journals.json (each list walked modulo its length; the lengths are
co-prime), so the days' journals differ. The runs are counted from the instance's own run records; the phases
are timed from when the command printed their lines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
YEAR_FIRST = date(2025, 11, 3)  # a year of days all before today (a day's partition exists once it is over)
YEAR = (365, 3)  # days, sessions a day
TARGET_S = {YEAR: 600.0}
WORDS = json.loads((Path(__file__).with_suffix(".json")).read_text(encoding="utf-8"))


def session_words(n: int) -> tuple[str, str, str, str]:
    """Session n's (component, question, decision, lesson): every list walked at its own pace, deterministic."""
    comps, decisions, lessons, questions = (WORDS[k] for k in ("components", "decisions", "lessons", "questions"))
    c = comps[n % len(comps)]
    k = 2 + n % 7
    decision = decisions[n % len(decisions)].format(c=c, k=k)
    lesson = lessons[n % len(lessons)].format(c=c, k=k)
    return c, questions[n % len(questions)].format(c=c), decision, lesson


def session_lines(n: int, day: date, slot: int = 0, varied: bool = False) -> list[str]:
    """One Claude Code session file's lines: a question, an answer with a decision and a lesson, a thank-you."""
    sid = f"{n:08d}-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/shop", "sessionId": sid,
            "version": "2.1.3", "gitBranch": "main"}  # fmt: skip
    if not varied:  # the default set's sessions as they always were (its results stay comparable)
        question = f"How should worker pool {n} be sized?"
        answer = (f"## Worker pool {n}\n\nDecision: {2 + n % 4} workers, 30 s timeout, retries with jitter.\n\n"
                  f"Lesson: the queue {n} must be drained before a deploy, otherwise jobs run twice.")  # fmt: skip
    else:
        component, question, decision, lesson = session_words(n)
        answer = f"## {component.capitalize()}\n\nDecision: {decision}.\n\nLesson: {lesson}."
    hour = WORDS["hours"][slot % len(WORDS["hours"])]
    records = [
        {**base, "type": "user", "uuid": "u1", "timestamp": f"{day}T{hour:02d}:00:00.000Z",
         "message": {"role": "user", "content": question}},
        {**base, "type": "assistant", "uuid": "u2", "parentUuid": "u1", "timestamp": f"{day}T{hour:02d}:02:00.000Z",
         "message": {"id": f"m{n}", "role": "assistant", "content": [{"type": "text", "text": answer}]}},
        {**base, "type": "user", "uuid": "u3", "parentUuid": "u2", "timestamp": f"{day}T{hour:02d}:03:00.000Z",
         "message": {"role": "user", "content": "Thanks, that works."}},
    ]  # fmt: skip
    return [json.dumps(r) for r in records]


def write_sessions(folder: Path, files: int, days: int = 0, per_day: int = 0) -> list[date]:
    """`files` sessions over the 4 default days, or (`days` > 0) `per_day` sessions on each of `days` days."""
    if days:
        dates = [YEAR_FIRST + timedelta(days=d) for d in range(days)]
        plan = [(i * per_day + s, day, s) for i, day in enumerate(dates) for s in range(per_day)]
    else:
        dates = [FIRST + timedelta(days=d) for d in DAY_OFFSETS]
        plan = [(n, dates[n % len(dates)], 0) for n in range(files)]
    for n, day, slot in plan:
        lines = session_lines(n, day, slot, varied=days > 0)
        (folder / f"{n:08d}-4a5b-4c6d-8e7f-9a0b1c2d3e4f.jsonl").write_text("\n".join(lines) + "\n")
    return dates


def dagster_runs(dagster_home: Path) -> dict[str, int]:
    """The runs recorded in the instance at `dagster_home`, by job name (read after the command has ended)."""
    import dagster as dg
    from dagster._core.instance.ref import InstanceRef

    counts: dict[str, int] = {}
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(dagster_home))) as instance:
        for run in instance.get_runs():
            counts[run.job_name] = counts.get(run.job_name, 0) + 1
    return counts


def phase_times(stamped: list[tuple[float, str]]) -> dict[str, float]:
    """Seconds from the start to the summary line, the end of each ranged run (its `: ok (run` line) and the
    last line (the search index refresh)."""
    out: dict[str, float] = {}
    runs = [t for t, line in stamped if ": ok (run " in line or ": FAILED (run " in line]
    for t, line in stamped:
        if " file(s): " in line and "transcripts written" not in out:
            out["transcripts written"] = t
    for i, t in enumerate(runs):
        out[f"run {i + 1} done"] = t
    if stamped:
        out["end of output"] = stamped[-1][0]
    return out


def run_once(files: int, days: int = 0, per_day: int = 0, keep: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        dates = write_sessions(root / "src", files, days, per_day)
        env = {**os.environ, "MEMORY_PIPELINE_HOME": str(root / "ws"), "DAGSTER_HOME": str(root / "dagster"),
               "MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256", "MEMORY_PIPELINE_JOURNAL_GIT": "0",
               "MEMORY_PIPELINE_LLM": "offline", "PYTHONUNBUFFERED": "1"}  # fmt: skip
        command = [sys.executable, "-m", "memory_pipeline.cli", "transcripts", "import", str(root / "src"),
                   "--in-process"]  # fmt: skip
        started = time.perf_counter()
        stamped: list[tuple[float, str]] = []
        with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            for line in proc.stdout:
                stamped.append((time.perf_counter() - started, line.rstrip("\n")))
            stderr = proc.stderr.read()
        wall = time.perf_counter() - started
        runs = dagster_runs(root / "dagster") if (root / "dagster").exists() else {}
        knowledge = root / "ws" / "knowledge"
        memory = knowledge / "memory" / "MEMORY.md"
        if keep is not None:  # the journals and MEMORY.md, to compare two commits' output on the same input
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(knowledge, keep)
        return {"wall_s": wall, "exit": proc.returncode, "runs": sum(runs.values()), "runs_by_job": runs,
                "days": len(dates), "sessions": len(list((root / "src").iterdir())),
                "journals": len(list((knowledge / "journal").glob("*.md"))),
                "memory_lines": len(memory.read_text().splitlines()) if memory.exists() else 0,
                "phases": phase_times(stamped), "stderr": stderr[-400:]}  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks import-journals", description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=7, help="sessions over the 4 default days (without --days)")
    p.add_argument("--days", type=int, default=0, help="consecutive days of sessions (instead of --files)")
    p.add_argument("--per-day", type=int, default=3, help="sessions on each of --days days (default 3)")
    p.add_argument("--year", action="store_true", help=f"--days {YEAR[0]} --per-day {YEAR[1]} (target ≤ 10 min)")
    p.add_argument("--keep", type=Path, help="copy the workspace's knowledge folder (journals, MEMORY.md) here")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--record", action=argparse.BooleanOptionalAction, default=True)
    args = p.parse_args(argv)
    days, per_day = YEAR if args.year else (args.days, args.per_day)
    if days < 0 or per_day < 1:
        p.error("--days must be ≥ 0 and --per-day ≥ 1")
    env, load_before = common.machine(), common.load_average()
    results = [run_once(args.files, days, per_day, args.keep) for _ in range(args.repeats)]
    target = TARGET_S.get((days, per_day))
    by_job = [", ".join(f"{k} {v}" for k, v in sorted(r["runs_by_job"].items())) for r in results]
    rows = [[i + 1, r["sessions"], r["days"], r["runs"], by_job[i],
             f"{r['wall_s']:.1f} s", ", ".join(f"{k} {v:.0f} s" for k, v in r["phases"].items()), r["journals"],
             r["memory_lines"], r["exit"]]
            + ([("met" if r["wall_s"] <= target and not r["exit"] else "missed") + f" (≤ {target / 60:.0f} min)"]
               if target else [])
            for i, r in enumerate(results)]  # fmt: skip
    header = ["repeat", "session files", "days", "Dagster runs", "runs by job", "wall", "phases (s from start)",
              "journals", "MEMORY.md lines", "exit"] + (["target"] if target else [])  # fmt: skip
    shape = f"{days} days × {per_day} sessions" if days else f"{args.files} sessions over {len(DAY_OFFSETS)} days"
    text = (f"### One `transcripts import` rebuilding journals and MEMORY.md (in process): {shape}\n\n"
            + common.table(header, rows))  # fmt: skip
    if args.record:
        common.append_results("import-journals", text, env, load_before)
    print(text)
    for r in results:
        if r["exit"]:
            print(r["stderr"], file=sys.stderr)
    return {"results": results}
