"""Knowledge retention: the night grades itself after phase 1 and before anything is archived (blocking)."""

import time
from typing import Any

import dagster as dg

from memory_pipeline.abstraction import candidate, retention
from memory_pipeline.abstraction.outcomes import ClusterOutcome
from memory_pipeline.defs.abstraction.memory_writer import compressed_memories
from memory_pipeline.operator.progress import ThrottledProgress
from memory_pipeline.resources import EmbedderResource, EngineConfig, MemoryStoreResource
from memory_pipeline.resources.store import POOL


def _figures(r: retention.Retention) -> dict[str, Any]:
    return {
        "retention": r.retention,
        "floor": r.floor,
        "probes": r.probes,
        "probes_built": r.built,
        "kept_before": r.kept_before,
        "kept_after": r.kept_after,
        "gained": r.gained,
        "memories_to_archive": r.archived,
        "budget_tokens": r.budget_tokens,
        "read_path_errors": r.errors,
        "seconds": r.seconds,
        "worst": r.worst_text(),
        "worst_clusters": dg.MetadataValue.json([w.__dict__ for w in r.worst]),
    }


@dg.asset_check(
    asset=compressed_memories,
    blocking=True,
    pool=POOL,
    description="Knowledge retention before the archive: a seeded sample of the memories the night would archive "
    "(MEMORY_PIPELINE_RETENTION_PROBES, default 300; 0 turns the probes off) becomes cloze probes — numbers, "
    "dates, identifiers and names masked — asked (at least 20; then for at most MEMORY_PIPELINE_RETENTION_SECONDS, "
    "default 60, and at most MEMORY_PIPELINE_RETENTION_SHARE, default 0.1, of the night's time so far) of "
    "`context` (MEMORY_PIPELINE_RETENTION_BUDGET tokens, default "
    "1000) before the night and as the night would leave the store. Below MEMORY_PIPELINE_RETENTION_FLOOR "
    "(default 0.97) of the probes kept, the night stops before `archive_updates`: nothing is archived, its "
    "pending summaries are removed, and the metadata names the clusters that lost most. Rerun with a lower "
    "floor to accept the night, or roll it back.",
)
def knowledge_retention(
    context: dg.AssetCheckExecutionContext,
    store: MemoryStoreResource,
    embedder: EmbedderResource,
    engine: EngineConfig,
    compressed_memories: list[ClusterOutcome],
) -> dg.AssetCheckResult:
    run_id = context.run.run_id
    record = context.instance.get_run_record_by_id(run_id)
    started = record.start_time if record is not None else None
    seconds = candidate.probe_seconds(engine.retention_seconds, engine.retention_share,
                                      time.time() - started if started else None)  # fmt: skip
    settings = candidate.ProbeSettings(
        engine.retention_floor, engine.retention_probes, engine.retention_budget, engine.retention_seed,
        engine.critical_floor, seconds,
    )
    encoder = (embedder.encode, embedder.model) if embedder.can_encode else None

    def refresh(home: Any) -> Any:
        from memory_pipeline.search import build_index, refresh_index

        return build_index(home, *encoder) if encoder is not None else refresh_index(home)

    r = candidate.grade_night(store.open(), store.home_path, compressed_memories, settings, run_id, engine.now(),
                              encoder, refresh,
                              lambda n: ThrottledProgress(context.log.info, "knowledge retention: probes", n,
                                                          interval=30.0).update)  # fmt: skip
    context.log.info(f"{r.line()} (floor {r.floor}, {r.seconds:.1f} s)")
    if not r.passed:
        _, removed = candidate.stop_night(store.open(), r)
        context.log.error(f"knowledge retention {r.retention:.3f} below the floor {r.floor}: nothing archived, "
                          f"{removed} pending summaries removed; worst: {r.worst_text()}")  # fmt: skip
    retention.save(store.reports_dir, r)
    return dg.AssetCheckResult(
        passed=r.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=_figures(r),
        description=None if r.passed else (
            f"retention {r.retention:.3f} below the floor {r.floor}: {r.kept_after} of {r.kept_before} probes kept; "
            f"worst clusters: {r.worst_text()}. Nothing was archived; rerun with MEMORY_PIPELINE_RETENTION_FLOOR "
            "lowered to accept the night, or roll it back"
        ),
    )
