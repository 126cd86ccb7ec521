"""Dagster side of graph-preserving compaction: the outbox drain (an asset) and the explicit
summary-of-summary rollup (a job that is never scheduled)."""

import dagster as dg

from memory_pipeline.distillation.distill import Member, validate_abstraction
from memory_pipeline.graph import summary_rollup
from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.resources.store import POOL
from memory_pipeline.store import night_vectors as night
from memory_pipeline.store import outbox
from memory_pipeline.store.db import utcnow
from memory_pipeline.store.external_index import directory_indexes, parse_index_names

GROUP = "graph"


def _run_alive(instance: dg.DagsterInstance, run_id: str) -> bool:
    """A drainer is a Dagster run; its claims are stale once that run has finished (or never existed)."""
    run = instance.get_run_by_id(run_id)
    return run is not None and not run.is_finished


@dg.asset(group_name=GROUP, pool=POOL, kinds={"duckdb"})
def outbox_drain(
    context: dg.AssetExecutionContext, store: MemoryStoreResource, engine: EngineConfig
) -> dg.MaterializeResult:
    """Send the updates waiting for the configured external search indexes (what compaction archived,
    rewrote or removed), each once: claimed, applied (keyed by its id, so a repeat is harmless), marked done.
    Updates claimed by a drain that died are taken back, so none is lost or applied twice."""
    names = parse_index_names(engine.external_indexes)
    db = store.open()
    indexes = directory_indexes(store.home_path, names)
    run_id = context.run.run_id
    result = outbox.drain(
        db, indexes, run_id, utcnow, lambda holder: holder != run_id and _run_alive(context.instance, holder)
    )
    for err in result.errors[:20]:
        context.log.warning(f"outbox: {err}")
    if result.unknown_index:
        context.log.warning(f"outbox: {result.unknown_index} action(s) for an index that is not configured: kept")
    return dg.MaterializeResult(
        metadata={
            "applied": result.applied,
            "reclaimed": result.reclaimed,
            "failed": result.failed,
            "unknown_index": result.unknown_index,
            "remaining": result.remaining,
            "indexes": ", ".join(names) or "none",
        }
    )


drain_outbox_job = dg.define_asset_job(
    "drain_outbox",
    selection=dg.AssetSelection.assets(outbox_drain),
    description="Send the updates waiting for the external search indexes (outbox_drain).",
)


class SummaryRollupConfig(dg.Config):
    """The summaries to roll up into one higher-level summary (`summary_of`). Never automatic."""

    summary_ids: list[str] = []


@dg.op(pool=POOL)
def roll_up_summaries(
    context: dg.OpExecutionContext,
    config: SummaryRollupConfig,
    store: MemoryStoreResource,
    embedder: EmbedderResource,
    engine: EngineConfig,
    llm: LLMResource,
) -> dict:
    db = store.open()
    with db.connect() as con:
        try:
            rows = summary_rollup.check_request(con, config.summary_ids, engine.summary_rollup_min_sources)
        except summary_rollup.SummaryOfSummaryRefused as exc:
            raise dg.Failure(str(exc)) from exc
    distiller = llm.get_distiller(
        reports_dir=store.reports_dir,
        run_id=context.run.run_id,
        rate_limit_per_min=engine.rate_limit_per_min,
        max_cost_usd=engine.max_cost_usd,
        min_compression_ratio=engine.min_compression_ratio,
        log=context.log.info,
    )
    members = [Member(r.id, r.content, float(r.importance)) for r in rows.itertuples()]
    span = (str(rows["created_at"].min())[:10], str(rows["created_at"].max())[:10])
    d = distiller.distill(members, "rollup", span)
    tokens = int(rows["token_count"].sum())
    ratio = validate_abstraction(
        d.abstraction, tokens, list(rows["id"]), engine.min_compression_ratio, engine.max_abstraction_tokens
    )
    now = engine.now()
    with db.transaction() as con:
        record = summary_rollup.write_rollup(
            con,
            rows,
            content=d.abstraction,
            distiller=d.distiller,
            compression_ratio=round(ratio, 3),
            run_id=context.run.run_id,
            now=now,
            k=engine.rollup_max_keys,
            per_namespace=engine.rollup_per_namespace,
        )
        from memory_pipeline.store import repository as repo

        names = parse_index_names(engine.external_indexes)
        if names:  # the lower summaries leave the external indexes, the rollup enters them (same transaction)
            outbox.enqueue_compaction(
                con,
                index_names=names,
                summary_id=record.id,
                summary_payload=outbox.memory_payload("summary", record.nexus_keys, record.tags),
                source_ids=list(rows["id"]),
                run_id=context.run.run_id,
                now=now,
            )

        vectors, source = night.summary_vectors(  # the plug-in, the built-in, or the mean of the lower summaries
            con, embedder.model, embedder.summary_method, embedder.encode, embedder.compute_source,
            [record.content], [list(rows["id"])],
        )
        repo.upsert_embeddings(con, embedder.model, [record.id], vectors, now, source=source)
    context.log.info(f"rolled up {len(rows)} summaries into {record.id}")
    return {"rollup_id": record.id, "summary_of": list(rows["id"])}


@dg.job(description="Roll named summaries up into one higher-level summary (summary_of provenance). Never scheduled.")
def summary_rollup_job() -> None:
    roll_up_summaries()
