"""The read path's ablation on LoCoMo: what `context` hands an agent against plain BM25.

Per dev conversation the turns are imported as memories and embedded once (`--work DIR` keeps them between
runs), the search index is built, and every question of categories 1–4 is compiled by the product's
`context` at 512 / 1,000 / 2,000 / 4,000 tokens under each variant (a read-path setting: P3's format,
whole items, fusion, neighbouring turns, time-aware reading). Beside them, plain BM25 over the raw turns
packed to the same budgets, twice: one section per turn (the compiler's old format) and one line per turn
(its new one), so the table tells what packing gives apart from ranking. `benchmarks/read_path_rule.md`
picks the defaults; `choose` applies it to the rows of a run, and `--from-rows` to the rows files of runs done
one conversation at a time.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import math
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common
from memory_pipeline.evaluation.locomo import (
    HEADLINE_CATEGORIES,
    Conversation,
    answer_support,
    evidence_hit,
    load_locomo,
)
from memory_pipeline.evaluation.locomo_transcripts import default_locomo_path

RESULTS_DIR = common.HERE / "results" / "read_path"
BUDGETS = (512, 1000, 2000, 4000)
RULE_BUDGETS = (512, 1000, 2000)
# Each variant: settings for the compiler's P3 (`ReadPath`) and for search's ranking. Rows build on each other
# in the order of benchmarks/read_path_rule.md.
VARIANTS: dict[str, dict[str, Any]] = json.loads((common.HERE / "read_path_variants.json").read_text())


def prepare(conv: Conversation, work: Path, kind: str, data: Path) -> Path:
    """The conversation's turns imported (or its sessions replayed through the journal pipeline) and embedded;
    reused when `work` already holds them."""
    from benchmarks.locomo_e2e import prepare_memories, prepare_turns

    home = work / conv.sample_id / kind / "base"
    if (home / ".prepared").exists():
        return home
    prepare_turns(conv, work) if kind == "turns" else prepare_memories(conv, work, data)
    (home / ".prepared").write_text("ok")
    return home


def after_night(conv: Conversation, base: Path, kind: str) -> Path:
    """A copy of `base` after one real night at the shipped MiniLM clustering default."""
    from benchmarks.locomo_e2e import Base, consolidate
    from benchmarks.locomo_retention import active_tokens, clock_for
    from memory_pipeline.embedding.defaults import model_default

    choice = model_default("sentence-transformers/all-MiniLM-L6-v2")
    home, _ = consolidate(Base(conv, kind, base, clock_for(conv), active_tokens(base)), choice.threshold,
                          choice.linkage)  # fmt: skip
    return home


def _pack(items: Sequence[tuple[str, str]], budget: int, lines: bool) -> tuple[list[str], list[str]]:
    """Plain BM25's packing: one section per item, or one section with a line per item."""
    from memory_pipeline.context.compiler import section_tokens

    ids: list[str] = []
    texts: list[str] = []
    used = math.ceil(len("<!-- knowledge -->\n\n") / 3.5) if lines else 0
    for mid, text in items:
        cost = math.ceil((len(text) + 3) / 3.5) if lines else section_tokens(f"knowledge:{mid}", text)
        if used + cost <= budget:
            ids.append(mid)
            texts.append(text)
            used += cost
    return ids, texts


def score(home: Path, conv: Conversation, variants: Sequence[str], encode: Any, scope: str = "turns/before"
          ) -> list[dict[str, Any]]:  # fmt: skip
    import bm25s

    from benchmarks.locomo_retention import active_memories, clock_for
    from memory_pipeline.context.read_path import ReadPath
    from memory_pipeline.context.search_adapter import default_search
    from memory_pipeline.context.service import compile_for_agent
    from memory_pipeline.embedding.spec import MINILM
    from memory_pipeline.search import build_index
    from memory_pipeline.search.engine import clear_cache
    from memory_pipeline.search.index import current_folder, tokenize
    from memory_pipeline.search.scoring import load_ranking

    if current_folder(home) is None:
        build_index(home, encode, MINILM, full=True)
    clear_cache()
    mem = active_memories(home, MINILM)
    seen = [mem.context(i) for i in range(len(mem.ids))]
    retriever = bm25s.BM25()
    retriever.index(tokenize(seen), show_progress=False)
    questions = [q for q in conv.questions if q.category in HEADLINE_CATEGORIES]
    rows: list[dict[str, Any]] = []
    for q in questions:
        s = retriever.get_scores(tokenize([q.question])[0])
        order = [mem.ids[i] for i in np.argsort(-s, kind="stable") if s[i] > 0][:300]
        by_id = dict(zip(mem.ids, seen, strict=True))
        for budget in BUDGETS:
            for name, lines in (("bm25", False), ("bm25-lines", True)):
                ids, texts = _pack([(m, by_id[m]) for m in order], budget, lines)
                rows.append(_row(conv, q, name, budget, ids, texts, mem.lineage, 0.0, scope))
    for name in variants:
        v = VARIANTS[name]
        ranking = load_ranking().with_(**v.get("ranking", {}))
        read = ReadPath.load().with_(**v.get("read", {}))
        today = clock_for(conv).date()  # time expressions read against the conversation's own "now"
        run = default_search(home, embedder=(encode, MINILM), ranking=ranking, read=read, today=today)
        cached = functools.lru_cache(maxsize=8)(run)
        for q in questions:
            for budget in BUDGETS:
                t0 = time.perf_counter()
                compiled, _ = compile_for_agent(home, q.question, budget_tokens=budget, search=cached, read=read,
                                                today=today)
                ms = (time.perf_counter() - t0) * 1000
                rows.append(_row(conv, q, name, budget, compiled.memory_ids, [compiled.prompt], mem.lineage, ms, scope))
    return rows


def _row(conv: Conversation, q: Any, method: str, budget: int, ids: list[str], texts: list[str],
         lineage: dict[str, list[str]], ms: float, scope: str) -> dict[str, Any]:  # fmt: skip
    turns = scope.startswith("turns")  # extracted memories are not turns: no evidence recall
    return {
        "scope": scope, "conversation": conv.sample_id, "question": q.index, "category": q.category, "method": method,
        "budget": budget, "support": answer_support(q.answer, texts),
        "recall": evidence_hit(q.evidence, ids, lineage) if turns else None,
        "ms": round(ms, 2),
    }  # fmt: skip


def _mean(values: Sequence[Any]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def table(rows: list[dict[str, Any]]) -> dict[tuple[str, str, int], dict[str, float | None]]:
    """(method, conversation or 'all', budget) → mean support, recall and compile ms."""
    out: dict[tuple[str, str, int], dict[str, float | None]] = {}
    keys = {(r["method"], r["conversation"], r["budget"]) for r in rows}
    keys |= {(m, "all", b) for m, _, b in keys}
    for method, conv, budget in keys:
        sel = [r for r in rows if (r["method"], r["budget"]) == (method, budget) and conv in ("all", r["conversation"])]
        out[(method, conv, budget)] = {
            "support": _mean([r["support"] for r in sel]),
            "recall": _mean([r["recall"] for r in sel]),
            "ms": statistics.median(r["ms"] for r in sel) if sel else None,
        }
    return out


def rule_mean(t: dict[tuple[str, str, int], dict[str, float | None]], method: str, conv: str = "all") -> float:
    return sum(float(t[(method, conv, b)]["support"] or 0) for b in RULE_BUDGETS) / len(RULE_BUDGETS)


def choose(rows: list[dict[str, Any]], base: str, candidate: str) -> tuple[bool, str]:
    """benchmarks/read_path_rule.md, rules 1 and 3: does `candidate` ship on top of `base`?"""
    t = table(rows)
    gain = 100 * (rule_mean(t, candidate) - rule_mean(t, base))
    worst_budget = min(100 * (float(t[(candidate, "all", b)]["support"] or 0) - float(t[(base, "all", b)]["support"]
                       or 0)) for b in RULE_BUDGETS)  # fmt: skip
    convs = sorted({r["conversation"] for r in rows})
    worst_conv = min(100 * (rule_mean(t, candidate, c) - rule_mean(t, base, c)) for c in convs)
    # latency against the read path as it was (`main`): a row that reads almost nothing is no yardstick
    ref = "main" if ("main", "all", 2000) in t else base
    slower = float(t[(candidate, "all", 2000)]["ms"] or 0) / max(float(t[(ref, "all", 2000)]["ms"] or 1e-9), 1e-9)
    ships = gain >= 0.5 and worst_budget >= -1.0 and worst_conv >= -2.0 and slower <= 2.0
    why = (f"{candidate} over {base}: mean {gain:+.1f} pts, worst budget {worst_budget:+.1f}, worst conversation "
           f"{worst_conv:+.1f}, compile time ×{slower:.2f} → {'ships' if ships else 'does not ship'}")  # fmt: skip
    return ships, why


def results_section(rows: list[dict[str, Any]], methods: Sequence[str], seconds: float, convs: Sequence[str]) -> str:
    lines = [f"Data: the shared LoCoMo dev file, conversations {', '.join(convs)}; categories 1–4; embedder "
             f"MiniLM; total {seconds:.0f} s. Rule: `benchmarks/read_path_rule.md`. Answer support (evidence "
             "recall, turns only) by budget; mean = support over 512/1,000/2,000; compile = median `context` time "
             "at 2,000 tokens (query embedding included). Input turns = every turn a memory; memories = what the "
             "journal pipeline extracts from the sessions; after = one night at the shipped clustering default."]
    for scope in sorted({r["scope"] for r in rows}, key=lambda s: (s.split("/")[0] != "turns", s)):
        lines += ["", f"**{scope}**", ""]
        lines += _scope_table([r for r in rows if r["scope"] == scope], methods)
    return "\n".join(lines) + "\n"


def _scope_table(rows: list[dict[str, Any]], methods: Sequence[str]) -> list[str]:
    t = table(rows)
    lines = ["| read path | 512 | 1,000 | 2,000 | 4,000 | mean | compile ms |", "|---|---|---|---|---|---|---|"]
    for m in methods:
        cells = [_cell(t[(m, "all", b)]) for b in BUDGETS]
        ms = t[(m, "all", 2000)]["ms"]
        lines.append(f"| {m} | {' | '.join(cells)} | {rule_mean(t, m):.3f} | {ms:.1f} |" if ms else
                     f"| {m} | {' | '.join(cells)} | {rule_mean(t, m):.3f} | — |")  # fmt: skip
    return lines


def _cell(v: dict[str, float | None]) -> str:
    return f"{v['support']:.3f}" + (f" ({v['recall']:.3f})" if v["recall"] is not None else "")


def read_rows(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Rows files written by earlier runs, typed as `score` made them (a run cut into pieces stays one run)."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        with path.open(newline="") as fh:
            for r in csv.DictReader(fh):
                rows.append({**r, "question": int(r["question"]), "category": int(r["category"]),
                             "budget": int(r["budget"]), "support": _number(r["support"]),
                             "recall": _number(r["recall"]), "ms": float(r["ms"])})  # fmt: skip
    return rows


def _number(cell: str) -> float | None:
    """A rows-file cell: True/False (a hit or not), a number, or empty (no evidence recall)."""
    if cell in ("", "None"):
        return None
    if cell in ("True", "False"):
        return float(cell == "True")
    return float(cell)


def from_rows(paths: Sequence[Path], base: str | None, scope: str = "turns/before") -> str:
    """The table of rows already measured, with rule 1's verdict of each row on `base` (or on the row before),
    judged on `scope` (the rule's own is turns/before; a candidate that only acts after the night is judged on
    turns/after)."""
    rows = read_rows(paths)
    methods = list(dict.fromkeys(r["method"] for r in rows))
    convs = sorted({r["conversation"] for r in rows})
    body = results_section(rows, methods, 0.0, convs)
    variants = [m for m in methods if m in VARIANTS]
    headline = [r for r in rows if r["scope"] == scope]
    pairs = [(base, v) for v in variants if v != base] if base else list(zip(variants, variants[1:], strict=False))
    for before, after in pairs:
        if headline:
            body += f"\n- {scope}: {choose(headline, before, after)[1]}"
    return body


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks read-path", description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=default_locomo_path(), help="any LoCoMo-format JSON file")
    p.add_argument("--conversations", help="comma-separated sample ids (default: all)")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of: {', '.join(VARIANTS)}")
    p.add_argument("--work", type=Path, help="keep the imported, embedded conversations here between runs")
    p.add_argument("--inputs", default="turns", help="comma-separated: turns, memories")
    p.add_argument("--after", action="store_true", help="also after one night at the shipped clustering default")
    p.add_argument("--out", type=Path, default=RESULTS_DIR / "rows.csv")
    p.add_argument("--no-results", action="store_true", help="print the table; do not append to the run file")
    p.add_argument("--from-rows", help="comma-separated rows files of earlier runs (e.g. one per conversation): "
                   "print their table and the rule's verdicts, run nothing")  # fmt: skip
    p.add_argument("--base", help="with --from-rows: judge every other row against this one")
    p.add_argument("--scope", default="turns/before", help="with --from-rows: the input/when the verdicts read "
                   "(turns/before, turns/after, memories/before, memories/after)")
    args = p.parse_args(argv)
    if args.from_rows:
        print(from_rows([Path(f) for f in args.from_rows.split(",")], args.base, args.scope))
        return
    from benchmarks.locomo_e2e import _cached_encoder
    from memory_pipeline.resources.embedder import EmbedderResource

    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    env, load_before = common.machine(), common.load_average()
    started = time.perf_counter()
    encode = _cached_encoder(EmbedderResource().encode)
    rows: list[dict[str, Any]] = []
    convs = []
    with tempfile.TemporaryDirectory(prefix="read-path-") as tmp:
        work = args.work or Path(tmp)
        for conv in load_locomo(args.data, args.conversations.split(",") if args.conversations else None):
            for kind in [s.strip() for s in args.inputs.split(",")]:
                t0 = time.perf_counter()
                base = prepare(conv, work, kind, args.data)
                rows += score(base, conv, variants, encode, f"{kind}/before")
                if args.after:
                    rows += score(after_night(conv, base, kind), conv, variants, encode, f"{kind}/after")
                print(f"  {conv.sample_id}/{kind}: {time.perf_counter() - t0:.0f} s", flush=True)
            convs.append(conv.sample_id)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    methods = ["bm25", "bm25-lines", *variants]
    body = results_section(rows, methods, time.perf_counter() - started, convs)
    headline = [r for r in rows if r["scope"] == "turns/before"]
    for before, after in zip(variants, variants[1:], strict=False):
        if headline:
            body += f"\n- {choose(headline, before, after)[1]}"
    if args.no_results:
        print(body)
    else:
        common.append_results("read-path: `context` against plain BM25 on LoCoMo", body, env, load_before)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
