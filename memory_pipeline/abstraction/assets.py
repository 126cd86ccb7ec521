"""The abstraction engine (seed 000) as software-defined assets. Each asset is one box of the seed's diagram."""

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pandas as pd

from memory_pipeline.abstraction import clustering, threshold_graph
from memory_pipeline.abstraction.atoms import AtomIndex, ExistingAtom
from memory_pipeline.abstraction.clustering import MemoryCluster
from memory_pipeline.abstraction.distill import Distillation, DistillationRejected, Member, validate_abstraction
from memory_pipeline.abstraction.report import (
    CompressionError,
    CompressionRunReport,
    decide_verdict,
    markdown_table,
    reduction_pct,
)
from memory_pipeline.faults import crash_point
from memory_pipeline.graph import outbox as graph_outbox
from memory_pipeline.graph import plan as graph_plan
from memory_pipeline.graph import queries as graph_queries
from memory_pipeline.graph.external_index import parse_index_names
from memory_pipeline.operator.metadata import OWNERS, cluster_size_metadata, outcome_metadata
from memory_pipeline.operator.progress import ThrottledProgress, encode_in_steps
from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.store import backup, edges, lease
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import MemoryStore, atomic, utcnow
from memory_pipeline.store.dedupe import archive_exact_duplicates
from memory_pipeline.store.records import MemoryRecord

GROUP = "abstraction"
POOL = "memory_store"  # DuckDB allows one writer process: every asset that writes the store shares this pool.
ARCHIVED_IMPORTANCE = 0.5
SUMMARY_IMPORTANCE_FLOOR = 1.0
ATOM_CONFIDENCE_NEW = 0.7
ATOM_CONFIDENCE_STEP = 0.1
ATOM_SUBJECT_THRESHOLD = 0.85
ATOM_ACTION_THRESHOLD = 0.75
EMBED_CHUNK = 512
ARCHIVE_BATCH = 256  # clusters per phase-2 transaction


class ClusterSelection(dg.Config):
    """Re-run one cluster by id (from a dry run's listing); it bypasses the fingerprint TTL."""

    cluster_id: str = ""


@dataclass
class RunStart:
    started_at: str
    wall_started: float
    tokens_before: int
    memory_count_before: int
    duplicates_archived: int
    pending_activated: list[str] = field(default_factory=list)
    pending_removed: list[str] = field(default_factory=list)


@dataclass
class ClusterOutcome:
    """What happened to one cluster on its way through the engine."""

    cluster: MemoryCluster
    distillation: Distillation | None = None
    skip_reason: str | None = None
    summary_id: str | None = None
    status: str = "pending"  # pending | skipped | compressed | failed
    errors: list[CompressionError] = field(default_factory=list)


def _error(cluster_id: str, stage: str, exc: BaseException | str) -> CompressionError:
    return CompressionError(cluster_id, stage, str(exc), utcnow().isoformat() + "Z")


def _lease_alive(instance: dg.DagsterInstance, held: lease.Lease) -> bool:
    """A lease is live while its process is (on this host) and its Dagster run, if any, has not finished."""
    run = instance.get_run_by_id(held.holder)
    if run is not None and run.is_finished:
        return False
    return lease.pid_alive(held)


@dg.asset(
    group_name=GROUP, pool=POOL, kinds={"duckdb"}, owners=OWNERS, tags={"component": "cortex_dedupe"},
    output_required=False,
)
def exact_duplicates(
    context: dg.AssetExecutionContext, store: MemoryStoreResource, engine: EngineConfig
) -> Iterator[dg.Output[RunStart]]:
    """The run's first write. Takes the store's consolidation lease (a second run skips, as the seed's lock
    does), snapshots the store, reconciles what an interrupted run left pending, takes the token baseline,
    and then dedupes exact matches (the seed's cortex_dedupe) so no LLM call is spent on identical text."""
    db = store.open()
    now = engine.now()
    run_id = context.run.run_id
    try:
        with db.transaction() as con:
            lease.acquire(
                con, run_id, utcnow(), timedelta(hours=engine.lease_ttl_hours),
                lambda held: _lease_alive(context.instance, held),
            )
            # recorded now, so that a run that dies before its report can still be rolled back by time
            con.execute("INSERT OR REPLACE INTO consolidation_runs VALUES (?, ?, NULL, NULL, NULL)", [run_id, utcnow()])
    except lease.LeaseBusy as busy:
        context.log.warning(str(busy))
        return  # no output: every downstream step is skipped and the run ends cleanly
    snapshot = backup.snapshot(db, store.home_path / "backups", run_id, engine.backups_keep)
    with db.transaction() as con:
        activated, removed = repo.reconcile_pending(con)
        tokens_before = repo.active_tokens(con)
        count_before = repo.memory_count(con)
        archived = archive_exact_duplicates(
            con,
            critical_floor=engine.critical_floor,
            archived_importance=ARCHIVED_IMPORTANCE,
            fresh_before=now - timedelta(hours=engine.freshness_hours),
            now=now,
            run_id=run_id,
            index_names=parse_index_names(engine.external_indexes),
        )
    if activated or removed:
        context.log.warning(
            f"reconciled an interrupted run: {len(activated)} pending summaries activated, {len(removed)} removed"
        )
    context.log.info(f"exact dedupe: archived {len(archived)} duplicate(s) of older memories")
    start = RunStart(
        utcnow().isoformat() + "Z", time.time(), tokens_before, count_before, len(archived), activated, removed
    )
    yield dg.Output(
        start,
        metadata={
            "duplicates_archived": len(archived),
            "tokens_before": tokens_before,
            "memories": count_before,
            "pending_activated": len(activated),
            "pending_removed": len(removed),
            "backup": dg.MetadataValue.path(str(snapshot)),
        },
    )


@dg.asset(
    group_name=GROUP, pool=POOL, kinds={"duckdb", "numpy"}, owners=OWNERS, tags={"component": "ClusterFinder"},
    deps=[exact_duplicates],
)
def memory_embeddings(
    context: dg.AssetExecutionContext, store: MemoryStoreResource, embedder: EmbedderResource, engine: EngineConfig
) -> dg.MaterializeResult:
    """Vectors only for memories that lack one for the configured model: nights cost what is new."""
    db = store.open()
    with db.connect() as con:
        todo = repo.memories_without_embedding(con, embedder.model)
    started = time.perf_counter()
    done = 0
    context.log.info(f"embedding {len(todo)} memories with {embedder.model}")
    progress = ThrottledProgress(context.log.info, "embedding memories", len(todo))
    for lo in range(0, len(todo), EMBED_CHUNK):
        chunk = todo.iloc[lo : lo + EMBED_CHUNK]
        vectors = encode_in_steps(
            embedder.encode,
            chunk["content"].tolist(),
            2 * embedder.batch_size,
            lambda n, lo=lo: progress.update(lo + n),
        )
        with db.transaction() as con:
            repo.upsert_embeddings(con, embedder.model, chunk["id"].tolist(), vectors, engine.now())
        done += len(chunk)
        context.log.info(f"embedded {done}/{len(todo)} memories with {embedder.model}")
    seconds = time.perf_counter() - started
    return dg.MaterializeResult(
        metadata={
            "embedded": done,
            "model": embedder.model,
            "seconds": round(seconds, 2),
            "memories_per_second": round(done / seconds, 1) if done and seconds > 0 else 0.0,
        }
    )


@dg.asset(
    group_name=GROUP, kinds={"duckdb"}, owners=OWNERS, tags={"component": "ClusterFinder"}, deps=[memory_embeddings]
)
def eligible_memories(
    context: dg.AssetExecutionContext, store: MemoryStoreResource, embedder: EmbedderResource, engine: EngineConfig
) -> dg.Output[repo.EligibleSet]:
    """Only what may be compressed: not critical, not fresh, not a summary, not archived, pinned or locked."""
    fresh_before = engine.now() - timedelta(hours=engine.freshness_hours)
    with store.open().connect() as con:
        eligible = repo.load_eligible(con, embedder.model, engine.critical_floor, fresh_before)
        reasons = repo.eligibility_counts(con, embedder.model, engine.critical_floor, fresh_before)
    context.log.info(f"ClusterFinder: {len(eligible.frame)} eligible memories")
    return dg.Output(eligible, metadata={"eligible": len(eligible.frame), **reasons})


class ClusterBuild(dg.Config):
    """`build`: incremental (default) reuses the stored threshold graph and computes only the edges of new or
    changed memories; full recomputes every edge. Empty = env MEMORY_PIPELINE_CLUSTER_BUILD, else incremental."""

    build: str = ""
    # graph-preserving compaction (seed 004): override EngineConfig.cluster_source for this run
    # (embedding | keys | both) and restrict key-centred clusters to keys with these prefixes (comma-separated,
    # e.g. "spam:" for the spam-family compaction the trigger sensor requests)
    source: str = ""
    key_prefixes: str = ""


@dg.asset(
    group_name=GROUP, pool=POOL, kinds={"numpy", "scipy", "duckdb"}, owners=OWNERS, tags={"component": "ClusterFinder"}
)
def clusters(
    context: dg.AssetExecutionContext,
    config: ClusterBuild,
    store: MemoryStoreResource,
    embedder: EmbedderResource,
    engine: EngineConfig,
    eligible_memories: repo.EligibleSet,
) -> dg.Output[list[MemoryCluster]]:
    """Single linkage at the threshold = connected components of the threshold graph; largest first. The
    graph is kept in the store between nights; only a run that also writes the store (archive_updates)
    saves it back, so the dry run computes the same clusters and writes nothing.

    Seed 004: key-centred clusters as a second source (`cluster_source`), hubs protected per `hub_policy`,
    and no new compaction while the outbox of external-index actions is critical."""
    started = time.perf_counter()
    since = engine.now() - timedelta(days=engine.fingerprint_ttl_days)
    settings = graph_plan.GraphSettings.from_engine(
        engine, config.source, [p.strip() for p in config.key_prefixes.split(",") if p.strip()]
    )
    from memory_pipeline.llm.runs import NON_ATTEMPT_PREFIXES

    db = store.open()
    with db.connect() as con:
        recent = repo.recent_fingerprints(con, since, NON_ATTEMPT_PREFIXES)
        open_actions = graph_outbox.open_count(con)
        holders = graph_queries.key_holders(con, engine.hub_top_keys, engine.now().date(), engine.usage_decay)
    if open_actions >= engine.outbox_critical:
        reason = (
            f"compaction paused: ops/outbox-critical ({open_actions} open outbox actions ≥ {engine.outbox_critical})"
        )
        context.log.warning(f"ClusterFinder: {reason}")
        return dg.Output([], metadata={"clusters_found": 0, "paused": reason, "outbox_open": open_actions})
    run_assets = context.run.asset_selection or context.job_def.asset_layer.executable_asset_keys
    persist = dg.AssetKey("archive_updates") in run_assets
    ids = eligible_memories.frame["id"].to_numpy(dtype=object)
    if settings.cluster_source == "keys":  # no embedding clusters tonight: the stored graph is left as it is
        found = []
        graph_meta: dict[str, object] = {"graph_build": "not used (cluster_source=keys)"}
    else:
        found, graph_meta = _embedding_clusters(
            context, config, db, embedder, engine, eligible_memories, ids, recent, persist
        )
    planned = graph_plan.plan(
        found, eligible_memories.frame, eligible_memories.vectors, holders, settings, engine.now().date(), recent
    )
    found = planned.clusters
    if persist and planned.hubs:
        with db.transaction() as con:
            if settings.hubs.policy == "pin":
                graph_queries.pin_hubs(con, [h.id for h in planned.hubs if planned.hub_actions[h.id] == "pinned"])
            graph_queries.record_hubs(con, context.run.run_id, planned.hubs, planned.hub_actions, engine.now())
    seconds = time.perf_counter() - started
    skipped = sum(1 for c in found if c.skip_reason)
    context.log.info(
        f"ClusterFinder: found {len(found)} clusters {planned.by_source} ({skipped} recently processed), "
        f"{len(planned.hubs)} hub(s), in {seconds:.2f}s"
    )
    table = pd.DataFrame(
        [
            {
                "cluster_id": c.cluster_id,
                "source": c.extra.get("source", "embedding"),
                "key": c.extra.get("key", ""),
                "members": c.member_count,
                "avg_similarity": c.avg_similarity,
                "category": c.dominant_category,
                "tokens": c.total_tokens,
                "skip": c.skip_reason or "",
            }
            for c in found
        ]
    )
    return dg.Output(
        found,
        metadata={
            "clusters_found": len(found),
            "recently_processed": skipped,
            "largest": max((c.member_count for c in found), default=0),
            "seconds": round(seconds, 3),
            **graph_meta,
            "cluster_source": settings.cluster_source,
            "key_clusters": planned.by_source.get("keys", 0),
            "hubs": len(planned.hubs),
            "clusters": dg.MetadataValue.md(table.head(50).to_markdown(index=False)) if len(table) else "none",
            **cluster_size_metadata(found),
        },
    )


def _embedding_clusters(
    context: dg.AssetExecutionContext,
    config: ClusterBuild,
    db: MemoryStore,
    embedder: EmbedderResource,
    engine: EngineConfig,
    eligible_memories: repo.EligibleSet,
    ids: object,
    recent: set[str],
    persist: bool,
) -> tuple[list[MemoryCluster], dict[str, object]]:
    """The embedding source: connected components of the (stored, incremental) threshold graph."""
    graph = edges.night_graph(
        db,
        ids,
        eligible_memories.vectors,
        model=embedder.model,
        threshold=engine.similarity_threshold,
        mode=threshold_graph.resolve_mode(config.build),
        persist=persist,
        now=engine.now(),
        run_id=context.run.run_id,
    )
    context.log.info(f"ClusterFinder: {graph.mode} threshold graph ({graph.reason}): {graph.stats}")
    found = clustering.build_clusters(
        eligible_memories.frame,
        eligible_memories.vectors,
        engine.similarity_threshold,
        engine.min_cluster_size,
        recent,
        engine.fingerprint_ttl_days,
        groups=graph.components(engine.min_cluster_size),
    )
    return found, {
        "graph_build": graph.mode,
        "graph_engine": "int8 screen + float64 verdict" if threshold_graph.screen_available() else "float32 tiles",
        "graph_rows_computed": int(graph.stats.get("computed_rows", 0)),
        "graph_edges": int(graph.rows.size),
    }


@dg.asset(group_name=GROUP, kinds={"anthropic"}, owners=OWNERS, tags={"component": "Distiller"})
def distillations(
    context: dg.AssetExecutionContext,
    config: ClusterSelection,
    store: MemoryStoreResource,
    engine: EngineConfig,
    llm: LLMResource,
    clusters: list[MemoryCluster],
) -> dg.Output[list[ClusterOutcome]]:
    """One abstraction per cluster. Every distiller's output passes the same validation; a rejection skips
    the cluster with the precise reason and leaves its sources untouched. With Claude: rate-limited, retried,
    costed per call (the run's usage ledger) and capped at COMPRESSION_MAX_COST_USD; clusters the cap leaves
    out are deferred to the next night, and neither they nor LLM-error skips count against the TTL."""
    from memory_pipeline.llm import runs as llm_runs

    db = store.open()
    distiller = llm.get_distiller(
        reports_dir=store.reports_dir,
        run_id=context.run.run_id,
        rate_limit_per_min=engine.rate_limit_per_min,
        max_cost_usd=engine.max_cost_usd,
        min_compression_ratio=engine.min_compression_ratio,
        max_abstraction_tokens=engine.max_abstraction_tokens,
        log=context.log.info,
    )
    context.instance.add_run_tags(context.run.run_id, llm.run_tags())
    selected = clusters
    if config.cluster_id:
        selected = [c for c in clusters if c.cluster_id == config.cluster_id]
        if not selected:
            raise dg.Failure(f"cluster {config.cluster_id} is not among this run's {len(clusters)} clusters")
        for c in selected:
            c.skip_reason = None
    outcomes: list[ClusterOutcome] = []
    todo = [c for c in selected if not c.skip_reason]
    with db.connect() as con:
        rows = repo.fetch_members(con, [m for c in todo for m in c.member_ids])
    by_id = {r.id: Member(r.id, r.content, float(r.importance)) for r in rows.itertuples()}
    requests = [
        llm_runs.DistillRequest(
            c.cluster_id,
            [by_id[m] for m in c.member_ids if m in by_id],
            c.dominant_category,
            (c.oldest_member_at, c.newest_member_at),
        )
        for c in todo
    ]
    progress = ThrottledProgress(context.log.info, "Distiller: cluster", len(todo))
    results = llm_runs.distill_all(distiller, requests)
    for i, (cluster, result) in enumerate(zip(todo, results, strict=True), start=1):
        outcome = ClusterOutcome(cluster)
        outcomes.append(outcome)
        progress.update(i, f"({cluster.member_count} members, category={cluster.dominant_category})")
        try:
            if isinstance(result, BaseException):
                raise result
            result.compression_ratio = round(
                validate_abstraction(
                    result.abstraction,
                    cluster.total_tokens,
                    cluster.member_ids,
                    engine.min_compression_ratio,
                    engine.max_abstraction_tokens,
                ),
                3,
            )
            outcome.distillation = result
        except DistillationRejected as exc:
            outcome.skip_reason, outcome.status = str(exc), "skipped"
        except llm_runs.CostCapReached as exc:  # never sent: waits for the next night, not an attempt
            outcome.skip_reason, outcome.status = llm_runs.deferred_reason(exc), "skipped"
        except Exception as exc:  # an LLM/API error skips the cluster, as the seed's failure table says
            outcome.skip_reason, outcome.status = f"LLM error: {exc}", "skipped"
            outcome.errors.append(_error(cluster.cluster_id, "distill", exc))
    for c in selected:
        if c.skip_reason:
            outcomes.append(ClusterOutcome(c, skip_reason=c.skip_reason, status="skipped"))
    accepted = [o for o in outcomes if o.distillation]
    return dg.Output(
        outcomes,
        metadata={
            "distiller": distiller.name,
            **llm_runs.step_metadata(distiller),
            "deferred": sum(1 for o in outcomes if llm_runs.is_deferred(o.skip_reason)),
            "accepted": len(accepted),
            "skipped": len(outcomes) - len(accepted),
            "avg_ratio": round(sum(o.distillation.compression_ratio for o in accepted) / len(accepted), 2)
            if accepted
            else 0.0,
        },
    )


def _summary_record(
    c: MemoryCluster, d: Distillation, now: datetime, hooks: graph_plan.SummaryHooks | None = None
) -> MemoryRecord:
    """Seed 000 §4.3: top-2 source categories + `compressed`, importance max(sources) floored at 1.0.
    Seed 004 §4.1: the summary also carries the rolled-up tags and nexus keys of its sources (as its own tags
    and keys, so retrieval by key reaches it), and its lineage says what the caps dropped."""
    hooks = hooks or graph_plan.SummaryHooks([], [], [], [])
    return MemoryRecord(
        id="mem-" + uuid.uuid4().hex[:16],
        content=d.abstraction,
        importance=max(SUMMARY_IMPORTANCE_FLOOR, c.max_importance),
        created_at=now,
        categories=[*c.top_categories, "compressed"],
        kind="summary",
        source=f"abstraction:{d.distiller}",
        lifecycle="pending",
        compressed_from={
            "source_ids": c.member_ids,
            "compression_ratio": d.compression_ratio,
            "cluster_size": c.member_count,
            "cluster_id": c.cluster_id,
            "distilled_at": now.isoformat() + "Z",
            "source_date_range": [c.oldest_member_at, c.newest_member_at],
            "distiller": d.distiller,
            "cluster_source": c.extra.get("source", "embedding"),
            **({"compaction_key": c.extra["key"], "window_start": c.extra["window_start"]} if "key" in c.extra else {}),
            **({"hubs": c.extra["hubs"]} if c.extra.get("hubs") else {}),
            "rolled_up_tags": hooks.tags,
            "rolled_up_nexus_keys": hooks.nexus_keys,
            "dropped_tags": hooks.dropped_tags,
            "dropped_nexus_keys": hooks.dropped_nexus_keys,
        },
        tags=hooks.tags,
        nexus_keys=hooks.nexus_keys,
        rolled_up_tags=hooks.tags,
        rolled_up_nexus_keys=hooks.nexus_keys,
    )


def _summaries_hooks(
    con: duckdb.DuckDBPyConnection, engine: EngineConfig, clusters: list[MemoryCluster]
) -> dict[str, graph_plan.SummaryHooks]:
    """Rolled-up tags and keys per cluster id, from the members' rows and the items' degrees in the store."""
    ids = sorted({m for c in clusters for m in c.member_ids})
    rows = repo.fetch_members(con, ids) if ids else pd.DataFrame(columns=["id", "tags", "nexus_keys"])
    members = {
        str(r.id): (list(r.tags) if r.tags is not None else [], list(r.nexus_keys) if r.nexus_keys is not None else [])
        for r in rows.itertuples()
    }
    tag_deg = graph_queries.degrees(con, sorted({t for v in members.values() for t in v[0]}), "tags")
    key_deg = graph_queries.degrees(con, sorted({k for v in members.values() for k in v[1]}), "nexus_keys")
    settings = graph_plan.GraphSettings.from_engine(engine)
    return {c.cluster_id: graph_plan.summary_hooks(c, members, tag_deg, key_deg, settings) for c in clusters}


@dg.asset(group_name=GROUP, pool=POOL, kinds={"duckdb"}, owners=OWNERS, tags={"component": "MemoryWriter"})
def compressed_memories(
    context: dg.AssetExecutionContext,
    store: MemoryStoreResource,
    embedder: EmbedderResource,
    engine: EngineConfig,
    distillations: list[ClusterOutcome],
) -> dg.Output[list[ClusterOutcome]]:
    """Phase 1 of the two-phase commit: each abstraction is written as a *pending* summary with its lineage
    and its vector. Nothing is archived yet, so a crash here leaves only pending rows to reconcile."""
    db = store.open()
    run_id = context.run.run_id
    now = engine.now()
    skipped_logs = [
        repo.ClusterLog(o.cluster.fingerprint, o.cluster.cluster_id, "skipped", o.cluster.member_count, o.skip_reason)
        for o in distillations
        if o.status == "skipped"
    ]
    with db.transaction() as con:
        repo.log_clusters(con, skipped_logs, run_id=run_id, now=now)
    accepted = [o for o in distillations if o.distillation is not None]
    with db.connect() as con:
        hooks = _summaries_hooks(con, engine, [o.cluster for o in accepted])
    records = [
        _summary_record(o.cluster, o.distillation, now, hooks[o.cluster.cluster_id]) for o in accepted if o.distillation
    ]
    progress = ThrottledProgress(context.log.info, "MemoryWriter: embedding summaries", len(records))
    vectors = encode_in_steps(embedder.encode, [r.content for r in records], 2 * embedder.batch_size, progress.update)
    try:
        with db.transaction() as con:
            repo.insert_memories(con, records, run_id=run_id)
            repo.upsert_embeddings(con, embedder.model, [r.id for r in records], vectors, now)
    except Exception as exc:
        for o in accepted:
            o.status, o.skip_reason = "failed", f"write failed: {exc}"
            o.errors.append(_error(o.cluster.cluster_id, "write", exc))
        records = []
    for o, r in zip(accepted, records, strict=False):
        o.summary_id = r.id
    context.log.info(f"MemoryWriter: wrote {len(records)} pending summaries")
    written = len(records)
    crash_point("after_phase1")
    skipped = sum(1 for o in distillations if o.status == "skipped")
    return dg.Output(
        distillations,
        metadata={"pending_written": written, "skipped_logged": skipped, **outcome_metadata(distillations)},
    )


@dg.asset(group_name=GROUP, pool=POOL, kinds={"duckdb"}, owners=OWNERS, tags={"component": "Archiver"})
def archive_updates(
    context: dg.AssetExecutionContext,
    store: MemoryStoreResource,
    engine: EngineConfig,
    compressed_memories: list[ClusterOutcome],
) -> dg.Output[list[ClusterOutcome]]:
    """Phase 2: per cluster, one transaction archives the sources (importance → 0.5, prior kept), activates
    the summary and logs the cluster. On failure the transaction rolls back, the pending summary is removed
    and the cluster is logged `failed` — the sources are exactly as before."""
    db = store.open()
    run_id = context.run.run_id
    now = engine.now()
    index_names = parse_index_names(engine.external_indexes)
    ready = [o for o in compressed_memories if o.summary_id is not None and o.distillation is not None]
    progress = ThrottledProgress(context.log.info, "Archiver: clusters", len(ready))
    archived = 0
    with db.connect() as con:
        for lo in range(0, len(ready), ARCHIVE_BATCH):
            batch = ready[lo : lo + ARCHIVE_BATCH]
            archived += _commit_batch(context, con, batch, engine.critical_floor, run_id, now, index_names)
            progress.update(lo + len(batch), f"({archived} sources archived)")
        tombstones = int(con.execute("SELECT count(*) FROM tombstones WHERE run_id = ?", [run_id]).fetchall()[0][0])
        enqueued = int(con.execute("SELECT count(*) FROM outbox WHERE run_id = ?", [run_id]).fetchall()[0][0])
    compressed = sum(1 for o in compressed_memories if o.status == "compressed")
    return dg.Output(
        compressed_memories,
        metadata={
            "clusters_compressed": compressed,
            "memories_archived": archived,
            "tombstones": tombstones,
            "outbox_enqueued": enqueued,
        },
    )


def _phase2(
    con: duckdb.DuckDBPyConnection,
    batch: list[ClusterOutcome],
    critical_floor: float,
    run_id: str,
    now: datetime,
    index_names: list[str],
) -> int:
    """Inside the caller's transaction: archive the sources (importance → 0.5, prior kept), activate the
    summaries, log the clusters. Seed 004 §5 phase 2 in the same transaction: a tombstone per source, and
    (only when external indexes are configured) the outbox actions that keep them in step."""
    done = [(o.cluster, o.summary_id or "", o.distillation) for o in batch if o.distillation is not None]
    archived = repo.archive_clusters(
        con,
        [(c.cluster_id, c.member_ids) for c, _, _ in done],
        archived_importance=ARCHIVED_IMPORTANCE,
        critical_floor=critical_floor,
        now=now,
        run_id=run_id,
    )
    crash_point("inside_phase2")
    repo.activate_summaries(con, [summary_id for _, summary_id, _ in done])
    graph_queries.write_cluster_tombstones(
        con, [(summary_id, c.cluster_id, c.member_ids) for c, summary_id, _ in done], run_id=run_id, now=now
    )
    for c, summary_id, _ in done if index_names else []:
        keys, tags = con.execute("SELECT nexus_keys, tags FROM memories WHERE id = ?", [summary_id]).fetchall()[0]
        graph_outbox.enqueue_compaction(
            con,
            index_names=index_names,
            summary_id=summary_id,
            summary_payload={"kind": "summary", "nexus_keys": list(keys or []), "tags": list(tags or [])},
            source_ids=c.member_ids,
            run_id=run_id,
            now=now,
        )
    entries = [
        repo.ClusterLog(
            c.fingerprint, c.cluster_id, "compressed", c.member_count,
            compressed_memory_id=summary_id, compression_ratio=d.compression_ratio,
        )
        for c, summary_id, d in done
    ]
    repo.log_clusters(con, entries, run_id=run_id, now=now)
    return archived


def _commit_batch(
    context: dg.AssetExecutionContext,
    con: duckdb.DuckDBPyConnection,
    batch: list[ClusterOutcome],
    critical_floor: float,
    run_id: str,
    now: datetime,
    index_names: list[str],
) -> int:
    """Phase 2 for a batch of clusters in one transaction: a 100k night has thousands of clusters and each
    statement has a fixed cost. If anything in the batch fails, it rolls back whole and each cluster is
    committed on its own, so a bad cluster still fails alone and the rest still compress."""
    if len(batch) > 1:
        try:
            with atomic(con):
                archived = _phase2(con, batch, critical_floor, run_id, now, index_names)
        except Exception as exc:
            context.log.warning(f"Archiver: a batch of {len(batch)} clusters rolled back ({exc}); one by one now")
        else:
            for o in batch:
                o.status = "compressed"
            return archived
    return sum(_commit_cluster(context, con, o, critical_floor, run_id, now, index_names) for o in batch)


def _commit_cluster(
    context: dg.AssetExecutionContext,
    con: duckdb.DuckDBPyConnection,
    o: ClusterOutcome,
    critical_floor: float,
    run_id: str,
    now: datetime,
    index_names: list[str],
) -> int:
    """One cluster's phase-2 transaction; on failure, the compensating action and a `failed` log entry."""
    c, summary_id = o.cluster, o.summary_id
    assert summary_id is not None
    try:
        with atomic(con):
            archived = _phase2(con, [o], critical_floor, run_id, now, index_names)
    except Exception as exc:
        context.log.error(f"Archiver: cluster {c.cluster_id} rolled back: {exc}")
        with atomic(con):
            repo.discard_pending(con, summary_id)
            repo.log_cluster(
                con,
                fingerprint=c.fingerprint,
                cluster_id=c.cluster_id,
                status="failed",
                member_count=c.member_count,
                run_id=run_id,
                now=now,
                reason=str(exc),
            )
        o.status, o.summary_id = "failed", None
        o.errors.append(_error(c.cluster_id, "archive", exc))
        return 0
    o.status = "compressed"
    return archived


@dataclass
class AtomResults:
    created: int = 0
    strengthened: int = 0
    not_causal: int = 0
    errors: list[CompressionError] = field(default_factory=list)


def _has_fields(extracted: dict[str, str], *names: str) -> bool:
    return all(isinstance(extracted.get(n), str) and extracted[n].strip() for n in names)


@dg.asset(group_name=GROUP, pool=POOL, kinds={"duckdb"}, owners=OWNERS, tags={"component": "AtomEnricher"})
def atoms(
    context: dg.AssetExecutionContext,
    store: MemoryStoreResource,
    embedder: EmbedderResource,
    engine: EngineConfig,
    llm: LLMResource,
    archive_updates: list[ClusterOutcome],
) -> dg.Output[AtomResults]:
    """Causal abstractions become {subject, action, outcome, consequences} atoms; a matching atom is
    strengthened (+0.1, capped at 1.0) instead of duplicated. Failures here never undo compression."""
    from memory_pipeline.llm import runs as llm_runs

    distiller = llm.get_distiller(
        reports_dir=store.reports_dir,
        run_id=context.run.run_id,
        rate_limit_per_min=engine.rate_limit_per_min,
        max_cost_usd=engine.max_cost_usd,
        log=context.log.info,
    )
    db = store.open()
    run_id = context.run.run_id
    results = AtomResults()
    causal = [o for o in archive_updates if o.status == "compressed" and o.distillation and o.distillation.is_causal]
    extractions = llm_runs.extract_all(distiller, [o.distillation.abstraction for o in causal if o.distillation])
    usable = [i for i, e in enumerate(extractions) if isinstance(e, dict) and _has_fields(e, "subject", "action")]
    flat = embedder.encode([str(extractions[i][f]) for i in usable for f in ("subject", "action")])  # type: ignore
    field_vectors = {i: (flat[2 * k], flat[2 * k + 1]) for k, i in enumerate(usable)}
    with db.connect() as con:
        existing = [ExistingAtom(r.id, r.subject, r.action) for r in repo.all_atoms(con).itertuples()]
        index = AtomIndex(existing, embedder.encode)
        for i, (o, extracted) in enumerate(zip(causal, extractions, strict=True)):
            assert o.distillation is not None
            try:
                if isinstance(extracted, BaseException):
                    raise extracted
                if extracted is None:
                    results.not_causal += 1
                    continue
                if i not in field_vectors:
                    raise ValueError(f"extracted atom lacks a subject or an action: {extracted!r}")
                subject, action = field_vectors[i]
                match = index.match(subject, action, ATOM_SUBJECT_THRESHOLD, ATOM_ACTION_THRESHOLD)
                with atomic(con):
                    if match:
                        repo.strengthen_atom(con, match, ATOM_CONFIDENCE_STEP, o.summary_id or "", run_id, engine.now())
                        results.strengthened += 1
                    else:
                        origin = f"distilled:{o.distillation.distiller}"
                        atom_id = repo.create_atom(
                            con, extracted, ATOM_CONFIDENCE_NEW, origin, o.summary_id or "", run_id, engine.now()
                        )
                        index.add(atom_id, subject, action)
                        results.created += 1
            except Exception as exc:
                results.errors.append(_error(o.cluster.cluster_id, "enrich", exc))
                context.log.warning(f"AtomEnricher: cluster {o.cluster.cluster_id}: {exc}")
    return dg.Output(
        results,
        metadata={
            "atoms_created": results.created,
            "atoms_strengthened": results.strengthened,
            "not_causal": results.not_causal,
            "errors": len(results.errors),
            **llm_runs.step_metadata(distiller),
        },
    )


@dg.asset(group_name=GROUP, pool=POOL, kinds={"duckdb", "json"}, owners=OWNERS, tags={"component": "Reporter"})
def report(
    context: dg.AssetExecutionContext,
    store: MemoryStoreResource,
    engine: EngineConfig,
    llm: LLMResource,
    exact_duplicates: RunStart,
    eligible_memories: repo.EligibleSet,
    clusters: list[MemoryCluster],
    atoms: AtomResults,
    archive_updates: list[ClusterOutcome],
) -> dg.MaterializeResult:
    """The seed's CompressionRunReport: a JSON file per run, a row in the store, and numbers the UI plots.
    LLM usage and cost come from the run's usage ledger (every call of every step) × the price table."""
    from memory_pipeline.llm import runs as llm_runs

    run_id = context.run.run_id
    outcomes = archive_updates
    compressed = [o for o in outcomes if o.status == "compressed" and o.distillation]
    ratios = [o.distillation.compression_ratio for o in compressed if o.distillation]
    errors = [e for o in outcomes for e in o.errors] + atoms.errors
    usage = llm.usage_summary(store.reports_dir, run_id)
    llm_calls, llm_in, llm_out = usage.calls, usage.total.total_input_tokens, usage.total.output_tokens
    db = store.open()
    with db.connect() as con:
        tokens_after = repo.active_tokens(con)
        memory_count = repo.memory_count(con)
        archived_by_run = int(
            con.execute(
                "SELECT coalesce(sum(member_count), 0) FROM compression_log WHERE run_id = ? AND status = 'compressed'",
                [run_id],
            ).fetchall()[0][0]
        )
    skip_reasons: dict[str, int] = {}
    for o in outcomes:
        if o.status == "skipped" and o.skip_reason:
            key = o.skip_reason.split(":")[0] if o.skip_reason.startswith("LLM error") else o.skip_reason
            key = "compression_ratio below floor" if "below floor" in key else key
            skip_reasons[key] = skip_reasons.get(key, 0) + 1
    finished = utcnow()
    verdict, reason = decide_verdict(len(compressed), len(errors))
    deferred = sum(1 for o in outcomes if o.status == "skipped" and llm_runs.is_deferred(o.skip_reason))
    verdict, reason = llm_runs.verdict_with_deferrals(verdict, reason, deferred, engine.max_cost_usd)
    started = exact_duplicates.started_at
    r = CompressionRunReport(
        run_id=run_id,
        started_at=started,
        finished_at=finished.isoformat() + "Z",
        duration_ms=int((time.time() - exact_duplicates.wall_started) * 1000),
        memories_scanned=len(eligible_memories.frame),
        clusters_found=len(clusters),
        clusters_skipped=sum(1 for o in outcomes if o.status == "skipped"),
        clusters_compressed=len(compressed),
        memories_archived=archived_by_run,
        abstractions_created=len(compressed),
        atoms_created=atoms.created,
        atoms_enriched=atoms.strengthened,
        tokens_before=exact_duplicates.tokens_before,
        tokens_after=tokens_after,
        token_reduction_pct=reduction_pct(exact_duplicates.tokens_before, tokens_after),
        avg_compression_ratio=round(sum(ratios) / len(ratios), 3) if ratios else 0.0,
        max_compression_ratio=round(max(ratios), 3) if ratios else 0.0,
        min_compression_ratio=round(min(ratios), 3) if ratios else 0.0,
        total_llm_calls=llm_calls,
        total_llm_input_tokens=llm_in,
        total_llm_output_tokens=llm_out,
        estimated_cost_usd=round(usage.cost(llm.prices()), 6),
        errors=errors,
        verdict=verdict,
        verdict_reason=reason,
        distiller=llm.distiller_name(),
        clusters_failed=sum(1 for o in outcomes if o.status == "failed"),
        exact_duplicates_archived=exact_duplicates.duplicates_archived,
        pending_activated=len(exact_duplicates.pending_activated),
        pending_removed=len(exact_duplicates.pending_removed),
        skip_reasons=skip_reasons,
    )
    with db.connect() as con:
        graph_section = _graph_report(con, run_id, clusters, outcomes)
    payload = r.to_dict() | {
        "memory_count": memory_count,
        "llm": llm.report_fields(usage, clusters_deferred=deferred, max_cost_usd=engine.max_cost_usd),
        "graph": graph_section,
    }
    path = write_report(store.reports_dir, payload)
    with db.transaction() as con:
        con.execute(
            "INSERT OR REPLACE INTO consolidation_runs VALUES (?, ?, ?, ?, ?)",
            [run_id, pd.Timestamp(started.rstrip("Z")).to_pydatetime(), finished, verdict, json.dumps(payload)],
        )
        lease.release(con, run_id)
    context.log.info(
        f"Reporter: {verdict} — {r.abstractions_created} abstractions, {r.atoms_created} atoms created, "
        f"{r.token_reduction_pct}% token reduction"
    )
    return dg.MaterializeResult(
        metadata={
            "verdict": verdict,
            "report": dg.MetadataValue.md(markdown_table(r)),
            "report_path": dg.MetadataValue.path(str(path)),
            "tokens_before": r.tokens_before,
            "tokens_after": r.tokens_after,
            "token_reduction_pct": r.token_reduction_pct,
            "clusters_found": r.clusters_found,
            "clusters_compressed": r.clusters_compressed,
            "memories_archived": r.memories_archived,
            "avg_compression_ratio": r.avg_compression_ratio,
            "estimated_cost_usd": r.estimated_cost_usd,
            "llm_calls": r.total_llm_calls,
            "distiller": r.distiller,
            "errors": len(r.errors),
            "duration_ms": r.duration_ms,
            "abstractions_created": r.abstractions_created,
        }
    )


def _graph_report(
    con: duckdb.DuckDBPyConnection, run_id: str, clusters: list[MemoryCluster], outcomes: list[ClusterOutcome]
) -> dict[str, object]:
    """Seed 004 in the run report: clusters per source, hubs, tombstones, outbox, keys dropped by the caps."""
    by_source: dict[str, dict[str, int]] = {}
    for o in outcomes:
        entry = by_source.setdefault(str(o.cluster.extra.get("source", "embedding")), {"found": 0, "compressed": 0})
        entry["compressed"] += o.status == "compressed"
    for c in clusters:
        by_source.setdefault(str(c.extra.get("source", "embedding")), {"found": 0, "compressed": 0})["found"] += 1
    dropped = con.execute(
        """SELECT coalesce(sum(json_array_length(json_extract(compressed_from, '$.dropped_nexus_keys'))), 0),
                  coalesce(sum(json_array_length(json_extract(compressed_from, '$.dropped_tags'))), 0)
           FROM memories WHERE created_by_run = ? AND kind = 'summary' AND lifecycle = 'active'""",
        [run_id],
    ).fetchall()[0]
    count = lambda sql: int(con.execute(sql, [run_id]).fetchall()[0][0])  # noqa: E731
    return {
        "clusters_by_source": by_source,
        "hubs": graph_queries.hubs_of_run(con, run_id),
        "tombstones": count("SELECT count(*) FROM tombstones WHERE run_id = ?"),
        "outbox_enqueued": count("SELECT count(*) FROM outbox WHERE run_id = ?"),
        "outbox_open": graph_outbox.open_count(con),
        "nexus_keys_dropped_by_cap": int(dropped[0]),
        "tags_dropped_by_cap": int(dropped[1]),
    }


def write_report(reports_dir: Path, payload: dict[str, object]) -> Path:
    """Write-then-rename, so a crash never leaves half a report."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    path = reports_dir / f"compression-{payload['run_id']}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")
    crash_point("writing_report")
    tmp.replace(path)
    return path
