"""Do two statements say the same thing? The one judgement (`memory_pipeline.statements.judgement.judge`) scored
on labelled pairs written before the rule (benchmarks/same_statement.json): same, another value of one slot, or
different. The rule was tuned on the dev split; the held-out split is scored as it is. Reported per split and
per label, with MiniLM (as the night runs) and with the words alone (no embedder)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from benchmarks import common

PAIRS = common.HERE / "same_statement.json"
LABELS = ("same", "other_value", "different")


def score(pairs: list[dict[str, Any]], with_model: bool) -> dict[str, dict[str, list[int]]]:
    """split → label → [judged right, pairs]; and the wrong ones under '_wrong'."""
    from memory_pipeline.embedding.embedder import Embedder
    from memory_pipeline.statements.judgement import judge

    encode = Embedder().encode if with_model else None
    out: dict[str, dict[str, list[int]]] = {}
    for p in pairs:
        cosine = None
        if encode is not None:
            v = encode([p["a"], p["b"]])
            cosine = float(v[0] @ v[1])
        got = judge(p["a"], p["b"], cosine).relation.value
        row = out.setdefault(p["split"], {label: [0, 0] for label in LABELS})
        row[p["relation"]][0] += got == p["relation"]
        row[p["relation"]][1] += 1
        if got != p["relation"]:
            print(f"  {p['split']}: {p['relation']} judged {got}: {p['a']!r} / {p['b']!r}")
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks same-statement", description=__doc__.split("\n")[0])
    p.add_argument("--record", action=argparse.BooleanOptionalAction, default=True)
    args = p.parse_args(argv)
    env, load_before = common.machine(), common.load_average()
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]
    rows = []
    results = {}
    for name, with_model in (("MiniLM + words (the night)", True), ("words alone", False)):
        results[name] = score(pairs, with_model)
        for split, r in sorted(results[name].items()):
            right, total = sum(v[0] for v in r.values()), sum(v[1] for v in r.values())
            rows.append([name, split, *(f"{r[label][0]} of {r[label][1]}" for label in LABELS),
                         f"{right} of {total} ({right / total:.2f})"])  # fmt: skip
    text = "### Do two statements say the same thing? (labelled pairs)\n\n" + common.table(
        ["judge", "split", "same", "another value", "different", "all"], rows
    )
    if args.record:
        common.append_results("same-statement", text, env, load_before)
    print(text)
    return results
