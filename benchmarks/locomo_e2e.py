"""LoCoMo end to end through the product's read path: what an agent reads back after a night.

Per conversation and per consolidation input — the raw turns (the project's importer) or the memories the journal
pipeline extracts from the conversation's transcripts (`import locomo` → `reconstruct`: sessions, session
memories, journals, MEMORY.md) — the store is embedded once, then copied per (threshold, linkage) point and
consolidated by the real `nightly_consolidation` job. Before and after, every question is answered from
what each read path returns within a token budget (512 / 1,000 / 2,000 / 4,000):

- `context`: the product's context compiler (`compile_for_agent`, search as P3, MEMORY.md as P1 when the
  journal pipeline wrote one);
- `hybrid`: the hybrid search without the compiler, its top 20 packed to the budget;
- `bm25`: BM25 only (bm25s, the search index's tokenizer) over the active memories, packed;
- `cosine`: the stand-in — cosine top-k of the active memories, packed;
- `recent`: the most recent active memories, packed.

Scores: answer support (the answer-support rule, `evaluation.locomo.answer_support`) on the text the path returned;
evidence recall on the memory ids it returned (turn input only: extracted memories are not turns); the
tokens actually used. The MiniLM default is picked from the curve by `benchmarks/locomo_rule.md`
(`--choose CURVE.csv` applies it).
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common
from benchmarks.locomo_retention import active_memories, active_tokens, clock_for, reduction_pct, write_csv
from memory_pipeline.evaluation.locomo import (
    ADVERSARIAL_CATEGORY,
    HEADLINE_CATEGORIES,
    Conversation,
    answer_support,
    evidence_hit,
    load_locomo,
)
from memory_pipeline.evaluation.locomo_transcripts import default_locomo_path

RESULTS_DIR = common.HERE / "results" / "locomo_e2e"
BUDGETS = (512, 1000, 2000, 4000)
THRESHOLDS = (0.70, 0.74, 0.78, 0.82)
LINKAGES = ("single", "complete", "average")
INPUTS = ("turns", "memories")
METHODS = ("context", "hybrid", "bm25", "cosine", "recent")
SEARCH_K = 20
QUICK = {"conversations": ["conv-26"], "thresholds": (0.74, 0.82), "linkages": ("single", "complete")}
# benchmarks/locomo_rule.md, as numbers
RULE_BUDGET, RULE_RATIO, RULE_WORST, RULE_TIE_PCT = 2000, 0.98, 0.95, 1.0
LINKAGE_PREFERENCE = ("complete", "average", "single")


@dataclass
class Base:
    conv: Conversation
    input: str
    home: Path
    as_of: datetime
    tokens_before: int


def _resources(home: Path, as_of: datetime, threshold: float | None = None, linkage: str | None = None) -> Any:
    from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
    from memory_pipeline.resources.notifier import NotifierResource

    return {
        "store": MemoryStoreResource(home=str(home)),
        "embedder": EmbedderResource(),
        "llm": LLMResource(mode="offline"),
        # no retention probes: the curve measures every night's result, and a night the check would stop commits
        # nothing to measure (benchmarks/retention_probes.py measures the check)
        "engine": EngineConfig(as_of=as_of.isoformat(), similarity_threshold=threshold, linkage=linkage,
                               retention_probes=0),
        "notifier": NotifierResource(alerts_path=str(home / "reports" / "alerts.jsonl")),
    }


def _embed(home: Path, as_of: datetime) -> None:
    import dagster as dg

    from memory_pipeline.defs.abstraction.cluster_finder import memory_embeddings

    assert dg.materialize([memory_embeddings], resources=_resources(home, as_of), raise_on_error=True).success


def prepare_turns(conv: Conversation, work: Path) -> Base:
    """The raw-turns input: every turn imported as a memory through the project's importer."""
    from memory_pipeline.evaluation.locomo import write_jsonl
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_jsonl

    home = work / conv.sample_id / "turns" / "base"
    shutil.rmtree(home.parent, ignore_errors=True)
    home.mkdir(parents=True)
    import_jsonl(MemoryStore(home / "memory.duckdb"), write_jsonl(conv, home.parent / "turns.jsonl"))
    as_of = clock_for(conv)
    _embed(home, as_of)
    return Base(conv, "turns", home, as_of, active_tokens(home))


def prepare_memories(conv: Conversation, work: Path, data: Path) -> Base:
    """The journal pipeline's input: the conversation's sessions as transcripts, replayed by `reconstruct`
    (in a child process: the journal jobs read their workspace from the environment)."""
    home = work / conv.sample_id / "memories" / "base"
    shutil.rmtree(home.parent, ignore_errors=True)
    home.mkdir(parents=True)
    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(home.parent / "dagster_home"),
           "MEMORY_PIPELINE_JOURNAL_START": "2022-01-01"}  # LoCoMo's sessions are dated 2022-2023
    Path(env["DAGSTER_HOME"]).mkdir()
    cmd = [sys.executable, "-m", "benchmarks.locomo_e2e", "--journal", str(data), conv.sample_id]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0 or active_tokens(home) == 0:
        raise RuntimeError(f"{conv.sample_id}: the journal pipeline failed:\n{done.stdout}\n{done.stderr}")
    as_of = clock_for(conv)
    _embed(home, as_of)
    return Base(conv, "memories", home, as_of, active_tokens(home))


def _journal_child(data: Path, sample_id: str) -> int:
    """`--journal DATA ID`: import the conversation's sessions as transcripts and reconstruct every day."""
    import dagster as dg

    from memory_pipeline.evaluation.locomo_transcripts import locomo_to_transcripts
    from memory_pipeline.journals.cli.reconstruct import reconstruct
    from memory_pipeline.settings import workspace_home

    raw = workspace_home() / "raw" / "conversations"
    written = locomo_to_transcripts(data, raw, [sample_id])
    days = sorted(date.fromisoformat("-".join(p.parent.relative_to(raw).parts)) for p in written)
    with dg.DagsterInstance.get() as instance:
        result = reconstruct(instance, days[0], days[-1], multiprocess=False, echo=lambda _l: None,
                             quiet_level="WARNING")  # fmt: skip
    return 1 if result.failed or result.rejected else 0


def consolidate(base: Base, threshold: float, linkage: str) -> tuple[Path, dict[str, Any]]:
    """A copy of the embedded store and one real nightly_consolidation at (threshold, linkage)."""
    import dagster as dg

    from memory_pipeline.definitions import defs_with

    home = base.home.parent / f"t{threshold:.2f}-{linkage}"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(base.home, home)
    defs = defs_with(_resources(home, base.as_of, threshold, linkage))
    from memory_pipeline.settings import console_loggers

    result = defs.resolve_job_def("nightly_consolidation").execute_in_process(
        instance=dg.DagsterInstance.ephemeral(), raise_on_error=False,
        run_config={"loggers": console_loggers("WARNING")},
    )  # fmt: skip
    if not result.success:
        raise RuntimeError(f"{base.conv.sample_id}/{base.input} at {threshold} {linkage}: the night failed")
    report = json.loads((home / "reports" / f"compression-{result.run_id}.json").read_text())
    return home, report


def _pack(texts: Sequence[tuple[str, str]], budget: int) -> tuple[list[str], list[str], int]:
    """(ids, texts, tokens) of the candidates that fit, in order, each as the compiler renders a section."""
    from memory_pipeline.context.compiler import section_tokens

    ids, kept, used = [], [], 0
    for mid, text in texts:
        cost = section_tokens(f"knowledge:{mid}", text)
        if used + cost <= budget:
            ids.append(mid)
            kept.append(text)
            used += cost
    return ids, kept, used


def score_state(home: Path, conv: Conversation, encode: Callable[..., Any], turns: bool) -> list[dict[str, Any]]:
    """One row per question and read path: support, recall and tokens per budget."""
    import bm25s

    from memory_pipeline.context.search_adapter import default_search
    from memory_pipeline.context.service import compile_for_agent
    from memory_pipeline.embedding.spec import MINILM
    from memory_pipeline.search import build_index, search
    from memory_pipeline.search.engine import clear_cache
    from memory_pipeline.search.index import tokenize

    build_index(home, encode, MINILM, full=True)
    clear_cache()
    mem = active_memories(home, MINILM)
    seen = [mem.context(i) for i in range(len(mem.ids))]
    order_recent = sorted(range(len(mem.ids)), key=lambda i: (mem.created[i] if mem.created else 0, i), reverse=True)
    retriever = bm25s.BM25()
    retriever.index(tokenize(seen), show_progress=False)
    qvecs = encode([q.question for q in conv.questions])
    mvecs = mem.vectors / np.maximum(np.linalg.norm(mem.vectors, axis=1, keepdims=True), 1e-12)
    cached = functools.lru_cache(maxsize=4)(default_search(home, embedder=(encode, MINILM)))
    rows = []
    for q, qv in zip(conv.questions, qvecs, strict=True):
        cos = np.argsort(-(mvecs @ (qv / max(float(np.linalg.norm(qv)), 1e-12))), kind="stable")
        bm_scores = retriever.get_scores(tokenize([q.question])[0])
        bm = [i for i in np.argsort(-bm_scores, kind="stable") if bm_scores[i] > 0]
        hits = search(q.question, SEARCH_K, home=home, embedder=(encode, MINILM))
        candidates = {
            "hybrid": [(h.id, (f"[{h.date}] " if h.date else "") + h.snippet) for h in hits],
            "bm25": [(mem.ids[i], seen[i]) for i in bm[:200]],
            "cosine": [(mem.ids[i], seen[i]) for i in cos[:200]],
            "recent": [(mem.ids[i], seen[i]) for i in order_recent[:200]],
        }
        for budget in BUDGETS:
            compiled, _ = compile_for_agent(home, q.question, budget_tokens=budget, search=cached)
            found = {"context": (compiled.memory_ids, [compiled.prompt], compiled.tokens)}
            for method, cands in candidates.items():
                found[method] = _pack(cands, budget)
            for method, (ids, texts, used) in found.items():
                rows.append({
                    "question": q.index, "category": q.category, "method": method, "budget": budget,
                    "support": answer_support(q.answer, texts),
                    "recall": evidence_hit(q.evidence, ids, mem.lineage) if turns else None,
                    "tokens": used,
                })  # fmt: skip
    return rows


def _mean(values: Sequence[Any]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def summarise(rows: list[dict[str, Any]], categories: Sequence[int]) -> dict[tuple[str, int], dict[str, Any]]:
    out = {}
    for method in METHODS:
        for budget in BUDGETS:
            sel = [r for r in rows if r["method"] == method and r["budget"] == budget and r["category"] in categories]
            out[(method, budget)] = {
                "support": _mean([r["support"] for r in sel]),
                "recall": _mean([r["recall"] for r in sel]),
                "tokens": _mean([r["tokens"] for r in sel]),
                "n": sum(1 for r in sel if r["support"] is not None),
            }
    return out


def run(
    data: Path, conversations: list[str] | None, thresholds: Sequence[float], linkages: Sequence[str],
    inputs: Sequence[str], work: Path, save: Path | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """The curve rows: (input, conversation or 'all', threshold, linkage, scope, method, budget) → scores."""
    from memory_pipeline.resources.embedder import EmbedderResource

    encode = _cached_encoder(EmbedderResource().encode)
    points: list[dict[str, Any]] = []
    for conv in load_locomo(data, conversations):
        for kind in inputs:
            started = time.perf_counter()
            base = prepare_turns(conv, work) if kind == "turns" else prepare_memories(conv, work, data)
            before = score_state(base.home, conv, encode, kind == "turns")
            print(f"  {conv.sample_id}/{kind}: {base.tokens_before} tokens, before scored "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)  # fmt: skip
            for threshold in thresholds:
                for linkage in linkages:
                    t0 = time.perf_counter()
                    home, report = consolidate(base, threshold, linkage)
                    after = score_state(home, conv, encode, kind == "turns")
                    points.append({
                        "input": kind, "conversation": conv.sample_id, "threshold": threshold, "linkage": linkage,
                        "tokens_before": base.tokens_before, "tokens_after": active_tokens(home),
                        "clusters_compressed": report["clusters_compressed"], "before": before, "after": after,
                    })  # fmt: skip
                    shutil.rmtree(home, ignore_errors=True)
                    if save is not None:  # after every point: a run cut short still leaves what it measured
                        save.write_text(json.dumps(points))
                    cut = reduction_pct(base.tokens_before, points[-1]["tokens_after"])
                    print(f"    {threshold:.2f} {linkage}: {cut:.1f} % fewer tokens "
                          f"({time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip
            shutil.rmtree(base.home.parent, ignore_errors=True)
    return points


def _cached_encoder(encode: Callable[..., Any]) -> Callable[..., Any]:
    """Texts repeat across the grid's stores: encode each once."""
    memo: dict[str, np.ndarray] = {}

    def run(texts: Sequence[str], *args: Any, **kwargs: Any) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in memo]
        if todo:
            for t, v in zip(todo, encode(todo, *args, **kwargs), strict=True):
                memo[t] = v
        return np.stack([memo[t] for t in texts]) if texts else np.zeros((0, 384), dtype=np.float32)

    return run


def curve_rows(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    scopes = {"1-4": HEADLINE_CATEGORIES, "5": (ADVERSARIAL_CATEGORY,)}
    keys = sorted({(p["input"], p["threshold"], p["linkage"]) for p in points})
    for kind, threshold, linkage in keys:
        group = [p for p in points if (p["input"], p["threshold"], p["linkage"]) == (kind, threshold, linkage)]
        for conv in [*sorted({p["conversation"] for p in group}), "all"]:
            sel = group if conv == "all" else [p for p in group if p["conversation"] == conv]
            tb, ta = sum(p["tokens_before"] for p in sel), sum(p["tokens_after"] for p in sel)
            for scope, cats in scopes.items():
                before = summarise([r for p in sel for r in p["before"]], cats)
                after = summarise([r for p in sel for r in p["after"]], cats)
                for (method, budget), b in before.items():
                    a = after[(method, budget)]
                    out.append({
                        "input": kind, "conversation": conv, "threshold": threshold, "linkage": linkage,
                        "categories": scope, "method": method, "budget": budget,
                        "tokens_before": tb, "tokens_after": ta, "reduction_pct": reduction_pct(tb, ta),
                        "support_before": b["support"], "support_after": a["support"],
                        "support_ratio": (a["support"] / b["support"]) if a["support"] is not None and b["support"]
                        else None,
                        "recall_before": b["recall"], "recall_after": a["recall"],
                        "tokens_used_before": b["tokens"], "tokens_used_after": a["tokens"], "questions": b["n"],
                    })  # fmt: skip
    return out


def choose(rows: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, str]:
    """benchmarks/locomo_rule.md applied to curve rows: the shipped point and why (None: keep 0.82 single)."""

    def ratio(kind: str, conv: str, t: float, link: str) -> float | None:
        for r in rows:
            if (r["input"], r["conversation"], float(r["threshold"]), r["linkage"], r["categories"], r["method"],
                    int(r["budget"])) == (kind, conv, t, link, "1-4", "context", RULE_BUDGET):  # fmt: skip
                return None if r["support_ratio"] in (None, "") else float(r["support_ratio"])
        return None

    pooled = [r for r in rows if r["input"] == "turns" and r["conversation"] == "all" and r["categories"] == "1-4"
              and r["method"] == "context" and int(r["budget"]) == RULE_BUDGET]  # fmt: skip
    convs = sorted({r["conversation"] for r in rows if r["conversation"] != "all"})
    qualified = []
    for r in pooled:
        t, link = float(r["threshold"]), r["linkage"]
        turns = ratio("turns", "all", t, link)
        worst = min((x for c in convs if (x := ratio("turns", c, t, link)) is not None), default=None)
        mems = ratio("memories", "all", t, link)
        if turns is not None and turns >= RULE_RATIO and worst is not None and worst >= RULE_WORST and (
            mems is None or mems >= RULE_RATIO
        ):
            qualified.append((float(r["reduction_pct"]), t, link, turns, worst, mems))
    if not qualified:
        return None, "no point qualifies: MiniLM keeps the seed's 0.82, single linkage"
    best = max(q[0] for q in qualified)
    tied = [q for q in qualified if q[0] >= best - RULE_TIE_PCT]
    tied.sort(key=lambda q: (-q[1], LINKAGE_PREFERENCE.index(q[2])))
    red, t, link, turns, worst, mems = tied[0]
    why = (f"threshold {t:.2f}, {link} linkage: {red:.1f} % fewer active tokens with context support at "
           f"{RULE_BUDGET} tokens ×{turns:.3f} pooled (worst conversation ×{worst:.3f}; extracted memories "
           f"×{mems if mems is not None else float('nan'):.3f})")  # fmt: skip
    return {"threshold": t, "linkage": link, "reduction_pct": red}, why


def read_csv(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def plot(rows: list[dict[str, Any]], path: Path) -> Path | None:
    """One panel per budget: support ratio of `context` vs reduction, a line per linkage (turns, pooled); None
    without matplotlib."""
    plt = common.pyplot()
    if plt is None:
        return None
    fig, axes = plt.subplots(1, len(BUDGETS), figsize=(4.2 * len(BUDGETS), 4), sharey=True)
    for ax, budget in zip(axes, BUDGETS, strict=True):
        for link in LINKAGES:
            sel = sorted((r for r in rows if r["input"] == "turns" and r["conversation"] == "all"
                          and r["categories"] == "1-4" and r["method"] == "context" and int(r["budget"]) == budget
                          and r["linkage"] == link and r["support_ratio"] not in (None, "")),
                         key=lambda r: float(r["threshold"]))  # fmt: skip
            if sel:
                ax.plot([float(r["reduction_pct"]) for r in sel], [float(r["support_ratio"]) for r in sel], "o-",
                        label=link)  # fmt: skip
        ax.axhline(RULE_RATIO, color="grey", lw=0.8, ls="--")
        ax.axvline(30, color="grey", lw=0.8, ls="--")
        ax.set_title(f"context at {budget} tokens")
        ax.set_xlabel("active-token reduction (%)")
    axes[0].set_ylabel("answer support after ÷ before (cat. 1–4)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def results_section(
    rows: list[dict[str, Any]], chosen: tuple[dict[str, Any] | None, str], args: Any, secs: float
) -> str:
    lines = [f"Data: `{args.data.name}`; embedder MiniLM; offline distiller; grid thresholds "
             f"{', '.join(f'{t:.2f}' for t in args.thresholds)} × {', '.join(args.linkages)}; inputs "
             f"{', '.join(args.inputs)}; total {secs:.0f} s. Curve: `{Path(args.out).name}` (`--out`).", "",
             f"Rule (`benchmarks/locomo_rule.md`): {chosen[1]}.", "",
             "Pooled, categories 1–4, before the night — answer support (evidence recall) by read path and budget:",
             "", "| input | method | " + " | ".join(f"{b}" for b in BUDGETS) + " |",
             "|---|---|" + "---|" * len(BUDGETS)]  # fmt: skip
    first = {(r["input"], r["method"], int(r["budget"])): r for r in rows
             if r["conversation"] == "all" and r["categories"] == "1-4"}  # fmt: skip
    for kind in args.inputs:
        for method in METHODS:
            cells = []
            for b in BUDGETS:
                r = first.get((kind, method, b))
                s = "" if r is None or r["support_before"] in (None, "") else f"{float(r['support_before']):.3f}"
                rc = "" if r is None or r["recall_before"] in (None, "") else f" ({float(r['recall_before']):.3f})"
                cells.append(s + rc)
            lines.append(f"| {kind} | {method} | " + " | ".join(cells) + " |")
    lines += ["", "After ÷ before, `context` at 2,000 tokens, pooled (turns input):", "",
              "| threshold | linkage | reduction % | support ratio | support after | context − cosine (after) |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    index = {(r["input"], r["conversation"], float(r["threshold"]), r["linkage"], r["categories"], r["method"],
              int(r["budget"])): r for r in rows}  # fmt: skip
    for t in args.thresholds:
        for link in args.linkages:
            c = index.get(("turns", "all", t, link, "1-4", "context", 2000))
            cos = index.get(("turns", "all", t, link, "1-4", "cosine", 2000))
            if c is None or cos is None:
                continue
            gap = (float(c["support_after"]) - float(cos["support_after"])) * 100
            lines.append(f"| {t:.2f} | {link} | {float(c['reduction_pct']):.1f} | "
                         f"{float(c['support_ratio']):.3f} | {float(c['support_after']):.3f} | {gap:+.1f} pts |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--journal"]:
        raise SystemExit(_journal_child(Path(argv[1]), argv[2]))
    p = argparse.ArgumentParser(prog="python -m benchmarks locomo-e2e", description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=default_locomo_path(), help="any LoCoMo-format JSON file")
    p.add_argument("--conversations", help="comma-separated sample ids (default: all)")
    p.add_argument("--thresholds", default=",".join(f"{t:.2f}" for t in THRESHOLDS))
    p.add_argument("--linkages", default=",".join(LINKAGES))
    p.add_argument("--inputs", default=",".join(INPUTS))
    p.add_argument("--quick", action="store_true", help="one conversation, two thresholds, single+complete")
    p.add_argument("--out", type=Path, default=RESULTS_DIR / "curve.csv")
    p.add_argument("--points", help="comma-separated .points.json files of earlier runs: post-process only")
    p.add_argument("--choose", type=Path, help="apply benchmarks/locomo_rule.md to this curve CSV and stop")
    args = p.parse_args(argv)
    if args.choose:
        print(choose(read_csv(args.choose))[1])
        return
    args.thresholds = [float(t) for t in args.thresholds.split(",")]
    args.linkages = [s.strip() for s in args.linkages.split(",")]
    args.inputs = [s.strip() for s in args.inputs.split(",")]
    conversations = args.conversations.split(",") if args.conversations else None
    if args.quick:
        conversations, args.thresholds, args.linkages = (
            QUICK["conversations"], list(QUICK["thresholds"]), list(QUICK["linkages"]))  # fmt: skip
    env, load_before = common.machine(), common.load_average()
    started = time.perf_counter()
    if args.points:  # post-processing of earlier runs' raw points (e.g. the two inputs run side by side)
        points = [p for path in args.points.split(",") for p in json.loads(Path(path).read_text())]
    else:
        with tempfile.TemporaryDirectory(prefix="locomo-e2e-") as tmp:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            save = args.out.with_suffix(".points.json")
            points = run(args.data, conversations, args.thresholds, args.linkages, args.inputs, Path(tmp), save)
    rows = curve_rows(points)
    args.inputs = sorted({p["input"] for p in points})
    write_csv(rows, args.out)
    chosen = choose(rows)
    print(chosen[1])
    section = results_section(rows, chosen, args, time.perf_counter() - started)
    common.append_results("locomo-e2e: LoCoMo through the product's read path", section, env, load_before)
    png = plot(rows, args.out.with_suffix(".png"))  # last: the results are kept without matplotlib
    drawn = f" and {png}" if png else ""
    print(f"written {args.out}{drawn} at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


if __name__ == "__main__":
    main(sys.argv[1:])
