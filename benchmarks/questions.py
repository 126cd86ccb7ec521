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
BUDGETS = (512, 1000, 2000)
KNOWLEDGE = "<!-- knowledge -->"


def repeated_share(prompt: str, near: Any = None) -> tuple[int, int]:
    """(tokens, of which repeated) of the knowledge section's statements: a statement is repeated when a sentence
    before it in the prompt — the files above the knowledge, the items above it — says it (`judgement.says`, with
    MiniLM when `near` is given)."""
    from memory_pipeline.context.packing import statements
    from memory_pipeline.statements.judgement import says
    from memory_pipeline.tokens import estimate_tokens

    if KNOWLEDGE not in prompt:
        return 0, 0
    before, _, rest = prompt.partition(KNOWLEDGE)
    knowledge = rest.split("\n<!--", 1)[0]
    carried = statements(before)
    total = repeated = 0
    for line in knowledge.splitlines():
        for s in statements(line):
            cost = estimate_tokens(s)
            total += cost
            if any(says(c, s, near) for c in carried):
                repeated += cost
            carried.append(s)
    return total, repeated


def build_demo(home: Path) -> None:
    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(home.parent / "dagster_home")}
    env.pop("ANTHROPIC_API_KEY", None)
    Path(env["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "memory_pipeline.cli", "demo"], env=env, capture_output=True,
                          text=True, check=False, timeout=1800)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"memory-pipeline demo failed ({done.returncode}):\n{done.stderr[-3000:]}")


def ask(home: Path, budget: int = BUDGET, near: Any = None) -> list[dict[str, Any]]:
    """One row per question: answered (or abstained), the tokens P3 used, and its statements' tokens that repeat
    what the prompt already carries."""
    from memory_pipeline.context.search_adapter import default_search
    from memory_pipeline.context.service import compile_for_agent

    rows = []
    search = default_search(home)
    for item in json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]:
        out, _ = compile_for_agent(home, item["q"], budget_tokens=budget, search=search)
        p3 = [e for e in out.manifest if e.slot == "P3" and e.included and e.label != "knowledge"]
        rows.append(score_row(item, out.prompt, len(p3), budget, near))
    return rows


def score_row(item: dict[str, Any], prompt: str, p3_items: int, budget: int, near: Any) -> dict[str, Any]:
    from memory_pipeline.evaluation.locomo import answer_support

    never = bool(item.get("never"))
    ok = not p3_items if never else bool(answer_support(item["answer"], [prompt]))
    knowledge, repeated = repeated_share(prompt, near)
    return {"question": item["q"], "never": never, "ok": ok, "p3_items": p3_items, "budget": budget,
            "knowledge_tokens": knowledge, "repeated_tokens": repeated}  # fmt: skip


def section(rows: list[dict[str, Any]], seconds: float, label: str = "") -> str:
    lines = [
        f"Questions: `benchmarks/demo_questions.json` on a `memory-pipeline demo` workspace{label}, `context` at "
        f"{', '.join(f'{b:,}' for b in BUDGETS)} tokens; total {seconds:.0f} s. Repeated: the share of the knowledge "
        "section's statement tokens that a sentence before them in the prompt says (the judgement, with MiniLM).",
        "", "| budget | answer in the prompt | never stored: P3 empty | knowledge tokens | repeated |",
        "|---|---|---|---|---|",
    ]  # fmt: skip
    for budget in sorted({r["budget"] for r in rows}):
        at = [r for r in rows if r["budget"] == budget]
        stored = [r for r in at if not r["never"]]
        never = [r for r in at if r["never"]]
        tokens, repeated = sum(r["knowledge_tokens"] for r in at), sum(r["repeated_tokens"] for r in at)
        lines.append(f"| {budget:,} | {sum(r['ok'] for r in stored)} of {len(stored)} | {sum(r['ok'] for r in never)}"
                     f" of {len(never)} | {tokens:,} | {repeated / max(tokens, 1):.1%} |")  # fmt: skip
    missed = [r for r in rows if not r["ok"] and r["budget"] == BUDGET]
    if missed:
        why = {True: "P3 took {} items", False: "answer not in the prompt"}
        lines += ["", "Missed:"] + [f"- {r['question']} ({why[r['never']].format(r['p3_items'])})" for r in missed]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks questions", description=__doc__.split("\n")[0])
    p.add_argument("--home", type=Path, help="a demo workspace already built (default: build one)")
    p.add_argument("--prompts", type=Path, help="score prompts compiled before (a JSON list of {q, budget, prompt, "
                   "p3_items}: another commit's `context`), compile nothing")  # fmt: skip
    p.add_argument("--label", default="", help="what is measured, for the table")
    p.add_argument("--no-results", action="store_true", help="print; do not append to the run file")
    args = p.parse_args(argv)
    from memory_pipeline.embedding.embedder import Embedder
    from memory_pipeline.statements.judgement import Near

    env, load_before = common.machine(), common.load_average()
    started = time.perf_counter()
    near = Near(Embedder().encode)
    if args.prompts:
        items = {q["q"]: q for q in json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]}
        rows = [score_row(items[r["q"]], r["prompt"], r["p3_items"], r["budget"], near)
                for r in json.loads(args.prompts.read_text(encoding="utf-8"))]  # fmt: skip
    else:
        with tempfile.TemporaryDirectory(prefix="questions-") as tmp:
            home = args.home or Path(tmp) / "ws"
            if args.home is None:
                build_demo(home)
            rows = [r for budget in BUDGETS for r in ask(home, budget, near)]
    body = section(rows, time.perf_counter() - started, f" ({args.label})" if args.label else "")
    if args.no_results:
        print(body)
    else:
        common.append_results("questions: a newcomer's questions on the demo workspace", body, env,
                              load_before)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
