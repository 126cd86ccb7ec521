"""What a consolidation pass costs in knowledge, on LoCoMo conversations.

Per conversation: its turns are written as a JSONL file and brought in by the project's importer
(`memory_pipeline.store.importers.import_jsonl`), embedded by the real `memory_embeddings` asset, and the
embedded store is copied once per similarity threshold; each copy gets the real `nightly_consolidation` job
(offline distiller unless `--llm` says otherwise) with the clock two days after the last session. Each
conversation is its own store: one agent, one memory. Before and after, every question is embedded with the
same embedder and the top-k active memories (summaries included — the job embeds them itself) are scored
with `benchmarks.locomo` (evidence recall@k, answer support@k). Outputs: a curve CSV (one row per
threshold, all conversations pooled), a detail CSV (threshold × conversation × category), a PNG, and a
section in benchmarks/results/runs/<date>.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common
from memory_pipeline.evaluation.locomo import (
    ADVERSARIAL_CATEGORY,
    HEADLINE_CATEGORIES,
    Conversation,
    MemorySet,
    load_locomo,
    mean_score,
    score_questions,
    write_jsonl,
)
from memory_pipeline.evaluation.locomo_transcripts import default_locomo_path

DEFAULT_DATA = default_locomo_path()
RESULTS_DIR = common.HERE / "results"
THRESHOLDS = tuple(round(0.70 + 0.02 * i, 2) for i in range(11))  # 0.70 … 0.90
DEFAULT_THRESHOLD = 0.82
SMOKE_THRESHOLDS = (0.82,)
KS = (5, 10)
TARGET_RATIO = 0.95
TARGET_REDUCTION = 30.0
SCOPES: dict[str, tuple[int, ...]] = {
    "1-4": HEADLINE_CATEGORIES,
    "1": (1,),
    "2": (2,),
    "3": (3,),
    "4": (4,),
    "5": (ADVERSARIAL_CATEGORY,),
}
METRICS = tuple(f"{m}@{k}" for m in ("recall", "support") for k in KS)


def clock_for(conv: Conversation) -> datetime:
    """Two days after the last session, so the 24-hour freshness rule excludes nothing."""
    return conv.last_session_at + timedelta(days=2)


def _resources(home: Path, as_of: datetime, threshold: float, embedder: str, llm: str) -> dict[str, Any]:
    from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
    from memory_pipeline.resources.notifier import NotifierResource

    return {
        "store": MemoryStoreResource(home=str(home)),
        "embedder": EmbedderResource(model=embedder),
        "llm": LLMResource(mode=llm),
        "engine": EngineConfig(as_of=as_of.isoformat(), similarity_threshold=threshold),
        "notifier": NotifierResource(alerts_path=str(home / "reports" / "alerts.jsonl")),
    }


def active_memories(home: Path, model: str) -> MemorySet:
    """Active memories with their vectors for `model`, and each summary's lineage."""
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store import repository as repo

    with MemoryStore(home / "memory.duckdb").connect() as con:
        rows = con.execute(
            "SELECT id, content, compressed_from, created_at FROM memories WHERE lifecycle = 'active' ORDER BY id"
        ).fetchall()
        ids = [r[0] for r in rows]
        vectors = repo.vectors_for(con, model, ids)
    lineage = {}
    for mid, _, lin, _ in rows:
        if lin:
            lineage[mid] = list((json.loads(lin) if isinstance(lin, str) else lin).get("source_ids", []))
    return MemorySet(ids, [r[1] for r in rows], vectors, lineage, [r[3] for r in rows])


def active_tokens(home: Path) -> int:
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store import repository as repo

    with MemoryStore(home / "memory.duckdb").connect() as con:
        return repo.active_tokens(con)


@dataclass
class Prepared:
    conv: Conversation
    base: Path
    as_of: datetime
    queries: np.ndarray
    before: list[dict[str, Any]]
    tokens_before: int
    seconds: float


def prepare(conv: Conversation, work: Path, embedder: str, llm: str) -> Prepared:
    """Import the turns through the project's importer, embed them with the real asset, score 'before'."""
    import dagster as dg

    from memory_pipeline.defs.abstraction.cluster_finder import memory_embeddings
    from memory_pipeline.resources import EmbedderResource
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_jsonl

    started = time.perf_counter()
    base = work / conv.sample_id / "base"
    shutil.rmtree(base.parent, ignore_errors=True)
    base.mkdir(parents=True)
    jsonl = write_jsonl(conv, base.parent / "turns.jsonl")
    import_jsonl(MemoryStore(base / "memory.duckdb"), jsonl)
    as_of = clock_for(conv)
    result = dg.materialize(
        [memory_embeddings], resources=_resources(base, as_of, DEFAULT_THRESHOLD, embedder, llm), raise_on_error=True
    )
    assert result.success
    queries = EmbedderResource(model=embedder).encode([q.question for q in conv.questions])
    before = score_questions(conv.questions, queries, active_memories(base, embedder), KS)
    return Prepared(conv, base, as_of, queries, before, active_tokens(base), time.perf_counter() - started)


def consolidate(prep: Prepared, threshold: float, embedder: str, llm: str, keep: bool = False) -> dict[str, Any]:
    """A copy of the embedded store, one real nightly_consolidation run on it, and the 'after' scores."""
    import dagster as dg

    from memory_pipeline.definitions import defs_with

    home = prep.base.parent / f"t{threshold:.2f}"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(prep.base, home)
    started = time.perf_counter()
    defs = defs_with(_resources(home, prep.as_of, threshold, embedder, llm))
    result = defs.resolve_job_def("nightly_consolidation").execute_in_process(
        instance=dg.DagsterInstance.ephemeral(), raise_on_error=False
    )
    seconds = time.perf_counter() - started
    if not result.success:
        failed = [e.step_key for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
        raise RuntimeError(f"{prep.conv.sample_id} at threshold {threshold}: nightly_consolidation failed in {failed}")
    report = json.loads((home / "reports" / f"compression-{result.run_id}.json").read_text())
    after = score_questions(prep.conv.questions, prep.queries, active_memories(home, embedder), KS)
    tokens_after = active_tokens(home)
    facts_total, facts_kept = summary_facts(home)
    if not keep:
        shutil.rmtree(home, ignore_errors=True)
    return {
        "conversation": prep.conv.sample_id,
        "threshold": threshold,
        "tokens_before": prep.tokens_before,
        "tokens_after": tokens_after,
        "clusters_found": report["clusters_found"],
        "clusters_compressed": report["clusters_compressed"],
        "memories_archived": report["memories_archived"],
        "skip_reasons": report.get("skip_reasons", {}),
        "distiller": report["distiller"],
        "verdict": report["verdict"],
        "job_seconds": seconds,
        "facts_total": facts_total,
        "facts_kept": facts_kept,
        "before": prep.before,
        "after": after,
    }


def summary_facts(home: Path) -> tuple[int, int]:
    """(distinct numbers + named entities of the summaries' members, how many the summaries keep)."""
    from benchmarks.distill import clusters
    from memory_pipeline.statements.facts import check_facts

    total = kept = 0
    with_content = _summary_texts(home)
    for c in clusters(home):
        check = check_facts([m[1] for m in c["members"]], with_content.get(c["id"], ""))
        total, kept = total + check.total, kept + check.kept
    return total, kept


def _summary_texts(home: Path) -> dict[str, str]:
    from memory_pipeline.store import MemoryStore

    with MemoryStore(home / "memory.duckdb").connect() as con:
        rows = con.execute("SELECT id, content FROM memories WHERE source LIKE 'abstraction:%'").fetchall()
    return {r[0]: r[1] for r in rows}


def reduction_pct(before: int, after: int) -> float:
    return 100.0 * (before - after) / before if before else 0.0


def _scores(rows_before: list[dict[str, Any]], rows_after: list[dict[str, Any]], cats: Sequence[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for metric in METRICS:
        b, n = mean_score(rows_before, metric, cats)
        a, _ = mean_score(rows_after, metric, cats)
        out[f"{metric}_before"] = b
        out[f"{metric}_after"] = a
        out[f"{metric}_n"] = n
        out[f"{metric}_ratio"] = (a / b) if a is not None and b else None
    return out


def aggregate(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(curve: one row per threshold, pooled over conversations; detail: threshold × conversation × scope)."""
    curve, detail = [], []
    for threshold in sorted({r["threshold"] for r in runs}):
        group = [r for r in runs if r["threshold"] == threshold]
        pooled_before = [q for r in group for q in r["before"]]
        pooled_after = [q for r in group for q in r["after"]]
        tb, ta = sum(r["tokens_before"] for r in group), sum(r["tokens_after"] for r in group)
        row: dict[str, Any] = {
            "threshold": threshold,
            "conversations": len(group),
            "tokens_before": tb,
            "tokens_after": ta,
            "reduction_pct": reduction_pct(tb, ta),
            "clusters_found": sum(r["clusters_found"] for r in group),
            "clusters_compressed": sum(r["clusters_compressed"] for r in group),
            "memories_archived": sum(r["memories_archived"] for r in group),
            "distiller": ",".join(sorted({r["distiller"] for r in group})),
            "facts_total": sum(r.get("facts_total", 0) for r in group),
            "fact_preservation": (
                sum(r.get("facts_kept", 0) for r in group) / max(1, sum(r.get("facts_total", 0) for r in group))
            ),
        }
        for scope in ("1-4", "5"):
            for key, value in _scores(pooled_before, pooled_after, SCOPES[scope]).items():
                row[f"c{scope}_{key}"] = value
        curve.append(row)
        for r in group:
            for scope, cats in SCOPES.items():
                detail.append(
                    {
                        "threshold": threshold,
                        "conversation": r["conversation"],
                        "categories": scope,
                        "tokens_before": r["tokens_before"],
                        "tokens_after": r["tokens_after"],
                        "reduction_pct": reduction_pct(r["tokens_before"], r["tokens_after"]),
                        "clusters_compressed": r["clusters_compressed"],
                        "memories_archived": r["memories_archived"],
                        "distiller": r["distiller"],
                        **_scores(r["before"], r["after"], cats),
                    }
                )
        for scope, cats in SCOPES.items():
            detail.append(
                {
                    "threshold": threshold,
                    "conversation": "all",
                    "categories": scope,
                    "tokens_before": tb,
                    "tokens_after": ta,
                    "reduction_pct": reduction_pct(tb, ta),
                    "clusters_compressed": row["clusters_compressed"],
                    "memories_archived": row["memories_archived"],
                    "distiller": row["distiller"],
                    **_scores(pooled_before, pooled_after, cats),
                }
            )
    return curve, detail


def _fmt(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else value


def write_csv(rows: list[dict[str, Any]], path: Path) -> Path:
    """Write-then-rename, so an interrupted run never leaves half a committed result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({k: _fmt(v) for k, v in r.items()} for r in rows)
    tmp.replace(path)
    return path


def plot(curve: list[dict[str, Any]], path: Path, title: str) -> Path | None:
    """The curve's two panels; None without matplotlib."""
    plt = common.pyplot()
    if plt is None:
        return None
    xs = [r["reduction_pct"] for r in curve]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    for key, label, style in (
        ("c1-4_support@10", "answer support@10", "o-"),
        ("c1-4_recall@10", "evidence recall@10", "s--"),
        ("c1-4_support@5", "answer support@5", "^:"),
    ):
        ys = [r[f"{key}_ratio"] if r[f"{key}_ratio"] is not None else np.nan for r in curve]
        left.plot(xs, ys, style, label=label)
    for r in curve:
        y = r["c1-4_support@10_ratio"]
        if y is not None:
            left.annotate(f"{r['threshold']:.2f}", (r["reduction_pct"], y), fontsize=7, xytext=(3, 4),
                          textcoords="offset points")  # fmt: skip
    left.axhline(TARGET_RATIO, color="grey", lw=0.8, ls="--")
    left.axvline(TARGET_REDUCTION, color="grey", lw=0.8, ls="--")
    left.set_xlabel("active-token reduction (%)")
    left.set_ylabel("after ÷ before (categories 1–4)")
    left.set_title("retention vs reduction (labels: similarity threshold)")
    left.legend(fontsize=8)
    ts = [r["threshold"] for r in curve]
    right.plot(ts, xs, "o-", color="tab:red", label="token reduction %")
    right.set_xlabel("similarity threshold")
    right.set_ylabel("active-token reduction (%)", color="tab:red")
    right.axhline(TARGET_REDUCTION, color="grey", lw=0.8, ls="--")
    twin = right.twinx()
    twin.plot(ts, [r["c1-4_support@10_after"] for r in curve], "o-", color="tab:blue", label="support@10 after")
    twin.plot(ts, [r["c1-4_support@10_before"] for r in curve], ":", color="tab:blue", label="support@10 before")
    twin.set_ylabel("answer support@10 (categories 1–4)", color="tab:blue")
    twin.legend(fontsize=8, loc="lower right")
    right.set_title("by threshold")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    tmp.replace(path)
    return path


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


def _ratio(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def crossing(curve: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The highest threshold whose reduction reaches the target (lower thresholds merge more)."""
    reached = [r for r in curve if r["reduction_pct"] >= TARGET_REDUCTION]
    return max(reached, key=lambda r: r["threshold"]) if reached else None


def summary_markdown(curve: list[dict[str, Any]], detail: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        "### LoCoMo retention: what the nightly consolidation keeps (see benchmarks/locomo_retention.py)",
        "",
        f"Data: `{meta['data']}` — conversations {', '.join(meta['conversations'])} ({meta['turns']:,} turns, "
        f"{meta['questions']:,} questions); embedder `{meta['embedder']}`; distiller `{meta['distiller']}`; "
        f"clock = last session + 2 days; total {meta['seconds']:.0f} s (embedding and scoring 'before' "
        f"{meta['prepare_seconds']:.0f} s). Curve: `{meta['curve_csv']}`, detail: `{meta['detail_csv']}`, "
        f"plot: `{meta['png']}`.",
        "",
        "Recall = evidence recall@k (an evidence turn, or an active summary whose lineage holds one, among the "
        "top k); support = answer support@k (≥ ⌈2/3·n⌉ of the gold answer's n normalised content words in the "
        "retrieved text; lineage never counts). Percentages; ratio = after ÷ before. Facts kept = share of the "
        "summaries' members' distinct numbers and named entities present in the summary, verbatim or inside a "
        "stated range (`memory_pipeline.statements.facts`).",
        "",
    ]
    header = ["threshold", "reduction %", "clusters", "archived"]
    header += [f"{m} {w}" for m in ("support@10", "recall@10", "support@5") for w in ("before", "after", "ratio")]
    header += ["cat 5 support@10 ratio", "facts kept (of)"]
    body = []
    for r in curve:
        cells = [f"{r['threshold']:.2f}", f"{r['reduction_pct']:.1f}", r["clusters_compressed"], r["memories_archived"]]
        for m in ("support@10", "recall@10", "support@5"):
            cells += [_pct(r[f"c1-4_{m}_before"]), _pct(r[f"c1-4_{m}_after"]), _ratio(r[f"c1-4_{m}_ratio"])]
        cells.append(_ratio(r["c5_support@10_ratio"]))
        cells.append(f"{r.get('fact_preservation', 0.0):.3f} ({r.get('facts_total', 0)})")
        body.append(cells)
    lines += ["Categories 1–4, all conversations pooled:", "", common.table(header, body), ""]
    default = [d for d in detail if d["threshold"] == DEFAULT_THRESHOLD and d["conversation"] == "all"]
    if default:
        header = ["categories", "questions (support / recall)"]
        header += [f"{m} {w}" for m in METRICS for w in ("before", "after")]
        body = []
        for d in default:
            cells = [d["categories"], f"{d['support@10_n']} / {d['recall@10_n']}"]
            for m in METRICS:
                cells += [_pct(d[f"{m}_before"]), _pct(d[f"{m}_after"])]
            body.append(cells)
        lines += [f"At the default threshold {DEFAULT_THRESHOLD} by category (5 = adversarial, reported apart):", ""]
        lines += [common.table(header, body), ""]
        head = next(r for r in curve if r["threshold"] == DEFAULT_THRESHOLD)
        ratio = head["c1-4_support@10_ratio"]
        met = ratio is not None and ratio >= TARGET_RATIO
        lines.append(
            f"Target (categories 1–4, threshold {DEFAULT_THRESHOLD}): support@10 after ÷ before = {_ratio(ratio)} "
            f"(≥ {TARGET_RATIO}: {'met' if met else 'missed'}), at {head['reduction_pct']:.1f} % fewer active tokens."
        )
    cross = crossing(curve)
    if cross is not None:
        lines.append(
            f"Reduction reaches {TARGET_REDUCTION:.0f} % at threshold {cross['threshold']:.2f} "
            f"({cross['reduction_pct']:.1f} %), where support@10 after ÷ before = "
            f"{_ratio(cross['c1-4_support@10_ratio'])} and recall@10 after ÷ before = "
            f"{_ratio(cross['c1-4_recall@10_ratio'])}."
        )
    else:
        top = max((r["reduction_pct"] for r in curve), default=0.0)
        lines.append(f"Reduction does not reach {TARGET_REDUCTION:.0f} % in this sweep (at most {top:.1f} %).")
    return "\n".join(lines) + "\n"


def run(
    data: Path,
    conversations: Sequence[str] | None,
    thresholds: Sequence[float],
    work: Path,
    embedder: str,
    llm: str,
    log: Any = print,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    convs = load_locomo(data, conversations)
    started = time.perf_counter()
    runs: list[dict[str, Any]] = []
    prepare_s = 0.0
    for conv in convs:
        prep = prepare(conv, work, embedder, llm)
        prepare_s += prep.seconds
        log(
            f"{conv.sample_id}: {len(conv.turns)} turns, {len(conv.questions)} questions, "
            f"embedded in {prep.seconds:.0f}s"
        )
        for t in thresholds:
            r = consolidate(prep, t, embedder, llm)
            runs.append(r)
            log(
                f"  threshold {t:.2f}: {r['clusters_compressed']} clusters, {r['memories_archived']} archived, "
                f"{reduction_pct(r['tokens_before'], r['tokens_after']):.1f}% fewer tokens ({r['job_seconds']:.0f}s)"
            )
        shutil.rmtree(prep.base.parent, ignore_errors=True)
    meta = {
        "data": str(data),
        "conversations": [c.sample_id for c in convs],
        "turns": sum(len(c.turns) for c in convs),
        "questions": sum(len(c.questions) for c in convs),
        "unknown_evidence": sum(len(c.unknown_evidence) for c in convs),
        "embedder": embedder,
        "distiller": ",".join(sorted({r["distiller"] for r in runs})),
        "seconds": time.perf_counter() - started,
        "prepare_seconds": prepare_s,
    }
    return runs, meta


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from memory_pipeline.resources.embedder import MINILM

    p = argparse.ArgumentParser(prog="python -m benchmarks locomo-retention", description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo-format JSON file (default: %(default)s)")
    p.add_argument("--conversations", type=lambda s: [x for x in s.split(",") if x], default=None,
                   help="comma-separated sample ids (default: all; --smoke: the first)")  # fmt: skip
    p.add_argument("--thresholds", type=lambda s: [float(x) for x in s.split(",") if x], default=None,
                   help="comma-separated thresholds (default: 0.70 … 0.90 step 0.02; --smoke: 0.82)")  # fmt: skip
    p.add_argument("--smoke", action="store_true", help="one conversation, threshold 0.82; results to benchmarks/out")
    p.add_argument("--out", type=Path, default=None, help="where the CSVs and PNG go (default: benchmarks/results)")
    p.add_argument("--work", type=Path, default=common.OUT / "locomo", help="scratch stores (deleted as it goes)")
    p.add_argument("--record", action=argparse.BooleanOptionalAction, default=None,
                   help="append the summary to the day's run file (default: yes, except with --smoke)")  # fmt: skip
    p.add_argument("--embedder", default=MINILM, help="embedder model (default: %(default)s)")
    p.add_argument("--llm", default="offline", help="LLMResource mode (default: offline)")
    args = p.parse_args(argv)
    thresholds = args.thresholds or (list(SMOKE_THRESHOLDS) if args.smoke else list(THRESHOLDS))
    conversations = args.conversations
    if args.smoke and not conversations:
        conversations = [load_locomo(args.data)[0].sample_id]
    elif args.smoke:
        conversations = conversations[:1]
    out = args.out or (common.OUT / "locomo-smoke" if args.smoke else RESULTS_DIR)
    record = (not args.smoke) if args.record is None else args.record
    env, load_before = common.machine(), common.load_average()
    runs, meta = run(args.data, conversations, thresholds, args.work, args.embedder, args.llm)
    curve, detail = aggregate(runs)
    meta["curve_csv"] = str(write_csv(curve, out / "locomo_retention_curve.csv").relative_to(out.parent))
    meta["detail_csv"] = str(write_csv(detail, out / "locomo_retention_detail.csv").relative_to(out.parent))
    title = f"LoCoMo retention — {', '.join(meta['conversations'])}; distiller {meta['distiller']}"
    png = out / "locomo_retention.png"
    meta["png"] = str(png.relative_to(out.parent))
    text = summary_markdown(curve, detail, meta)
    if record:
        common.append_results("locomo-retention", text, env, load_before)
    else:
        print(text)
    if plot(curve, png, title) is None:  # last: the results are kept without matplotlib
        meta["png"] = ""
    return {"curve": curve, "detail": detail, "meta": meta, "out": out}


if __name__ == "__main__":
    main()
