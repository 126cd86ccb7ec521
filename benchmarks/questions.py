"""A newcomer's questions about the demo workspace: is the answer in what `context` hands the agent?

`benchmarks/demo_questions.json` holds questions worded unlike the memories, each with the words its answer
needs (scored by the LoCoMo answer-support rule: ⌈2/3⌉ of the answer's content words in the prompt), and
questions about things never stored, for which knowledge (P3) must stay empty. The demo workspace is built
by `memory-pipeline demo` in a temporary folder (or `--home` names one already built).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import common

QUESTIONS = common.HERE / "demo_questions.json"
BUDGET = 2000


def build_demo(home: Path) -> None:
    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(home.parent / "dagster_home")}
    env.pop("ANTHROPIC_API_KEY", None)
    Path(env["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "memory_pipeline.cli", "demo"], env=env, capture_output=True,
                          text=True, check=False, timeout=1800)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"memory-pipeline demo failed ({done.returncode}):\n{done.stderr[-3000:]}")


def ask(home: Path, budget: int = BUDGET) -> list[dict[str, Any]]:
    """One row per question: answered (or abstained) and the tokens P3 used."""
    from memory_pipeline.context.search_adapter import default_search
    from memory_pipeline.context.service import compile_for_agent
    from memory_pipeline.evaluation.locomo import answer_support

    rows = []
    search = default_search(home)
    for item in json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]:
        out, _ = compile_for_agent(home, item["q"], budget_tokens=budget, search=search)
        p3 = [e for e in out.manifest if e.slot == "P3" and e.included and e.label != "knowledge"]
        never = bool(item.get("never"))
        ok = not p3 if never else bool(answer_support(item["answer"], [out.prompt]))
        rows.append({"question": item["q"], "never": never, "ok": ok, "p3_items": len(p3),
                     "p3_tokens": sum(e.tokens for e in out.manifest if e.slot == "P3" and e.included),
                     "tokens": out.tokens})  # fmt: skip
    return rows


def section(rows: list[dict[str, Any]], seconds: float) -> str:
    stored = [r for r in rows if not r["never"]]
    never = [r for r in rows if r["never"]]
    lines = [
        f"Questions: `benchmarks/demo_questions.json` on a fresh `memory-pipeline demo` workspace, `context` at "
        f"{BUDGET:,} tokens; total {seconds:.0f} s.", "",
        "| questions | count | met | share |", "|---|---|---|---|",
        f"| answer in the prompt | {len(stored)} | {sum(r['ok'] for r in stored)} | "
        f"{sum(r['ok'] for r in stored) / max(len(stored), 1):.2f} |",
        f"| never stored: P3 empty | {len(never)} | {sum(r['ok'] for r in never)} | "
        f"{sum(r['ok'] for r in never) / max(len(never), 1):.2f} |",
    ]  # fmt: skip
    missed = [r for r in rows if not r["ok"]]
    if missed:
        why = {True: "P3 took {} items", False: "answer not in the prompt"}
        lines += ["", "Missed:"] + [f"- {r['question']} ({why[r['never']].format(r['p3_items'])})" for r in missed]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks questions", description=__doc__.split("\n")[0])
    p.add_argument("--home", type=Path, help="a demo workspace already built (default: build one)")
    p.add_argument("--no-results", action="store_true", help="print; do not append to the run file")
    args = p.parse_args(argv)
    env, load_before = common.machine(), common.load_average()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="questions-") as tmp:
        home = args.home or Path(tmp) / "ws"
        if args.home is None:
            build_demo(home)
        rows = ask(home)
    body = section(rows, time.perf_counter() - started)
    if args.no_results:
        print(body)
    else:
        common.append_results("questions: a newcomer's questions on the demo workspace", body, env,
                              load_before)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
