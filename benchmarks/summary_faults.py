"""What a workspace's summaries get wrong, by the one judgement of "the same statement"
(`memory_pipeline.statements.judgement`, MiniLM where the words leave it open): per active summary, its source
statements it does not say (a dissenting value, sign, unit, quantifier, exception — `faithfulness.coverage`),
sentences its sources do not support (a value no source states, two statements fused into "X or Y", several
reports told as one moment — `faithfulness.check`), a statement said twice in any words (`faithfulness.repeated`)
and one statement split over several sentences with other values ("took 28–51 minutes … 29–83 minutes").

Reads a consolidated workspace (`memory-pipeline demo` builds one); `--home` names it. A summary with any of
these is a summary with a fault."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.distill import clusters


def faults(sources: list[str], summary: str, encode: Any) -> dict[str, list[str]]:
    from memory_pipeline.statements import judgement
    from memory_pipeline.verification import faithfulness

    near = judgement.Near(encode)
    written = [s for s in faithfulness.sentences(summary) if faithfulness.statement_like(s)]
    split = [b for i, b in enumerate(written) for a in written[:i]
             if judgement.judge(a, b, near).relation is judgement.Relation.OTHER_VALUE]  # fmt: skip
    return {
        "statements left out": list(faithfulness.coverage(sources, summary, encode).missed),
        "unsupported or fused": [str(u) for u in faithfulness.check(sources, summary, near)],
        "said twice": faithfulness.repeated(summary, near),
        "one statement split": split,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks summary-faults", description=__doc__.split("\n")[0])
    p.add_argument("--home", type=Path, required=True, help="a consolidated workspace")
    p.add_argument("--label", default="", help="what the workspace is, for the table (e.g. 'before', a commit)")
    p.add_argument("--show", type=int, default=0, help="print this many summaries with a fault, and why")
    p.add_argument("--record", action=argparse.BooleanOptionalAction, default=True)
    args = p.parse_args(argv)
    from memory_pipeline.embedding.embedder import Embedder

    env, load_before = common.machine(), common.load_average()
    encode = Embedder().encode
    found = clusters(args.home)
    from memory_pipeline.tokens import estimate_tokens

    kinds: dict[str, int] = {}
    faulty = 0
    shown = 0
    tokens = [0, 0]  # the summaries', their sources'
    for c in found:
        tokens[0] += estimate_tokens(c["stored"])
        tokens[1] += sum(estimate_tokens(m[1]) for m in c["members"])
        got = faults([m[1] for m in c["members"]], c["stored"], encode)
        if any(got.values()):
            faulty += 1
            if shown < args.show:
                shown += 1
                print(f"--- {c['id']}: {c['stored']}")
                for kind, items in got.items():
                    for item in items[:2]:
                        print(f"    {kind}: {item[:160]}")
        for kind, items in got.items():
            kinds[kind] = kinds.get(kind, 0) + (1 if items else 0)
    label = args.label or args.home.name
    text = f"### Summaries with a fault, `{label}` ({len(found)} summaries)\n\n" + common.table(
        ["workspace", "summaries", "with a fault", *kinds, "summary tokens ÷ source tokens"],
        [[label, len(found), faulty, *kinds.values(), f"{tokens[0] / max(tokens[1], 1):.1%}"]],
    )
    if args.record:
        common.append_results("summary-faults", text, env, load_before)
    print(text)
    return {"summaries": len(found), "faulty": faulty, "kinds": kinds}
