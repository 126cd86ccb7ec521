"""Does the night lose or fuse a memory that disagrees with its neighbours? Families of five memories
(benchmarks/dissent_families.json): four say one statement, the fifth differs by one word, value, sign, unit,
quantifier, exception, role or name. Each family goes through the night's own steps — the offline distiller, then
the judge every distillation passes (`abstraction.distilling.judged`) — and is counted lost when the judge keeps a
summary that does not say the fifth (`statements.judgement.says`), fused when the kept summary joins the two with
"or". Reported per split, with MiniLM (as the night runs) and with the words alone."""

from __future__ import annotations

import argparse
import json
from typing import Any

from benchmarks import common

FAMILIES = common.HERE / "dissent_families.json"


def night(family: dict[str, str], encode: Any) -> dict[str, Any]:
    """The night's verdict on one family: kept or refused, and what a kept summary says."""
    from memory_pipeline.abstraction.distilling import judged
    from memory_pipeline.distillation.distill import Member, OfflineDistiller
    from memory_pipeline.similarity.clustering import MemoryCluster
    from memory_pipeline.statements.judgement import Near, says
    from memory_pipeline.tokens import estimate_tokens
    from memory_pipeline.verification import faithfulness

    texts = [family["same"]] * 4 + [family["dissent"]]
    members = [Member(f"m{i}", t, 0.5, f"2026-11-{10 + i}") for i, t in enumerate(texts)]
    tokens = sum(estimate_tokens(t) for t in texts)
    cluster = MemoryCluster("c", "fp", [m.id for m in members], len(members), 0.9, "note", ["note"], tokens, 0.5,
                            "2026-11-10", "2026-11-14")  # fmt: skip
    d = OfflineDistiller(encode=encode).distill(members, "note", ("2026-11-10", "2026-11-14"))
    outcome = judged(cluster, d, 1.5, 2000, texts, encode)
    kept = outcome.distillation is not None
    near = Near(encode)
    said = [s for s in faithfulness.sentences(d.abstraction)]
    lost = kept and not any(says(s, family["dissent"], near) for s in said)
    fused = kept and " or " in d.abstraction
    return {"kept": kept, "lost": lost, "fused": fused, "text": d.abstraction, "why": outcome.skip_reason or ""}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks dissent-families", description=__doc__.split("\n")[0])
    p.add_argument("--record", action=argparse.BooleanOptionalAction, default=True)
    args = p.parse_args(argv)
    from memory_pipeline.embedding.embedder import Embedder

    env, load_before = common.machine(), common.load_average()
    families = json.loads(FAMILIES.read_text(encoding="utf-8"))["families"]
    rows = []
    out: dict[str, Any] = {}
    for name, encode in (("MiniLM + words (the night)", Embedder().encode), ("words alone", None)):
        for split in ("dev", "held_out"):
            got = [night(f, encode) for f in families if f["split"] == split]
            out[f"{name}/{split}"] = got
            rows.append([name, split, len(got), sum(g["kept"] for g in got), sum(g["lost"] for g in got),
                         sum(g["fused"] for g in got)])  # fmt: skip
            for g in got:
                if g["lost"] or g["fused"]:
                    print(f"  {split}: {'lost' if g['lost'] else 'fused'}: {g['text']}")
    text = "### A memory that disagrees with its neighbours: lost or fused by the night?\n\n" + common.table(
        ["judge", "split", "families", "summaries kept", "dissent lost", "fused"], rows
    )
    if args.record:
        common.append_results("dissent-families", text, env, load_before)
    print(text)
    return out
