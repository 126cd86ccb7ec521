"""`python -m benchmarks context`: the context compiler's latency at 10k and 100k memories with 20 topics.

Each call is the whole per-turn path an agent pays for: load the topics, Tier 1 and Tier 2 for every topic, the
§5.4 gate (offline: gate calls are counted apart, never timed — with a key each is one ~200 ms Haiku call),
P3 through the hybrid search over the store and the knowledge files, P4 from a 30-turn history, assembly and
the manifest. The store and the index come from `benchmarks.search` (its stand-in encoder, so the query's
embedding is not MiniLM's; MiniLM's one-query cost is in the search section). Baseline in the same run: the
search call alone, so the compiler's own overhead is the difference."""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import search as sb
from benchmarks.common import append_results, load_average, machine, table

TOPIC = """---
type: topic
triggers:
  - type: keywords
    keywords: [{words}]
    scope: input
activation: {activation}
priority: {priority}
max_context_kb: 4
---

# Topic {i}

## Instructions

When the conversation is about {text}: answer with the checklist of this topic, cite dates, and say when
nothing is stored.
"""
PRIORITIES = ("low", "medium", "high", "critical")
ACTIVATIONS = ("gated", "auto", "gated", "manual")


def write_topics(home: Path, texts: list[str], n: int = 20, seed: int = 5) -> None:
    """Three sample topics plus synthetic ones whose keywords come from the corpus, so messages wake some."""
    from memory_pipeline.context.sample import install_sample_knowledge

    install_sample_knowledge(home)
    rng = np.random.default_rng(seed)
    for i in range(n - 3):
        words = texts[int(rng.integers(0, len(texts)))].split()[:4]
        (home / "topics" / f"synthetic-{i:02d}.md").write_text(
            TOPIC.format(words=", ".join(words), activation=ACTIVATIONS[i % 4], priority=PRIORITIES[i % 4], i=i,
                         text=" ".join(words)),
            encoding="utf-8",
        )


def history(m: int = 30) -> list[Any]:
    from memory_pipeline.context import Turn

    return [Turn("user" if i % 3 else "tool", f"turn {i}: " + "lorem ipsum dolor sit amet " * 6, "bash" if i % 3 == 0
                 else "") for i in range(m)]


class Breakdown:
    """Per-message seconds of the compiler's parts, from wrappers around the functions it calls (benchmark only:
    the compiler is not changed): topics (load_topics), watchers (Tier 1 + Tier 2 + output watchers), gate,
    search (the P3 searches) and assembly (the rest: P0/P1/P4, packing, the manifest)."""

    PARTS = ("topics", "watchers", "gate", "search")

    def __init__(self) -> None:
        self.now: dict[str, float] = dict.fromkeys(self.PARTS, 0.0)
        self.rows: list[dict[str, float]] = []

    def timed(self, part: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.now[part] += time.perf_counter() - t

        return wrapper

    def install(self, patch: Any) -> None:
        from memory_pipeline.context import compiler, service, watchers
        from memory_pipeline.context.topics import load_topics

        # wrapped where the compiler and the service look them up
        patch(service, "load_topics", self.timed("topics", load_topics))
        patch(compiler, "tier1_matches", self.timed("watchers", watchers.tier1_matches))
        patch(compiler, "output_corrections", self.timed("watchers", watchers.output_corrections))
        real_scorer = watchers.scorer_for

        def scorer_for(topics: Any) -> Any:
            t = time.perf_counter()
            scorer = real_scorer(topics)
            self.now["watchers"] += time.perf_counter() - t
            return _TimedScorer(scorer, self.timed("watchers", scorer.scores))

        patch(compiler, "scorer_for", scorer_for)

    def close(self, total: float) -> None:
        row = dict(self.now)
        row["assembly"] = total - sum(self.now.values())
        self.rows.append(row)
        self.now = dict.fromkeys(self.PARTS, 0.0)

    def summary(self) -> str:
        return ", ".join(f"{p} {1000 * float(np.mean([r[p] for r in self.rows])):.1f} / "
                         f"{1000 * float(np.percentile([r[p] for r in self.rows], 95)):.1f}"
                         for p in (*self.PARTS, "assembly"))  # fmt: skip


class _TimedScorer:
    def __init__(self, scorer: Any, scores: Any) -> None:
        self._scorer, self.scores = scorer, scores


def run_size(n: int, m: int, budget: int) -> dict[str, Any]:
    from memory_pipeline.context.gate import Gate
    from memory_pipeline.context.search_adapter import default_search
    from memory_pipeline.context.service import compile_for_agent
    from memory_pipeline.search import build_index, search
    from memory_pipeline.search.warm import warm

    texts = sb.corpus(n)
    qs = sb.queries(texts, m)
    parts = Breakdown()
    saved: list[tuple[Any, str, Any]] = []

    def patch(module: Any, name: str, value: Any) -> None:
        saved.append((module, name, getattr(module, name)))
        setattr(module, name, value)

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        sb.make_store(home, texts)
        write_topics(home, texts)
        build_index(home, sb.encode, sb.MODEL, full=True)
        warm(home, (sb.encode, sb.MODEL))  # as the MCP server does before its first call
        scorer = default_search(home, (sb.encode, sb.MODEL), floor=0.0)  # random vectors: no calibrated floor
        turns = history()
        gate = Gate()
        compile_for_agent(home, qs[0], session_history=turns, budget_tokens=budget, search=scorer, gate=gate)
        parts.install(patch)
        gate.decide = parts.timed("gate", gate.decide)  # type: ignore[method-assign]
        timed_search = parts.timed("search", scorer)
        lat, only_search, gate_calls, p3 = [], [], 0, 0
        try:
            for q in qs:
                t = time.perf_counter()
                out, _ = compile_for_agent(home, q, session_history=turns, budget_tokens=budget, search=timed_search,
                                           gate=gate)  # fmt: skip
                lat.append(time.perf_counter() - t)
                parts.close(lat[-1])
                gate_calls += sum(1 for d in out.gate if d.decided_by == "offline")  # would be LLM calls with a key
                p3 += sum(1 for e in out.manifest if e.slot == "P3" and e.included)
                assert out.tokens <= budget
                t = time.perf_counter()
                search(q, 20, home=home, embedder=(sb.encode, sb.MODEL), floor=0.0)
                only_search.append(time.perf_counter() - t)
        finally:
            for module, name, value in reversed(saved):
                setattr(module, name, value)
    return {
        "p50": sb.pct(lat, 50),
        "p95": sb.pct(lat, 95),
        "search_p50": sb.pct(only_search, 50),
        "search_p95": sb.pct(only_search, 95),
        "gate_calls": gate_calls / len(qs),
        "p3": p3 / len(qs),
        "breakdown": parts.summary(),
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks context", description=__doc__)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated store sizes")
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--budget", type=int, default=8192)
    args = parser.parse_args(argv)
    started = datetime.now(UTC)
    env, load = machine(), load_average()
    rows, breakdowns = [], []
    for n in [int(s) for s in args.sizes.split(",") if s]:
        load_at = load_average()
        r = run_size(n, args.messages, args.budget)
        breakdowns.append(f"{n:,}: {r['breakdown']}")
        rows.append([f"{n:,}", f"{r['p50']:.1f}", f"{r['p95']:.1f}", f"{r['search_p50']:.1f}",
                     f"{r['search_p95']:.1f}", f"{r['p95'] - r['search_p95']:.1f}", f"{r['gate_calls']:.2f}",
                     f"{r['p3']:.1f}", load_at])
        print(rows[-1], flush=True)
    body = (
        f"{args.messages} messages of 3–6 words from stored text, 20 topics (3 sample + 17 synthetic, all four "
        f"activations and priorities), a 30-turn history, budget {args.budget} tokens. Gate calls excluded from "
        "the timing and counted apart (offline here: decided from the §5.4 table and Tier 2). Target: p95 ≤ 60 ms "
        "at 100k.\n\n"
    )
    body += table(
        ["memories", "compile p50 ms", "compile p95 ms", "search alone p50 ms", "search alone p95 ms",
         "compiler overhead at p95 ms", "gate calls / message", "P3 items / message", "load at start"],
        rows,
    )
    body += ("\n\nBreakdown per message, mean / p95 ms (wrappers around the functions the compiler calls; search is "
             "its P3 searches; assembly is the rest): " + "; ".join(breakdowns) + ".\n")
    body += f"\nStarted {started:%H:%M} UTC.\n"
    append_results("context: compile latency with 20 topics", body, env, load)
