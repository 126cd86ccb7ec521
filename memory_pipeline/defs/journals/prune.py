"""Weekly prune by decay (seed 001 §8.5): knowledge files nobody reads move to archive/ (a dry run lists them)."""

import dagster as dg
import pandas as pd

from memory_pipeline.defs.journals.common import GROUP
from memory_pipeline.journals import decay
from memory_pipeline.resources import EngineConfig, MemoryStoreResource
from memory_pipeline.resources.store import POOL


class PruneConfig(dg.Config):
    dry_run: bool = False  # list the candidates and their scores; move nothing


@dg.asset(group_name=GROUP, pool=POOL, kinds={"markdown", "git"})
def knowledge_prune(
    context: dg.AssetExecutionContext, config: PruneConfig, store: MemoryStoreResource, engine: EngineConfig
) -> dg.MaterializeResult:
    """Knowledge files scoring exp(−0.05·days) × references < 0.01 and older than 30 days move to archive/
    (never deleted, still searchable; pinned files never move). `dry_run` lists them with scores."""
    # The decay rule is seed 001 §8.5.
    scored, moved, commit = decay.prune(store.home_path, engine.now().date(), config.dry_run,
                                        warn=context.log.warning)  # fmt: skip
    for line in (*commit.notes, *([commit.error] if commit.error else [])):
        context.log.warning(line)
    candidates = [s for s in scored if s.evict]
    table = pd.DataFrame([vars(s) for s in scored[:50]])
    return dg.MaterializeResult(
        metadata={
            "dry_run": config.dry_run,
            "scored": len(scored),
            "candidates": len(candidates),
            "moved": len(moved),
            "committed": commit.made,
            "files": dg.MetadataValue.md(table.to_markdown(index=False)) if len(table) else "none",
        }
    )


knowledge_prune_job = dg.define_asset_job(
    "knowledge_prune_job", selection=[knowledge_prune],
    description="Moves knowledge files nobody reads any more to archive/ (nothing is deleted); "
    "`memory-pipeline prune` does the same from a shell, with --dry-run to list them first. A failed run moves "
    "nothing it did not commit: fix the cause in the step's log and run it again.",
)
knowledge_prune_schedule = dg.ScheduleDefinition(
    name="knowledge_prune_schedule", job=knowledge_prune_job, cron_schedule="0 3 * * 0",
    description="Sunday 03:00 UTC: runs knowledge_prune_job. Stopped by default, like the "
    "other journal schedules; a failed run is launched again from the job's page.",
)  # Sunday 03:00, stopped by default like the other journal schedules
