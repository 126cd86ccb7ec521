"""The whole `nightly_consolidation` job, offline distiller, on generated stores of 10k and 100k memories
with embeddings present; per-asset seconds from Dagster's step events (STEP_START → STEP_SUCCESS).

The store: memories whose text follows their vector's cluster (members of a generated cluster share a
topic and a causal sentence, with their own details), importance 0.5–2.4 with a few critical, pinned and
fresh ones, created over the 60 days before the run; vectors from `benchmarks/data.py`, stored under the
configured model's name, so nothing needs embedding but the night's summaries (real MiniLM). Night 1 has
no stored threshold graph (full build); night 2 adds 1 % new memories (incremental build).
"""

from __future__ import annotations

import argparse
import shutil
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common
from benchmarks.data import clustered_with_labels

AS_OF = datetime(2026, 11, 1, 3, 30)
WORDS = (
    "deploy cache queue index replica token budget latency retry backoff schema migration shard lease "
    "snapshot webhook cron parser tokenizer embedding cluster summary archive ledger quota timeout socket "
    "broker invoice report backlog sprint review incident outage rollback canary feature flag metric alert "
    "dashboard trace sampler profile memory disk network region failover vendor contract pricing customer"
).split()
OUTCOMES = ("failed", "slowed down", "recovered", "doubled", "was throttled", "drifted", "stalled", "passed")
CAUSES = ("because the", "after the", "when the", "since the")


def _topic_text(rng: np.random.Generator, label: int, detail: int) -> str:
    t = np.random.default_rng(label)
    a, b, c = (WORDS[i] for i in t.choice(len(WORDS), size=3, replace=False))
    outcome, cause = OUTCOMES[int(t.integers(len(OUTCOMES)))], CAUSES[int(t.integers(len(CAUSES)))]
    extra = " ".join(WORDS[i] for i in rng.choice(len(WORDS), size=4, replace=False))
    return (
        f"The {a} {b} {outcome} {cause} {c} settings changed. "
        f"Observed on run {detail} while checking {extra}. Next time verify the {c} first."
    )


def index_store(home: Path) -> None:
    """The store's search index over its stored vectors (nothing to embed), as the read path leaves it."""
    from memory_pipeline.resources.embedder import MINILM
    from memory_pipeline.search import build_index
    from memory_pipeline.search.live import default_embedder

    encode, _ = default_embedder()
    build_index(home, encode, MINILM)


def build_store(home: Path, n: int, seed: int = 0, new_fraction: float = 0.0) -> int:
    """A store of n memories with embeddings; returns how many it wrote."""
    from memory_pipeline.resources.embedder import MINILM
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store import repository as repo
    from memory_pipeline.store.records import MemoryRecord

    vectors, owners = clustered_with_labels(n, seed=seed)
    rng = np.random.default_rng(seed + 1)
    store = MemoryStore(home / "memory.duckdb")
    store.migrate()
    start = 0 if new_fraction == 0 else _count(store)
    records = []
    for i in range(n):
        age = timedelta(days=float(rng.uniform(1.5, 60)))
        importance = float(rng.uniform(0.5, 2.4))
        r = MemoryRecord(
            id=f"bench-{seed:02d}-{start + i:07d}",
            content=_topic_text(rng, int(owners[i]), start + i),
            importance=3.0 if rng.random() < 0.01 else importance,
            created_at=AS_OF - (timedelta(hours=2) if rng.random() < 0.01 else age),
            categories=[WORDS[int(owners[i]) % len(WORDS)]],
            pinned=bool(rng.random() < 0.005),
        )
        records.append(r)
    with store.transaction() as con:
        for lo in range(0, n, 50_000):
            repo.insert_memories(con, records[lo : lo + 50_000])
        repo.upsert_embeddings(con, MINILM, [r.id for r in records], vectors, AS_OF - timedelta(days=1))
    return n


def _count(store: Any) -> int:
    with store.connect() as con:
        return int(con.execute("SELECT count(*) FROM memories").fetchall()[0][0])


def run_night(home: str, job_name: str = "nightly_consolidation", retention_probes: int = 300) -> dict[str, Any]:
    import dagster as dg

    from memory_pipeline.definitions import defs_with
    from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource

    resources = {
        "store": MemoryStoreResource(home=home),
        "embedder": EmbedderResource(),
        "llm": LLMResource(mode="offline"),
        # floor 0: a night the probes would stop does the same work as one without them (the cost is compared)
        "engine": EngineConfig(as_of=AS_OF.isoformat(), retention_probes=retention_probes, retention_floor=0.0),
    }
    instance = dg.DagsterInstance.ephemeral()
    job = defs_with(resources).resolve_job_def(job_name)
    t = time.perf_counter()
    result = job.execute_in_process(instance=instance, raise_on_error=False)
    total = time.perf_counter() - t
    started: dict[str, float] = {}
    steps: dict[str, float] = {}
    for entry in instance.all_logs(result.run_id):
        ev = entry.dagster_event
        if ev is None or not ev.step_key:
            continue
        if ev.event_type_value == "STEP_START":
            started[ev.step_key] = entry.timestamp
        elif ev.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE") and ev.step_key in started:
            steps[ev.step_key] = entry.timestamp - started[ev.step_key]
    clusters = result.output_for_node("clusters") if result.success else []
    report = {}
    if result.success:
        import json

        path = Path(home) / "reports" / f"compression-{result.run_id}.json"
        if path.exists():
            report = json.loads(path.read_text())
    meta = {}
    for entry in instance.all_logs(result.run_id):
        ev = entry.dagster_event
        if ev is not None and ev.is_step_materialization and ev.step_key == "clusters":
            md = ev.step_materialization_data.materialization.metadata
            meta = {k: getattr(md[k], "value", md[k]) for k in ("graph_build", "graph_rows_computed", "graph_edges")}
        if ev is not None and ev.is_step_materialization and ev.step_key == "distillations":
            md = ev.step_materialization_data.materialization.metadata
            if "verifier_seconds" in md:
                meta["verifier_s"] = float(md["verifier_seconds"].value)  # type: ignore[arg-type]
    return {
        "success": result.success,
        "total_s": total,
        "steps": steps,
        "clusters": len(clusters),
        "compressed": report.get("clusters_compressed"),
        "eligible": report.get("memories_scanned"),
        "graph": meta,
        "verdict": report.get("verdict"),
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks nightly")
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",") if x], default=[10_000, 100_000])
    p.add_argument(
        "--second-night",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run a second night with 1 %% new memories (incremental graph)",
    )
    p.add_argument(
        "--dry-sizes",
        type=lambda s: [int(x) for x in s.split(",") if x],
        default=[],
        help="sizes run as the dry-run job only (eligibility + clustering, no writes)",
    )
    p.add_argument(
        "--retention-probes",
        type=lambda s: [int(x) for x in s.split(",") if x],
        default=[300],
        help="knowledge-retention probes per night (0: off); several, e.g. 0,300, run each night side by side",
    )
    p.add_argument(
        "--indexed",
        action="store_true",
        help="build the store's search index before the night (not timed), as a workspace that is read has one: "
        "the retention check then updates a copy of it instead of building one",
    )
    args = p.parse_args(argv)
    env, load_before = common.machine(), common.load_average()
    from memory_pipeline.defs.abstraction.schedules import PIPELINE

    order = tuple(a.key.to_user_string() for a in PIPELINE)
    rows = []
    jobs = [(n, "nightly_consolidation", k) for n in args.sizes for k in args.retention_probes]
    jobs += [(n, "consolidation_dry_run", 0) for n in args.dry_sizes]
    for n, job_name, probes in jobs:
        home = common.OUT / f"nightly-{n}"
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        t = time.perf_counter()
        build_store(home, n)
        if args.indexed:
            index_store(home)
        build_s = time.perf_counter() - t
        first = f"1 (full graph), {probes} probes" if job_name == "nightly_consolidation" else "1, dry run only"
        nights = [
            (first, common.in_fresh_process("benchmarks.nightly:run_night", None, home=str(home), job_name=job_name,
                                            retention_probes=probes))  # fmt: skip
        ]
        if args.second_night and job_name == "nightly_consolidation":
            build_store(home, max(1, n // 100), seed=1, new_fraction=0.01)
            nights.append(
                (f"2 (+1 % new), {probes} probes",
                 common.in_fresh_process("benchmarks.nightly:run_night", None, home=str(home),
                                         retention_probes=probes))  # fmt: skip
            )
        for label, r in nights:
            if not r.get("ok"):
                rows.append((f"{n:,}", label, f"failed: {r.get('error')}") + ("",) * (len(order) + 5))
                continue
            steps = r["steps"]
            checks = sum(v for k, v in steps.items() if k not in order)
            # the grade: the verifier inside the distiller (its sentence embeddings included) + the blocking check
            grade_s = r["graph"].get("verifier_s", 0.0) + sum(v for k, v in steps.items() if "abstraction_grade" in k)
            rows.append(
                (
                    f"{n:,}",
                    label,
                    common.fmt_s(r["total_s"]),
                    *(common.fmt_s(steps.get(k)) for k in order),
                    common.fmt_s(checks),
                    f"{common.fmt_s(grade_s)} ({100 * grade_s / r['total_s']:.1f} %)",
                    f"{r['eligible']:,}" if r.get("eligible") is not None else "—",
                    f"{r['clusters']:,} / {r['compressed'] if r['compressed'] is not None else '—'}",
                    f"{r['graph'].get('graph_build')} ({r['graph'].get('graph_rows_computed')} rows)",
                    f"{r['verdict'] or '—'}{'' if r['success'] else ' (run failed)'}",
                    common.load_average().split(" / ")[0],
                )
            )
            print(rows[-1], flush=True)
        print(f"store of {n:,} built in {build_s:.0f}s", flush=True)
    header = (
        "memories",
        "night",
        "job s",
        *order,
        "asset checks s",
        "grade s (share of job)",
        "eligible",
        "clusters / compressed",
        "graph build",
        "verdict",
        "load (1 min)",
    )
    body = (
        "### nightly_consolidation end to end (offline distiller, MiniLM for the summaries)\n\n"
        + common.table(header, rows)
        + "\n\nSeconds per asset from the run's STEP_START → STEP_SUCCESS events (in-process executor, one "
        "step at a time); `job s` is the wall time of execute_in_process. `grade s`: the verifier's time inside "
        "the distiller (judging each distillation, embedding the sentences whose verdict the words leave open "
        "that the offline distiller's own paraphrase checks did not embed first; the distillations' "
        "`verifier_seconds`) plus the blocking grade check's step. Stores: see benchmarks/nightly.py"
        + ("; each indexed for search before its night (not timed)." if args.indexed else ".")
    )
    common.append_results("nightly", body, env, load_before)
