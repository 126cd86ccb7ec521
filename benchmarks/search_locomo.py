"""`python -m benchmarks search-locomo`: the search's ranking and abstention on the LoCoMo dev set.

Each conversation's turns are imported into a fresh store and indexed (MiniLM); every question is searched
with each fusion (linear 0.4/0.6, RRF) and recency setting (none, the seed's exp(-0.1·days)), floor 0.
Evidence recall@5/@10 on categories 1-4; then the abstention floor is swept: the false-abstention rate on
categories 1-4 (an answerable question left unanswered) against the false-answer rate on category 5
(adversarial: the asked fact was never said), on never-stored questions (search_never_stored.txt) and on
cross-conversation probes (every fourth category 1-4 question of each other conversation, its speakers renamed
to this one's), for the shipped ranking and with a second, query-level floor (the background gate:
relevance's vector part less the memory's highest cosine to everyday questions), chosen by the rule of
read_path_rule.md (amendments of 2026-11-27 00:01 and 00:05 UTC); and the same gate reading the vector part alone
(BM25's weight 0 in the gate: the amendment of 02:41 UTC), and that only for a query holding a word no memory
holds (the amendment of 05:23 UTC)."""

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
GATED = {"background_gate": 1e-6}  # the gate's part computed; a floor of 0 would switch it off
VECTOR_GATED = {**GATED, "gate_bm25_weight": 0.0}
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
    from memory_pipeline.search.index import load_index, tokenize
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_jsonl

    encode = _cached(EmbedderResource(model=MINILM).encode)
    probes = [q for q in PROBES.read_text().splitlines() if q.strip() and not q.startswith("#")]
    recall: dict[tuple[str, float], dict[int, list[bool]]] = {c: {5: [], 10: []} for c in CONFIGS}
    top_rel: dict[str, list[float]] = {kind: [] for kind in KINDS}
    gate: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KINDS}
    vector_gate: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KINDS}
    unseen: dict[str, list[bool]] = {kind: [] for kind in KINDS}
    gated, shipped_floor = load_ranking().with_(**GATED), load_ranking().floor
    vector_gated = load_ranking().with_(**VECTOR_GATED)
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
            asked = [("adversarial" if q.category == 5 else "answerable", q.question) for q in conv.questions]
            asked += [("never_stored", p) for p in probes] + [("cross", p) for p in cross_probes(conv, convs)]
            idx = load_index(home)
            for kind, text in asked:
                unseen[kind].append(any(idx.idf_of(t) is None for t in tokenize([text])[0] if t))
                top_rel[kind].append(_best(search(text, 10, home=home, floor=0.0, embedder=(encode, MINILM),
                                                  now=now)))  # fmt: skip
                for ranking, into in ((gated, gate), (vector_gated, vector_gate)):
                    hits = search(text, 10, home=home, floor=0.0, embedder=(encode, MINILM), now=now, ranking=ranking)
                    into[kind].append((_best(hits, "specific"),
                                       _best([h for h in hits if h.parts["relevance"] >= shipped_floor], "specific")))
    return {"recall": recall, "top_rel": top_rel, "gate": gate, "vector_gate": vector_gate, "unseen": unseen,
            "build_s": build_s}


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


def _best(hits: Any, part: str = "relevance") -> float:
    """The best relevance among the hits (what the abstention floor reads), 0 when there are none."""
    return max((h.parts[part] for h in hits), default=0.0)


def choose_floor(never_stored: Sequence[float] | np.ndarray, at_most: float = 0.01) -> float | None:
    """The rule's floor: the lowest on the grid at which never-stored questions answer at most `at_most`."""
    rel = np.asarray(never_stored)
    return next((f for f in FLOORS if np.mean(rel >= f) <= at_most), None)


def verdicts(rel: dict[str, np.ndarray], gate: dict[str, np.ndarray], shipped_floor: float,
             vector_gate: dict[str, np.ndarray] | None = None, unseen_gate: dict[str, np.ndarray] | None = None) -> str:
    """The gate's floor by the rule, and whether it ships by (a) and (b) of the 00:01 amendment for the
    query-level decision (false abstention at most the shipped's + 0.5 point; fewer false answers on the
    cross-conversation probes); (c), the read path, is `python -m benchmarks read-path`'s. With `vector_gate`,
    the same for candidate 17 (02:41 UTC), whose (b) is fewer cross-conversation answers than the background
    gate's; with `unseen_gate`, for candidate 18 (05:23 UTC), whose (b) is at most the background gate's."""
    abstain = float(np.mean(rel["answerable"] < shipped_floor))
    cross = float(np.mean(rel["cross"] >= shipped_floor))
    never = float(np.mean(rel["never_stored"] >= shipped_floor))
    out = (f"- shipped: floor {shipped_floor:.2f}: never stored {never:.3f}, false abstention {abstain:.3f}, "
           f"cross-conversation answers {cross:.3f}\n")  # fmt: skip
    line, gated_cross = _gate_verdict("background gate", rel, gate, shipped_floor, abstain, cross)
    out += line
    if vector_gate is not None:
        out += _gate_verdict("vector-only gate", rel, vector_gate, shipped_floor, abstain, gated_cross)[0]
    if unseen_gate is not None:
        # its (b) is "at most" the background gate's: the bar a hair above it
        out += _gate_verdict("vector-only gate where a word is unseen", rel, unseen_gate, shipped_floor, abstain,
                             gated_cross + 1e-9)[0]  # fmt: skip
    return out


def unseen_values(gate: dict[str, np.ndarray], vector_gate: dict[str, np.ndarray],
                  unseen: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Candidate 18's gate value: the vector part alone for a query holding a word no memory holds, else the
    background gate's."""
    return {k: np.where(np.asarray(unseen[k], bool)[:, None], vector_gate[k], gate[k]) for k in gate}


def _gate_verdict(name: str, rel: dict[str, np.ndarray], gate: dict[str, np.ndarray], shipped_floor: float,
                  abstain: float, cross_bar: float) -> tuple[str, float]:
    """One gate's line and its cross-conversation answers (1.0 when the grid has no floor for it)."""
    f = choose_floor(gate["never_stored"][:, 0])
    if f is None:
        return f"- {name}: no floor on the grid keeps never-stored answers at 1 % or less\n", 1.0
    answered = {k: (rel[k] >= shipped_floor) & (gate[k][:, 1] >= f) for k in KINDS}
    fa, fc = float(np.mean(~answered["answerable"])), float(np.mean(answered["cross"]))
    ok = fa <= abstain + 0.005 and fc < cross_bar
    return (f"- {name}: the rule's floor {f:.2f} (the discounted relevance alone: never stored "
            f"{np.mean(gate['never_stored'][:, 0] >= f):.3f}); with both floors never stored "
            f"{np.mean(answered['never_stored']):.3f}, false abstention {fa:.3f}, cross-conversation answers "
            f"{fc:.3f}: {'ships by (a) and (b)' if ok else 'not shipped'}\n", fc)  # fmt: skip


def report(result: dict[str, Any]) -> str:
    rows = []
    for (fusion, w), by_k in result["recall"].items():
        label = "none" if not w else f"(1 - {w:g}) + {w:g}·exp(-0.1·days)" if w < 1 else "seed exp(-0.1·days)"
        rows.append([fusion, label, f"{np.mean(by_k[5]):.3f}", f"{np.mean(by_k[10]):.3f}", len(by_k[5])])
    body = "Evidence recall (categories 1-4, floor 0):\n\n"
    body += table(["fusion", "recency", "recall@5", "recall@10", "questions"], rows) + "\n\n"
    rel = {k: np.array(x) for k, x in result["top_rel"].items()}
    gate = {k: np.array(x).reshape(-1, 2) for k, x in result["gate"].items()}
    shipped_floor = load_ranking().floor
    sweep = [
        [f"{f:.2f}", f"{np.mean(rel['answerable'] < f):.3f}"] + [f"{np.mean(rel[k] >= f):.3f}" for k in KINDS[1:]]
        + gated[1:]
        for f, gated in zip(FLOORS, _gate_sweep(rel, gate, shipped_floor), strict=True)
    ]
    kinds = ["false abstention, cat 1-4", "false answer, cat 5", "false answer, never stored",
             "false answer, cross-conversation"]  # fmt: skip
    heads = [f"{k} (relevance)" for k in kinds] + ["never stored (discounted alone)"]
    heads += [f"{k} (relevance ≥ {shipped_floor:.2f} and discounted)" for k in kinds]
    body += ("Abstention on the best hit: relevance (0.4·BM25/ceiling + 0.6·cos) at each floor; the discounted "
             "relevance (0.4·BM25/ceiling + 0.6·max(cos − b, 0)) alone; and both, the shipped floor with the gate at "
             "each value:\n\n")  # fmt: skip
    body += table(["floor", *heads], sweep) + "\n\n"
    vector_gate = {k: np.array(x).reshape(-1, 2) for k, x in result["vector_gate"].items()}
    unseen_gate = unseen_values(gate, vector_gate, result["unseen"])
    for name, values in (("reading the vector part alone, 0.6·max(cos − b, 0)", vector_gate),
                         ("reading the vector part alone where the query holds a word no memory holds (else the "
                          "background gate's value)", unseen_gate)):  # fmt: skip
        body += (f"The gate {name}: never stored on it alone; and both, the shipped floor with it at each "
                 "value:\n\n")  # fmt: skip
        body += table(["gate", "never stored (gate value alone)", *heads[5:]], _gate_sweep(rel, values, shipped_floor))
        body += "\n\n"
    unseen_share = {k: float(np.mean(result["unseen"][k])) if len(result["unseen"][k]) else 0.0 for k in KINDS}
    body += "Queries holding a word no memory holds: " + ", ".join(f"{k} {v:.3f}" for k, v in unseen_share.items())
    body += "\n\n" + verdicts(rel, gate, shipped_floor, vector_gate, unseen_gate)
    body += f"\n{len(rel['answerable'])} answerable, {len(rel['adversarial'])} adversarial, "
    body += f"{len(rel['never_stored'])} never-stored and {len(rel['cross'])} cross-conversation queries; "
    body += f"index builds {result['build_s']:.1f} s in total.\n"
    return body


def _gate_sweep(rel: dict[str, np.ndarray], gate: dict[str, np.ndarray], shipped_floor: float) -> list[list[str]]:
    return [[f"{f:.2f}", f"{np.mean(gate['never_stored'][:, 0] >= f):.3f}"]
            + [f"{np.mean(~((rel['answerable'] >= shipped_floor) & (gate['answerable'][:, 1] >= f))):.3f}"]
            + [f"{np.mean((rel[k] >= shipped_floor) & (gate[k][:, 1] >= f)):.3f}" for k in KINDS[1:]]
            for f in FLOORS]  # fmt: skip


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
        args.json.write_text(json.dumps({k: result[k] for k in ("top_rel", "gate", "vector_gate", "unseen")}))
    append_results("search on LoCoMo: fusion, recency, abstention", report(result), env, load)
