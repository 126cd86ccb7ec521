"""Reporter: the run report, its verdict and the numbers the UI plots."""

import time

import dagster as dg

from memory_pipeline.abstraction import grade, reporting
from memory_pipeline.abstraction.outcomes import AtomResults, ClusterOutcome, RunStart
from memory_pipeline.abstraction.report import (
    CompressionRunReport,
    decide_verdict,
    markdown_table,
    reduction_pct,
)
from memory_pipeline.defs.abstraction import vector_steps
from memory_pipeline.defs.abstraction.common import GROUP
from memory_pipeline.embedding.defaults import describe
from memory_pipeline.operator.metadata import OWNERS
from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.resources.store import POOL
from memory_pipeline.similarity.clustering import MemoryCluster
from memory_pipeline.store import repository as repo
from memory_pipeline.store import validity
from memory_pipeline.store.db import utcnow


@dg.asset(group_name=GROUP, pool=POOL, kinds={"duckdb", "json"}, owners=OWNERS, tags={"component": "Reporter"})
def report(
    context: dg.AssetExecutionContext,
    store: MemoryStoreResource,
    embedder: EmbedderResource,
    engine: EngineConfig,
    llm: LLMResource,
    exact_duplicates: RunStart,
    eligible_memories: repo.EligibleSet,
    clusters: list[MemoryCluster],
    atoms: AtomResults,
    archive_updates: list[ClusterOutcome],
) -> dg.MaterializeResult:
    """The night's run report: a JSON file per run, a row in the store, the numbers the UI plots and the
    verdict — PASS, PARTIAL (errors, or clusters left for the next night by the cost cap) or FAIL (clusters to
    try and none compressed). A quiet night, with nothing new to consolidate, is a PASS. LLM usage and cost
    come from the run's usage ledger (every call of every step) × the price table."""
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
        archived_by_run = reporting.archived_by_run(con, run_id)
        superseded = validity.count_for_runs(con, [run_id])
        unreported = repo.unreported_runs(con, run_id)  # nights that died after their work, before their report
        paused = reporting.compaction_paused(con, engine.outbox_critical, clusters)
    finished = utcnow()
    recovered = len(exact_duplicates.pending_activated) + sum(u[1] for u in unreported)
    ttl = llm_runs.TTL_PREFIX  # clusters a recent night already tried: not tonight's work
    recent = sum(1 for o in outcomes if o.status == "skipped" and (o.skip_reason or "").startswith(ttl))
    verdict, reason = decide_verdict(
        len(compressed), len(errors), paused, recovered=recovered, tried=len(outcomes) - recent,
        found=len(clusters), scanned=len(eligible_memories.frame), duplicates=exact_duplicates.duplicates_archived,
        superseded=superseded, refused=reporting.refused_by_verifier(outcomes),
    )  # fmt: skip
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
        skip_reasons=reporting.skip_reasons(outcomes),
        clusters_recently_processed=recent,
        supersessions=superseded,
        grade=grade.night([o.grade for o in outcomes], engine.grade_floor).to_dict(),
    )
    with db.connect() as con:
        graph_section = reporting.graph_section(con, run_id, clusters, outcomes)
        r.embedding = vector_steps.report_section(con, embedder, eligible_memories, run_id)
    choice = engine.clustering_choice(embedder.model, reporting.run_linkage(context.run.run_config))
    payload = r.to_dict() | {
        "clustering": {
            "threshold": choice.threshold,
            "linkage": choice.linkage,
            "max_cluster_members": engine.max_cluster_members,
            "max_cluster_tokens": engine.max_cluster_tokens,
            "why": choice.reason,
        },
        "memory_count": memory_count,
        "llm": llm.report_fields(usage, clusters_deferred=deferred, max_cost_usd=engine.max_cost_usd),
        "graph": graph_section,
    }
    path = reporting.save_reports(db, store.reports_dir, payload, finished, unreported)
    context.log.info(
        f"Reporter: {verdict}{f' ({reason})' if reason else ''} — {r.abstractions_created} abstractions"
        f", {r.atoms_created} atoms created, "
        f"{r.token_reduction_pct}% token reduction; clustered at {describe(choice)}"
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
            "supersessions": r.supersessions,
            "grade_coverage": r.grade["coverage"],
            "unfaithful_sentences": r.grade["unfaithful_sentences"],
            "avg_compression_ratio": r.avg_compression_ratio,
            "estimated_cost_usd": r.estimated_cost_usd,
            "llm_calls": r.total_llm_calls,
            "distiller": r.distiller,
            "errors": len(r.errors),
            "duration_ms": r.duration_ms,
            "abstractions_created": r.abstractions_created,
            "clustering": describe(choice),
        }
    )
