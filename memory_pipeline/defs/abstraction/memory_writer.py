"""MemoryWriter (seed 000), phase 1: write the summaries."""


import dagster as dg

from memory_pipeline.abstraction import summaries
from memory_pipeline.abstraction.outcomes import ClusterOutcome
from memory_pipeline.defs.abstraction.common import GROUP
from memory_pipeline.faults import crash_point, hold_point
from memory_pipeline.operator.metadata import OWNERS, outcome_metadata
from memory_pipeline.operator.progress import ThrottledProgress, encode_in_steps
from memory_pipeline.resources import EmbedderResource, EngineConfig, MemoryStoreResource
from memory_pipeline.resources.store import POOL
from memory_pipeline.store import night_vectors as night
from memory_pipeline.store import repository as repo


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
        hooks = summaries.summaries_hooks(con, engine, [o.cluster for o in accepted])
    records = [
        summaries.summary_record(o.cluster, o.distillation, now, hooks[o.cluster.cluster_id])
        for o in accepted
        if o.distillation
    ]
    progress = ThrottledProgress(context.log.info, "MemoryWriter: embedding summaries", len(records))
    with db.connect() as con:
        vectors, vector_source = night.summary_vectors(
            con,
            embedder.model,
            embedder.summary_method,
            lambda texts: encode_in_steps(embedder.encode, texts, 2 * embedder.batch_size, progress.update),
            embedder.compute_source,
            [r.content for r in records],
            [o.cluster.member_ids for o in accepted if o.distillation],
        )
    context.log.info(f"MemoryWriter: {len(records)} summary vectors by {embedder.summary_method}")
    written = summaries.write_pending(db, accepted, records, embedder.model, vectors, vector_source, now, run_id)
    context.log.info(f"MemoryWriter: wrote {written} pending summaries")
    crash_point("after_phase1")
    hold_point("night_phase1", store.home_path.name)  # tests: a night parked with its pending summaries written
    skipped = sum(1 for o in distillations if o.status == "skipped")
    return dg.Output(
        distillations,
        metadata={
            "pending_written": written,
            "skipped_logged": skipped,
            "summary_embedding": embedder.summary_method,
            **outcome_metadata(distillations),
        },
    )
