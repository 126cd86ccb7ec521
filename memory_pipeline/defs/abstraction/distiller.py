"""Distiller (seed 000): one abstraction per cluster, offline or through Claude."""


import dagster as dg

from memory_pipeline.defs.abstraction.cluster_finder import ClusterSelection
from memory_pipeline.defs.abstraction.common import GROUP, ClusterOutcome, _error
from memory_pipeline.llm.distill import DistillationRejected, Member, validate_abstraction
from memory_pipeline.operator.metadata import OWNERS
from memory_pipeline.operator.progress import ThrottledProgress
from memory_pipeline.resources import EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.similarity.clustering import MemoryCluster
from memory_pipeline.store import repository as repo


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
    accepted = [o.distillation for o in outcomes if o.distillation]
    return dg.Output(
        outcomes,
        metadata={
            "distiller": distiller.name,
            **llm_runs.step_metadata(distiller),
            "deferred": sum(1 for o in outcomes if llm_runs.is_deferred(o.skip_reason)),
            "accepted": len(accepted),
            "skipped": len(outcomes) - len(accepted),
            "avg_ratio": round(sum(d.compression_ratio for d in accepted) / len(accepted), 2)
            if accepted
            else 0.0,
        },
    )
