"""How well the verifier decides "this sentence says that statement" (`memory_pipeline.verification.faithfulness.says`),
on labelled pairs written before its thresholds were chosen (benchmarks/statement_pairs.json): paraphrases that
must count, look-alikes that must not. Thresholds were set on the dev split; the held-out split is scored as it
is. Reported per split, with MiniLM (as the night runs) and with the words alone (no embedder)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from benchmarks import common

PAIRS = common.HERE / "statement_pairs.json"


def score(pairs: list[dict[str, Any]], with_model: bool) -> dict[str, dict[str, int]]:
    from memory_pipeline.embedding.embedder import Embedder
    from memory_pipeline.statements.judgement import says

    encode = Embedder().encode if with_model else None
    out: dict[str, dict[str, int]] = {}
    for p in pairs:
        cosine = None
        if encode is not None:
            v = encode([p["statement"], p["sentence"]])
            cosine = float(v[0] @ v[1])
        got = says(p["sentence"], p["statement"], cosine)
        row = out.setdefault(p["split"], {"says": 0, "counted": 0, "look_alikes": 0, "wrongly_counted": 0})
        if p["says"]:
            row["says"] += 1
            row["counted"] += got
        else:
            row["look_alikes"] += 1
            row["wrongly_counted"] += got
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks statement-pairs", description=__doc__.split("\n")[0])
    p.add_argument("--record", action=argparse.BooleanOptionalAction, default=True)
    args = p.parse_args(argv)
    env, load_before = common.machine(), common.load_average()
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]
    rows = []
    results = {}
    for name, with_model in (("MiniLM + words (the night)", True), ("words alone", False)):
        results[name] = score(pairs, with_model)
        for split, r in sorted(results[name].items()):
            rows.append([name, split, f"{r['counted']} of {r['says']} ({r['counted'] / r['says']:.2f})",
                         f"{r['wrongly_counted']} of {r['look_alikes']}"])  # fmt: skip
    text = "### Does a sentence say a statement? (labelled pairs)\n\n" + common.table(
        ["judge", "split", "paraphrases counted (recall)", "look-alikes counted (false)"], rows
    )
    if args.record:
        common.append_results("statement-pairs", text, env, load_before)
    print(text)
    return results


if __name__ == "__main__":
    main()
