"""Which topics wake, against a labelled set: precision and recall per tier on the demo's topics.

`benchmarks/topic_messages.json` labels messages with the topics that should wake. Per tier: Tier 1 (the
topics' triggers), Tier 2 alone at thresholds 0.10–0.40 with TF-IDF cosine (the shipped scorer) and with
BM25 normalised by its ceiling (Σ idf of the message's terms, as search normalises it), and the end-to-end
activation the compiler decides (triggers, Tier 2 at each topic's threshold, the offline gate).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common

MESSAGES = common.HERE / "topic_messages.json"
THRESHOLDS = (0.10, 0.15, 0.20, 0.25, 0.30, 0.40)


def bm25_scores(topics: list[Any], message: str) -> dict[str, float]:
    import bm25s

    from memory_pipeline.search.index import tokenize
    from memory_pipeline.search.scoring import bm25_ceiling

    retriever = bm25s.BM25()
    retriever.index(tokenize([f"{t.title} {t.instructions} {' '.join(t.keywords)}" for t in topics]),
                    show_progress=False)  # fmt: skip
    terms = [w for w in dict.fromkeys(tokenize([message])[0]) if w in retriever.vocab_dict]
    if not terms:
        return {t.name: 0.0 for t in topics}
    n = len(topics)
    idf = [float(np.log(1 + (n - df + 0.5) / (df + 0.5)))
           for df in (sum(1 for t in topics if w in tokenize([f"{t.title} {t.instructions} {' '.join(t.keywords)}"])[0])
                      for w in terms)]  # fmt: skip
    raw = retriever.get_scores(terms)
    return {t.name: float(min(1.0, raw[i] / bm25_ceiling(idf))) for i, t in enumerate(topics)}


def _pr(predicted: list[set[str]], gold: list[set[str]]) -> tuple[float, float]:
    tp = sum(len(p & g) for p, g in zip(predicted, gold, strict=True))
    fp = sum(len(p - g) for p, g in zip(predicted, gold, strict=True))
    fn = sum(len(g - p) for p, g in zip(predicted, gold, strict=True))
    return tp / max(tp + fp, 1), tp / max(tp + fn, 1)


def evaluate(home: Path) -> list[tuple[str, float, float]]:
    from memory_pipeline.context.compiler import compile_context
    from memory_pipeline.context.topics import load_topics
    from memory_pipeline.context.watchers import scorer_for, tier1_matches

    topics, _ = load_topics(home)
    items = json.loads(MESSAGES.read_text(encoding="utf-8"))["messages"]
    gold = [set(i["wake"]) for i in items]
    rows: list[tuple[str, float, float]] = []
    rows.append(("Tier 1 (triggers)", *_pr([set(tier1_matches(topics, i["m"])) for i in items], gold)))
    tfidf = [scorer_for(tuple(topics)).scores(i["m"]) for i in items]
    bm25 = [bm25_scores(topics, i["m"]) for i in items]
    for name, scores in (("TF-IDF", tfidf), ("BM25", bm25)):
        for th in THRESHOLDS:
            predicted = [{t for t, s in sc.items() if s >= th} for sc in scores]
            rows.append((f"Tier 2 alone, {name} ≥ {th:.2f}", *_pr(predicted, gold)))
    activated = []
    for i in items:
        out = compile_context(home, i["m"], topics=topics, budget_tokens=8192)
        activated.append({d.topic for d in out.gate if d.activated})
    rows.append(("activation (compiler, offline gate)", *_pr(activated, gold)))
    return rows


def section(rows: list[tuple[str, float, float]], n: int, seconds: float) -> str:
    lines = [f"Labelled set: `benchmarks/topic_messages.json` ({n} messages) on the demo's three topics; "
             f"total {seconds:.1f} s.", "", "| tier | precision | recall |", "|---|---|---|"]  # fmt: skip
    lines += [f"| {name} | {p:.2f} | {r:.2f} |" for name, p, r in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks topics", description=__doc__.split("\n")[0])
    p.add_argument("--no-results", action="store_true", help="print; do not append to the run file")
    args = p.parse_args(argv)
    from memory_pipeline.context.sample import install_sample_knowledge

    env, load_before = common.machine(), common.load_average()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="topics-") as tmp:
        home = Path(tmp)
        install_sample_knowledge(home)
        rows = evaluate(home)
    n = len(json.loads(MESSAGES.read_text(encoding="utf-8"))["messages"])
    body = section(rows, n, time.perf_counter() - started)
    if args.no_results:
        print(body)
    else:
        common.append_results("topics: which topics wake, on a labelled set", body, env, load_before)


if __name__ == "__main__":
    main(sys.argv[1:])
