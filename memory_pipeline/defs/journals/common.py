"""What the journal assets share: their group, keys and IO manager, the single-run backfill policy, and how a
ranged run walks its days and names the one that failed."""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

import dagster as dg

from memory_pipeline.journals.extractors import EXTRACTORS
from memory_pipeline.journals.llm_extractors import llm_configured, version_for
from memory_pipeline.operator.partition_keys import time_part

GROUP = "journals"
IO_MANAGER = "journals_parquet_io_manager"
SESSIONS = dg.AssetKey("sessions")
EXTRACTOR_KEYS = {name: dg.AssetKey(["session_memories", name]) for name in EXTRACTORS}
LINEAGE_CHECK = "archived_lineage_kept"
REJECTS_CHECK = "transcripts_parse"
FAILED_PARTITION = "failed_partition"  # metadata of the dg.Failure a failing day (week) raises
SINGLE_RUN = dg.BackfillPolicy.single_run()
# The version the code location's `llm` resource will run (the LLM one with ANTHROPIC_API_KEY): the assets'
# code_version, so turning the key on or off marks the extractors stale. What actually ran is in the metadata.
DEFINED_VERSIONS = {name: version_for(name, llm_configured()) for name in EXTRACTORS}


def run_days(context: dg.AssetExecutionContext) -> list[tuple[str, date]]:
    """The run's days in order: one for a one-day run, the whole range for a single-run backfill (each with its
    partition key, which in a fleet is agent × day)."""
    return [(key, date.fromisoformat(time_part(key))) for key in context.partition_keys]


@contextmanager
def failing_as(step: str, key: str, where: Path) -> Iterator[None]:
    """Any error of this day (week) stops the step as a Failure naming the day and the file, so a ranged run
    says which of its days failed; the day's transaction has rolled back, the earlier days are committed."""
    try:
        yield
    except Exception as exc:
        raise dg.Failure(
            description=f"{step}: {key} failed ({where}): {type(exc).__name__}: {exc}",
            metadata={FAILED_PARTITION: key, "path": dg.MetadataValue.path(str(where))},
        ) from exc
