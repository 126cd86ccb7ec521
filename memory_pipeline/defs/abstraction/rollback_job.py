"""Rollback as a Dagster job, the same code path as `memory-pipeline rollback`."""

import dagster as dg

from memory_pipeline.resources import EngineConfig, MemoryStoreResource
from memory_pipeline.resources.store import POOL
from memory_pipeline.store import rollback as rb
from memory_pipeline.store.external_index import parse_index_names
from memory_pipeline.store.records import parse_timestamp


class RollbackConfig(dg.Config):
    """Give `run_id`, or `since` (ISO timestamp: every run started at or after it)."""

    run_id: str = ""
    since: str = ""
    dry_run: bool = True


@dg.op(pool=POOL)
def rollback_runs(
    context: dg.OpExecutionContext, config: RollbackConfig, store: MemoryStoreResource, engine: EngineConfig
) -> dict:
    """Restore sources' exact prior importance, retire the runs' summaries and atoms, revert their tombstones
    and queue the external indexes' compensating actions; nothing is deleted."""
    if bool(config.run_id) == bool(config.since):
        raise dg.Failure("give exactly one of run_id or since")
    db = store.open()
    if config.run_id:
        run_ids = [config.run_id]
    else:
        with db.connect() as con:
            run_ids = rb.runs_since(con, parse_timestamp(config.since, "RollbackConfig", "since"))
    try:
        rollback_id, plan = rb.rollback(
            db, run_ids, dry_run=config.dry_run, index_names=parse_index_names(engine.external_indexes)
        )
    except rb.RollbackRefused as exc:
        raise dg.Failure(str(exc)) from exc
    for line in plan.describe():
        context.log.info(("[dry run] " if config.dry_run else "") + line)
    return {
        "rollback_id": rollback_id,
        "dry_run": config.dry_run,
        "sources_restored": len(plan.sources),
        "summaries_retired": len(plan.summaries),
        "tombstones_reverted": len(plan.tombstones),
        "outbox_enqueued": 0 if config.dry_run else plan.outbox_actions,
    }


@dg.job(description="Roll back consolidation runs by run id or since a time (dry run by default).")
def rollback_consolidation() -> None:
    rollback_runs()
