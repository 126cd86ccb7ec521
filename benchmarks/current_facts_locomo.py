"""`python -m benchmarks current-facts-locomo`: the LoCoMo dev read path with and without the what-holds-now step.

Per dev conversation the turns are imported and embedded (the read-path benchmark's own `prepare`), and every
category 1-4 question is compiled by `context` at 512 / 1,000 / 2,000 / 4,000 tokens (its `score`, shipped
variant) twice in one process: as shipped, and with `search/current.py`'s step replaced by a pass-through (the
read path before versions were told apart). The rule (benchmarks/read_path_rule.md's bound, as the issue asks): the
step costs no budget more than 1 point of answer support.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import append_results, load_average, machine, table

BOUND = 0.01


def _pass_through(hits: Any, home: Any, as_of: Any = None, *, drop_later: bool = True) -> Any:
    return hits


def run(data: Path, conversations: list[str] | None, work: Path) -> dict[tuple[str, int], list[float]]:
    import memory_pipeline.context.search_adapter as adapter
    import memory_pipeline.search.engine as engine
    from benchmarks import read_path as rp
    from memory_pipeline.evaluation.locomo import load_locomo
    from memory_pipeline.resources import EmbedderResource

    encode = EmbedderResource().encode
    modules = (engine, adapter)  # each reads the step by its own name
    shipped = [getattr(m, "current_first") for m in modules]  # noqa: B009
    out: dict[tuple[str, int], list[float]] = {}
    try:
        for conv in load_locomo(data, conversations):
            home = rp.prepare(conv, work, "turns", data)
            for label in ("without", "with"):
                for m, step in zip(modules, shipped, strict=True):
                    setattr(m, "current_first", step if label == "with" else _pass_through)  # noqa: B010
                engine.clear_cache()
                for r in rp.score(home, conv, ["shipped"], encode):
                    if r["method"] == "shipped" and r["support"] is not None:
                        out.setdefault((label, r["budget"]), []).append(float(r["support"]))
    finally:
        for m, step in zip(modules, shipped, strict=True):
            setattr(m, "current_first", step)  # noqa: B010
    return out


def report(out: dict[tuple[str, int], list[float]], convs: str) -> str:
    from benchmarks.read_path import BUDGETS

    rows, ok = [], True
    for b in BUDGETS:
        without, with_ = statistics.mean(out[("without", b)]), statistics.mean(out[("with", b)])
        changed = sum(x != y for x, y in zip(out[("without", b)], out[("with", b)], strict=True))
        ok &= with_ >= without - BOUND
        rows.append([f"{b:,}", f"{without:.3f}", f"{with_:.3f}", f"{with_ - without:+.3f}", str(changed)])
    n = len(out[("with", BUDGETS[0])])
    return (f"Conversations: {convs}; {n} questions (categories 1-4), `context` (shipped read path), turns before the "
            f"night.\n\n" + table(["budget", "without the step", "with it", "difference", "questions changed"], rows)
            + f"\n\nBound (no budget loses more than {BOUND * 100:.0f} point): "
            f"{'met' if ok else 'missed'}.\n")  # fmt: skip


def main(argv: list[str]) -> None:
    from memory_pipeline.evaluation.locomo_transcripts import default_locomo_path

    parser = argparse.ArgumentParser(prog="python -m benchmarks current-facts-locomo", description=__doc__)
    parser.add_argument("--data", type=Path, default=default_locomo_path())
    parser.add_argument("--conversations", default="", help="comma-separated sample ids (default: all)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "memory-pipeline-read-path",
                        help="embedded conversations, kept between runs")  # fmt: skip
    args = parser.parse_args(argv)
    env, load = machine(), load_average()
    chosen = [c for c in args.conversations.split(",") if c] or None
    out = run(args.data, chosen, args.work)
    append_results("current facts: the LoCoMo read path with and without the what-holds-now step",
                   report(out, ", ".join(chosen) if chosen else "all five dev conversations"), env, load)
