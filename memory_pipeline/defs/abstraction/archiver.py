"""Archiver (seed 000), phase 2: archive the sources, clusters committed in batches."""

import dagster as dg

from memory_pipeline.abstraction import archive
from memory_pipeline.abstraction.outcomes import ARCHIVE_BATCH, ClusterOutcome
from memory_pipeline.defs.abstraction.common import GROUP
from memory_pipeline.operator.metadata import OWNERS
from memory_pipeline.operator.progress import ThrottledProgress
from memory_pipeline.resources import EngineConfig, MemoryStoreResource
from memory_pipeline.resources.store import POOL
from memory_pipeline.store.external_index import parse_index_names


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
            archived += archive.commit_batch(con, batch, engine.critical_floor, run_id, now, index_names,
                                            context.log.warning, context.log.error)  # fmt: skip
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
