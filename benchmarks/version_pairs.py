"""How well the attribute rule (`memory_pipeline.statements.attributes.versions`) tells a fact restated with a new value
from a look-alike, on labelled pairs written before the rule (benchmarks/version_pairs.json). Thresholds were set
on the dev split; the held-out split is scored as it is. Reported per split, with MiniLM over the attribute phrases
(as the night runs) and with the words alone."""

from __future__ import annotations

import argparse
import json
from typing import Any

from benchmarks import common

PAIRS = common.HERE / "version_pairs.json"


def score(pairs: list[dict[str, Any]], with_model: bool) -> dict[str, dict[str, int]]:
    from memory_pipeline.statements.attributes import versions

    near = None
    if with_model:
        from memory_pipeline.embedding.embedder import Embedder

        encode = Embedder().encode

        def near(a: str, b: str) -> float:
            v = encode([a, b])
            return float(v[0] @ v[1])

    out: dict[str, dict[str, int]] = {}
    for p in pairs:
        got = versions(p["older"], p["newer"], near)
        row = out.setdefault(p["split"], {"versions": 0, "found": 0, "look_alikes": 0, "joined": 0})
        if p["version"]:
            row["versions"] += 1
            row["found"] += got
        else:
            row["look_alikes"] += 1
            row["joined"] += got
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks version-pairs", description=__doc__.split("\n")[0])
    p.add_argument("--record", action=argparse.BooleanOptionalAction, default=True)
    args = p.parse_args(argv)
    env, load_before = common.machine(), common.load_average()
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]
    rows, out = [], {}
    for label, with_model in (("MiniLM + words (the night)", True), ("words alone", False)):
        scores = score(pairs, with_model)
        out[label] = scores
        for split in ("dev", "held_out"):
            s = scores.get(split, {"versions": 0, "found": 0, "look_alikes": 0, "joined": 0})
            rows.append((label, split, f"{s['found']} of {s['versions']}", f"{s['joined']} of {s['look_alikes']}"))
    body = ("### Version pairs: reworded versions found, look-alikes joined\n\n"
            + common.table(("judge", "split", "versions found", "look-alikes joined"), rows))  # fmt: skip
    print(body)
    if args.record:
        common.append_results("version-pairs", body, env, load_before)
    return out


if __name__ == "__main__":
    main()
