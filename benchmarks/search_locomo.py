"""`python -m benchmarks search-locomo`: the search's ranking and abstention on the LoCoMo dev set.

Each conversation's turns are imported into a fresh store and indexed (MiniLM); every question is searched
with each fusion (linear 0.4/0.6, RRF) and recency setting (none, the seed's exp(-0.1·days)), floor 0.
Evidence recall@5/@10 on categories 1-4; then the abstention floor is swept: the false-abstention rate on
categories 1-4 (an answerable question left unanswered) against the false-answer rate on category 5
(adversarial: the asked fact was never said), on never-stored questions (search_never_stored.txt) and on
cross-conversation probes (every fourth category 1-4 question of each other conversation, its speakers renamed
to this one's), for the shipped ranking and with `background` (relevance's vector part less the memory's
highest cosine to everyday questions), each floor chosen by the rule of read_path_rule.md (amendment of
2026-11-27 00:01 UTC)."""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import append_results, load_average, machine, table
from memory_pipeline.evaluation.locomo import evidence_hit, load_locomo, write_jsonl
from memory_pipeline.search.scoring import load_ranking

HERE = Path(__file__).resolve().parent
PROBES = HERE / "search_never_stored.txt"
CONFIGS = (("linear", 0.0), ("rrf", 0.0), ("linear", 0.1), ("rrf", 0.1), ("linear", 1.0), ("rrf", 1.0))
FLOORS = [round(x, 2) for x in np.arange(0.02, 0.52, 0.02)]
VARIANTS = {"shipped": {}, "background": {"background": True}}
KINDS = ("answerable", "adversarial", "never_stored", "cross")
CROSS_EVERY = 4


def _cached(encode: Any) -> Any:
    memo: dict[str, np.ndarray] = {}

    def enc(texts: list[str]) -> np.ndarray:
        missing = [t for t in texts if t not in memo]
        if missing:
            for t, v in zip(missing, encode(missing), strict=True):
                memo[t] = v
        return np.vstack([memo[t] for t in texts])

    return enc


def run(data: Path, conversations: list[str] | None) -> dict[str, Any]:
    from memory_pipeline.resources.embedder import MINILM, EmbedderResource
    from memory_pipeline.search import build_index, search
    from memory_pipeline.search.engine import clear_cache
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_jsonl

    encode = _cached(EmbedderResource(model=MINILM).encode)
    probes = [q for q in PROBES.read_text().splitlines() if q.strip() and not q.startswith("#")]
    recall: dict[tuple[str, float], dict[int, list[bool]]] = {c: {5: [], 10: []} for c in CONFIGS}
    top_rel: dict[str, dict[str, list[float]]] = {v: {kind: [] for kind in KINDS} for v in VARIANTS}
    rankings = {v: load_ranking().with_(**changes) for v, changes in VARIANTS.items()}
    build_s = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        convs = load_locomo(data, conversations)
        for conv in convs:
            home = Path(tmp) / conv.sample_id
            home.mkdir()
            import_jsonl(MemoryStore(home / "memory.duckdb"), write_jsonl(conv, home / "turns.jsonl"))
            t = time.perf_counter()
            build_index(home, encode, MINILM)
            build_s += time.perf_counter() - t
            clear_cache()
            now = (conv.last_session_at + timedelta(days=1)).replace(tzinfo=UTC)
            for q in conv.questions:
                for fusion, w in CONFIGS:
                    hits = search(
                        q.question,
                        10,
                        home=home,
                        fusion=fusion,
                        floor=0.0,
                        embedder=(encode, MINILM),
                        now=now,
                        ranking=None if w == 0 else _ranking(w),
                    )
                    ids = [h.id for h in hits]
                    if q.category != 5 and q.evidence:
                        for k in (5, 10):
                            recall[(fusion, w)][k].append(bool(evidence_hit(q.evidence, ids[:k], {})))
                for v, ranking in rankings.items():
                    top_rel[v]["adversarial" if q.category == 5 else "answerable"].append(
                        _best(search(q.question, 10, home=home, floor=0.0, embedder=(encode, MINILM), now=now,
                                     ranking=ranking)))  # fmt: skip
            for kind, texts in (("never_stored", probes), ("cross", cross_probes(conv, convs))):
                for p in texts:
                    for v, ranking in rankings.items():
                        top_rel[v][kind].append(
                            _best(search(p, 10, home=home, floor=0.0, embedder=(encode, MINILM), now=now,
                                         ranking=ranking)))  # fmt: skip
    return {"recall": recall, "top_rel": top_rel, "build_s": build_s}


def cross_probes(conv: Any, convs: Sequence[Any]) -> list[str]:
    """Questions these two people were never asked about: every fourth category 1-4 question of each other
    conversation, its speakers' names replaced by this conversation's."""
    out = []
    for other in convs:
        if other.sample_id == conv.sample_id:
            continue
        for q in [q for q in other.questions if q.category != 5][::CROSS_EVERY]:
            text = q.question
            for theirs, ours in zip(other.speakers, conv.speakers, strict=True):
                text = re.sub(rf"\b{re.escape(theirs)}\b", ours, text)
            out.append(text)
    return out


def _ranking(weight: float) -> Any:
    return load_ranking().with_(recency_weight=weight)


def _best(hits: Any) -> float:
    """The best relevance among the hits (what the abstention floor reads), 0 when there are none."""
    return max((h.parts["relevance"] for h in hits), default=0.0)


def choose_floor(never_stored: Sequence[float] | np.ndarray, at_most: float = 0.01) -> float | None:
    """The rule's floor: the lowest on the grid at which never-stored questions answer at most `at_most`."""
    rel = np.asarray(never_stored)
    return next((f for f in FLOORS if np.mean(rel >= f) <= at_most), None)


def verdicts(rel: dict[str, dict[str, np.ndarray]], shipped_floor: float) -> str:
    """Each ranking's floor by the rule, and whether a candidate ships by (a) and (b) of the 00:01 amendment
    (false abstention at most the shipped's + 0.5 point; fewer false answers on the cross-conversation probes);
    (c), the read path, is `python -m benchmarks read-path`'s."""
    base = rel["shipped"]
    abstain = float(np.mean(base["answerable"] < shipped_floor))
    cross = float(np.mean(base["cross"] >= shipped_floor))
    out = ""
    for v in VARIANTS:
        f = choose_floor(rel[v]["never_stored"])
        if f is None:
            out += f"- {v}: no floor on the grid keeps never-stored answers at 1 % or less\n"
            continue
        fa, fc = float(np.mean(rel[v]["answerable"] < f)), float(np.mean(rel[v]["cross"] >= f))
        ok = fa <= abstain + 0.005 and fc < cross
        verdict = "reference" if v == "shipped" else "ships by (a) and (b)" if ok else "not shipped"
        out += (f"- {v}: the rule's floor {f:.2f} (never stored {np.mean(rel[v]['never_stored'] >= f):.3f}); "
                f"false abstention {fa:.3f} and cross-conversation answers {fc:.3f}, against the shipped "
                f"{abstain:.3f} and {cross:.3f} at {shipped_floor:.2f}: {verdict}\n")  # fmt: skip
    return out


def report(result: dict[str, Any]) -> str:
    rows = []
    for (fusion, w), by_k in result["recall"].items():
        label = "none" if not w else f"(1 - {w:g}) + {w:g}·exp(-0.1·days)" if w < 1 else "seed exp(-0.1·days)"
        rows.append([fusion, label, f"{np.mean(by_k[5]):.3f}", f"{np.mean(by_k[10]):.3f}", len(by_k[5])])
    body = "Evidence recall (categories 1-4, floor 0):\n\n"
    body += table(["fusion", "recency", "recall@5", "recall@10", "questions"], rows) + "\n\n"
    rel = {v: {k: np.array(x) for k, x in by.items()} for v, by in result["top_rel"].items()}
    sweep = [
        [f"{f:.2f}"]
        + [f"{np.mean(rel[v]['answerable'] < f):.3f}" for v in VARIANTS]
        + [f"{np.mean(rel[v][kind] >= f):.3f}" for kind in KINDS[1:] for v in VARIANTS]
        for f in FLOORS
    ]
    heads = [f"{what} ({v})" for what in ("false abstention, cat 1-4", "false answer, cat 5", "false answer, never "
                                          "stored", "false answer, cross-conversation") for v in VARIANTS]  # fmt: skip
    body += "Abstention floor on the best hit's relevance (0.4·BM25/ceiling + 0.6·cos), the shipped ranking:\n\n"
    body += table(["floor", *heads], sweep) + "\n\n"
    body += verdicts(rel, load_ranking().floor)
    n = rel["shipped"]
    body += f"\n{len(n['answerable'])} answerable, {len(n['adversarial'])} adversarial, "
    body += f"{len(n['never_stored'])} never-stored and {len(n['cross'])} cross-conversation queries; "
    body += f"index builds {result['build_s']:.1f} s in total.\n"
    return body


def main(argv: list[str]) -> None:
    from memory_pipeline.evaluation.locomo_transcripts import default_locomo_path

    parser = argparse.ArgumentParser(prog="python -m benchmarks search-locomo", description=__doc__)
    parser.add_argument("--data", type=Path, default=default_locomo_path())
    parser.add_argument("--conversations", default="", help="comma-separated sample ids (default: all)")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw numbers here")
    args = parser.parse_args(argv)
    env, load = machine(), load_average()
    result = run(args.data, [c for c in args.conversations.split(",") if c] or None)
    if args.json:
        args.json.write_text(json.dumps({"top_rel": result["top_rel"]}))
    append_results("search on LoCoMo: fusion, recency, abstention", report(result), env, load)
