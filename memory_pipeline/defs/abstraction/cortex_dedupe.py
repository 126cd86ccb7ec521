"""Exact duplicates before anything is embedded (component `cortex_dedupe`)."""

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import dagster as dg

from memory_pipeline.abstraction.outcomes import ARCHIVED_IMPORTANCE, RunStart
from memory_pipeline.defs.abstraction.common import GROUP, _lease_alive, runs_whole_night_here
from memory_pipeline.faults import hold_point
from memory_pipeline.operator.metadata import OWNERS
from memory_pipeline.resources import EngineConfig, MemoryStoreResource
from memory_pipeline.resources.store import POOL
from memory_pipeline.store import backup, lease
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import utcnow
from memory_pipeline.store.dedupe import archive_exact_duplicates
from memory_pipeline.store.external_index import parse_index_names


@dg.asset(
    group_name=GROUP, pool=POOL, kinds={"duckdb"}, owners=OWNERS, tags={"component": "cortex_dedupe"},
    output_required=False,
)
def exact_duplicates(
    context: dg.AssetExecutionContext, store: MemoryStoreResource, engine: EngineConfig
) -> Iterator[dg.Output[RunStart]]:
    """The run's first write. Takes the store's consolidation lease (a second run at the same time skips and
    writes nothing), snapshots the store, reconciles what an interrupted run left pending, takes the token
    baseline, and then archives exact duplicates (same text) so no LLM call is spent on identical text."""
    # The lease is the design seed's lock; the dedupe its cortex_dedupe.
    store.check_outputs()  # an unusable reports/ or backups/ stops the run before its first write
    db = store.open()
    now = engine.now()
    run_id = context.run.run_id
    try:
        with db.transaction() as con:
            held = lease.acquire(
                con, run_id, utcnow(), timedelta(hours=engine.lease_ttl_hours),
                lambda other: _lease_alive(context.instance, other, db.path),
            )
            # recorded now, so that a run that dies before its report can still be rolled back by time
            con.execute("INSERT OR REPLACE INTO consolidation_runs VALUES (?, ?, NULL, NULL, NULL)", [run_id, utcnow()])
    except lease.LeaseBusy as busy:
        context.log.warning(str(busy))
        return  # no output: every downstream step is skipped and the run ends cleanly
    _beat(context, db.path, held, engine.lease_heartbeat_seconds)
    hold_point("night_lease_held")  # tests: a night that holds the lease, for as long as the test needs
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


def _beat(context: dg.AssetExecutionContext, store_path: Path, held: lease.Lease, every_s: float) -> None:
    """Prove to other hosts that this night is alive while it holds the lease, when this process runs all of it;
    `lease.release` (at the report, or a BLOCKED night's end) stops the beat. Earlier holders' beats go."""
    try:
        lease.clear_beats(store_path, keep=held.holder)
        if runs_whole_night_here(context):
            lease.start_heartbeat(store_path, held.holder, every_s, held.expires_at, context.log.warning)
    except OSError as exc:  # no heartbeat: other hosts then trust the lease until it expires, as before
        context.log.warning(f"store lease heartbeat not started ({exc}): other hosts wait for the lease's expiry")
