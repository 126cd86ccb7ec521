"""Distiller (seed 000): one abstraction per cluster, offline or through Claude."""

import time

import dagster as dg

from memory_pipeline.abstraction import distilling
from memory_pipeline.abstraction.outcomes import ClusterOutcome
from memory_pipeline.defs.abstraction.cluster_finder import ClusterSelection
from memory_pipeline.defs.abstraction.common import GROUP
from memory_pipeline.operator.metadata import OWNERS
from memory_pipeline.operator.progress import ThrottledProgress
from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.similarity.clustering import MemoryCluster


@dg.asset(group_name=GROUP, kinds={"anthropic"}, owners=OWNERS, tags={"component": "Distiller"})
def distillations(
    context: dg.AssetExecutionContext,
    config: ClusterSelection,
    store: MemoryStoreResource,
    engine: EngineConfig,
    llm: LLMResource,
    embedder: EmbedderResource,
    clusters: list[MemoryCluster],
) -> dg.Output[list[ClusterOutcome]]:
    """One abstraction per cluster. Every distiller's output passes the same validation; a rejection skips
    the cluster with the precise reason and leaves its sources untouched: a text that states what its sources do
    not, or leaves out what they said (MiniLM judging paraphrases), is refused. With Claude: rate-limited, retried,
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
    todo = [c for c in selected if not c.skip_reason]
    requests = distilling.requests(db, todo)
    encode = distilling.statement_encoder(embedder)
    verify_s = 0.0
    if hasattr(distiller, "encode"):  # the offline distiller: paraphrases already written are not repeated
        distiller.encode = encode
    progress = ThrottledProgress(context.log.info, "Distiller: cluster", len(todo))
    results = llm_runs.distill_all(distiller, requests)
    outcomes: list[ClusterOutcome] = []
    for i, (cluster, request, result) in enumerate(zip(todo, requests, results, strict=True), start=1):
        progress.update(i, f"({cluster.member_count} members, category={cluster.dominant_category})")
        sources = [m.content for m in request.members]
        started = time.perf_counter()
        outcomes.append(distilling.judged(cluster, result, engine.min_compression_ratio, engine.max_abstraction_tokens,
                                          sources, encode))  # fmt: skip
        verify_s += time.perf_counter() - started
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
            "verifier_seconds": round(verify_s, 2),
            "sentences_embedded": encode.encoded if encode is not None else 0,
            "avg_ratio": round(sum(d.compression_ratio for d in accepted) / len(accepted), 2)
            if accepted
            else 0.0,
        },
    )
