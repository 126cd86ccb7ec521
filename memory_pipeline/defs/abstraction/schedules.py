"""The nightly consolidation job, its dry run, and its schedule (seed 000 §7.2: 03:30 America/New_York)."""

import os
from typing import Any

import dagster as dg

from memory_pipeline.defs.abstraction.archiver import archive_updates
from memory_pipeline.defs.abstraction.atom_enricher import atoms
from memory_pipeline.defs.abstraction.cluster_finder import clusters, eligible_memories, memory_embeddings
from memory_pipeline.defs.abstraction.common import GROUP
from memory_pipeline.defs.abstraction.cortex_dedupe import exact_duplicates
from memory_pipeline.defs.abstraction.distiller import distillations
from memory_pipeline.defs.abstraction.memory_writer import compressed_memories
from memory_pipeline.defs.abstraction.reporter import report
from memory_pipeline.defs.abstraction.versioner import fact_versions, validity_updates

NIGHTLY_CRON = os.environ.get("NIGHTLY_CONSOLIDATION_CRON", "30 3 * * *")
NIGHTLY_TZ = os.environ.get("NIGHTLY_CONSOLIDATION_TZ", "America/New_York")
# Steps run one after another and every store writer waits for the single-writer pool anyway, so a process per
# step only adds interpreter start-up (about 6× the run time on 2 cores); the launchpad can still choose
# `multiprocess`.
IN_PROCESS: dict[str, Any] = {"execution": {"config": {"in_process": {}}}}

nightly_consolidation = dg.define_asset_job(
    "nightly_consolidation",
    selection=dg.AssetSelection.groups(GROUP),
    description="The nightly consolidation: dedupe, mark superseded values of a fact, embed, cluster, distil, "
    "write summaries (phase 1), archive "
    "their sources (phase 2), atoms, report. Runs from nightly_consolidation_schedule or `memory-pipeline run`. "
    "On failure read the failed step's log; a re-run takes over what the failed run left, and "
    "`memory-pipeline rollback` undoes a run you do not want.",
    # One consolidation at a time: the run-level tag limit lives in dagster.yaml's run queue.
    tags={"memory_pipeline/consolidation": "nightly"},
    config=IN_PROCESS,
)

consolidation_dry_run = dg.define_asset_job(
    "consolidation_dry_run",
    selection=dg.AssetSelection.assets(eligible_memories, clusters),
    description="Scan and cluster only, to preview a night (`memory-pipeline run --dry-run`); writes nothing to "
    "the store, so it is always safe to re-run. Launched by hand, never scheduled.",
    config=IN_PROCESS,
)

# Listed so a reader sees the pipeline order in one place.
PIPELINE = [
    exact_duplicates,
    fact_versions,
    validity_updates,
    memory_embeddings,
    eligible_memories,
    clusters,
    distillations,
    compressed_memories,
    archive_updates,
    atoms,
    report,
]

nightly_schedule = dg.ScheduleDefinition(
    name="nightly_consolidation_schedule",
    job=nightly_consolidation,
    cron_schedule=NIGHTLY_CRON,
    execution_timezone=NIGHTLY_TZ,
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description=f"Starts nightly_consolidation every night (cron `{NIGHTLY_CRON}`, {NIGHTLY_TZ}; "
    "NIGHTLY_CONSOLIDATION_CRON and NIGHTLY_CONSOLIDATION_TZ change it). Stopped by default: turn it on in the "
    "UI. A night skipped because another run holds the store is not an error; a failed night sends an alert.",
)
