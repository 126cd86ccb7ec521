"""`python -m benchmarks versioner [--sizes 10000,100000]`: what finding versions of facts costs at scale — the
night's Versioner plan (`abstraction.versions.plan`: the masked-text rule, then the attribute rule with its index of
attribute words) over a store of short statements that carry numbers, ids and times (`benchmarks/unrelated_notes.py`,
the worst case for it: every memory is read as a claim), plus the original labelled facts. Seconds of the plan in
this process (words alone: the embedder's share is what the words leave open, none here), how many statements it
read, and how many supersessions it made outside the labelled facts (each one false)."""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timedelta
from typing import Any

from benchmarks import common


def run(n: int) -> dict[str, Any]:
    from benchmarks.current_facts import DATA, records
    from benchmarks.unrelated_notes import unrelated_notes
    from memory_pipeline.abstraction.versions import plan
    from memory_pipeline.store.validity import FactRow

    start = datetime(2026, 8, 1)
    rows = [FactRow(f"u-{i}", text, start + timedelta(minutes=i), None)
            for i, (text, _) in enumerate(unrelated_notes(n, seed=1))]  # fmt: skip
    rows += [FactRow(r["id"], r["content"], datetime.fromisoformat(r["created_at"][:19]), None)
             for r in records(json.loads(DATA.read_text(encoding="utf-8")))]  # fmt: skip
    t = time.perf_counter()
    made = plan(rows)
    seconds = time.perf_counter() - t
    false = sum(1 for s in made.supersessions if s.memory_id.startswith("u-") or s.superseded_by.startswith("u-"))
    return {"n": n, "s": seconds, "read": made.facts_read, "made": len(made.supersessions), "false": false}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks versioner", description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",") if x], default=[10_000, 100_000])
    args = p.parse_args(argv)
    env, load_before = common.machine(), common.load_average()
    rows = []
    for n in args.sizes:
        r = common.in_fresh_process("benchmarks.versioner:run", None, n=n)
        rows.append((f"{n:,}", f"{r['s']:.1f}", f"{r['read']:,}", str(r["made"]), str(r["false"]),
                     common.load_average().split(" / ")[0]))  # fmt: skip
        print(rows[-1], flush=True)
    body = (
        "### The Versioner's plan over short statements with values\n\n"
        + common.table(
            ("notes", "plan s", "statements read", "supersessions", "false (a note involved)", "load (1 min)"), rows
        )  # fmt: skip
        + "\n\nThe notes plus the original labelled set's 93 versions; one fresh process per size."
    )
    common.append_results("versioner", body, env, load_before)


if __name__ == "__main__":
    main()
