"""Journal pipeline (seed 001 §8.2–8.7): transcripts → sessions → session memories and journals → MEMORY.md.

Daily partitions; each extractor is its own asset with its own `code_version`, so bumping one marks only its
memories (and the journals/MEMORY.md below them) stale, and a backfill of that asset is the reconstruction.

Every asset has a single-run backfill policy: a backfill (UI, daemon or `memory-pipeline reconstruct`) of a range
of days is ONE run whose steps walk the range's days in order, each day replaced in its own transaction (files
written two-phase), with per-day materialisation metadata. A day that fails stops the step with a
`dg.Failure` naming the day and its file (metadata `failed_partition`): that asset's rows of the days before it
are committed, that day's are rolled back, nothing is half-written (`reconstruct` then completes the earlier days
with a run over them and carries on after the failed day).
"""

from collections.abc import Iterator
from datetime import date

import dagster as dg

from memory_pipeline.defs.journals.common import (
    DEFINED_VERSIONS,
    EXTRACTOR_KEYS,
    GROUP,
    IO_MANAGER,
    LINEAGE_CHECK,
    REJECTS_CHECK,
    SESSIONS,
    SINGLE_RUN,
    failing_as,
    run_days,
)
from memory_pipeline.defs.journals.knowledge_files import journals
from memory_pipeline.defs.journals.partitions import START_NOTE, daily_partitions
from memory_pipeline.journals import extraction_runs, tables
from memory_pipeline.journals.extractors import EXTRACTORS
from memory_pipeline.journals.freshness import FINGERPRINT
from memory_pipeline.journals.intake import DATE_MISMATCHES, DUPLICATES, REJECTED, ingest_day
from memory_pipeline.journals.knowledge_writes import raw_root
from memory_pipeline.journals.llm_extractors import LLMSessionExtractor, llm_extractor
from memory_pipeline.journals.transcript import day_folder
from memory_pipeline.operator.partition_keys import time_part
from memory_pipeline.resources import EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.resources.store import POOL


@dg.asset(
    partitions_def=daily_partitions,
    backfill_policy=SINGLE_RUN,
    group_name=GROUP,
    pool=POOL,
    io_manager_key=IO_MANAGER,
    code_version="1",
    kinds={"parquet", "duckdb"},
    check_specs=[
        dg.AssetCheckSpec(REJECTS_CHECK, asset=SESSIONS, description="Every transcript of the run's days parsed.")
    ],
    description="Each day's transcripts (raw/conversations/YYYY/MM/DD) parsed into sessions and turns: Parquet "
    "through the IO manager, and the store's `sessions` table (each day's rows replaced in its own transaction). "
    "A transcript that breaks the format is listed with path and line and skipped; the others go on. "
    + START_NOTE,
)
def sessions(context: dg.AssetExecutionContext, store: MemoryStoreResource) -> Iterator[object]:
    home = store.home_path
    db = store.open()
    out: dict[str, dict] = {}
    all_rejected: list[str] = []
    for key, day in run_days(context):
        with failing_as("sessions", key, day_folder(raw_root(home), day)):
            intake, frames = ingest_day(db, raw_root(home), day, home)
        parsed, rejected, listed = intake.parsed, intake.rejected, intake.rejected_lines()
        for line in listed:
            context.log.warning(f"transcript rejected: {line}")
        for line in intake.warnings:
            context.log.warning(f"transcript date: {line}")
        if not parsed:
            context.log.info(f"{day}: no transcripts{' that parse' if rejected else ''}; no sessions")
        context.add_asset_metadata(
            {
                "sessions": len(parsed),
                "turns": frames["turns"].num_rows,
                "rejected": len(rejected),
                REJECTED: dg.MetadataValue.json(listed),
                "session_ids": dg.MetadataValue.json([t.session_id for t in parsed]),
                DUPLICATES: dg.MetadataValue.json(intake.duplicates),
                DATE_MISMATCHES: dg.MetadataValue.json(intake.warnings),
                FINGERPRINT: intake.fingerprint,
            },
            partition_key=key,
        )
        out[key] = frames
        all_rejected += listed
    yield dg.Output(out)
    yield dg.AssetCheckResult(
        check_name=REJECTS_CHECK,
        asset_key=SESSIONS,
        passed=not all_rejected,
        severity=dg.AssetCheckSeverity.WARN,
        description=(f"{len(all_rejected)} transcript(s) rejected" if all_rejected else "all transcripts parsed"),
        metadata={"rejected": dg.MetadataValue.json(all_rejected)},
    )


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            key,
            deps=[SESSIONS],
            group_name=GROUP,
            code_version=DEFINED_VERSIONS[name],
            partitions_def=daily_partitions,
            description=f"{EXTRACTORS[name].description} Memories with source `{EXTRACTORS[name].source}` "
            f"from the offline extractor, or `{llm_extractor(name).source}` when the `llm` resource extracts "
            "them with Claude.",
            kinds={"duckdb"},
            skippable=True,
        )
        for name, key in EXTRACTOR_KEYS.items()
    ],
    check_specs=[
        dg.AssetCheckSpec(
            LINEAGE_CHECK,
            asset=key,
            description="Replaced memories that a summary already archived are kept (lineage intact) — listed.",
        )
        for key in EXTRACTOR_KEYS.values()
    ],
    ins={"sessions": dg.AssetIn(SESSIONS)},
    can_subset=True,
    pool=POOL,
    backfill_policy=SINGLE_RUN,
    name="session_memories",
)
def session_memories(
    context: dg.AssetExecutionContext,
    store: MemoryStoreResource,
    llm: LLMResource,
    engine: EngineConfig,
    sessions: dict,
) -> Iterator[object]:
    """The selected extractors over each day's sessions — by Claude when the `llm` resource uses it (decided per
    run; one usage ledger and cost cap for the whole run), offline otherwise or for a session whose LLM answer
    failed validation — then, per day, one transaction that replaces exactly their memories for that day's
    sessions. A day's LLM calls happen before its transaction opens."""
    days = [(key, tables.from_tables(sessions[key])) for key, _ in run_days(context)]
    selected = [n for n, k in EXTRACTOR_KEYS.items() if k in context.selected_asset_keys]
    use_llm = llm.uses_anthropic()
    any_sessions = any(transcripts for _, transcripts in days)
    asker = _session_extractor(context, llm, store, engine) if use_llm and selected and any_sessions else None
    for line in extraction_runs.version_warnings(selected, use_llm, DEFINED_VERSIONS):
        context.log.warning(line)
    db = store.open()
    kept_by_name: dict[str, list[str]] = {name: [] for name in selected}
    for key, transcripts in days:
        folder = day_folder(raw_root(store.home_path), date.fromisoformat(time_part(key)))
        with failing_as("session_memories", key, folder):
            outcomes = extraction_runs.extract_day(db, selected, transcripts, asker, context.run.run_id,
                                                   context.log.warning)  # fmt: skip
        for run, o in outcomes:
            kept_by_name[run.name] += o.kept_archived or []
            context.add_asset_metadata(
                {
                    **run.summary(llm.distiller_name(), DEFINED_VERSIONS[run.name]),
                    "fallbacks": dg.MetadataValue.json(run.fallbacks),
                    **extraction_runs.outcome_metadata(o),
                },
                asset_key=EXTRACTOR_KEYS[run.name],
                partition_key=key,
            )
    for name in selected:
        asset_key = EXTRACTOR_KEYS[name]
        yield dg.MaterializeResult(asset_key=asset_key)
        check_key = dg.AssetCheckKey(asset_key, LINEAGE_CHECK)
        if check_key in context.selected_asset_check_keys:
            kept = kept_by_name[name]
            yield dg.AssetCheckResult(
                asset_key=asset_key,
                check_name=LINEAGE_CHECK,
                passed=not kept,
                severity=dg.AssetCheckSeverity.WARN,
                description=extraction_runs.lineage_note(kept),
                metadata={"kept_archived_ids": dg.MetadataValue.json(kept)},
            )


def _session_extractor(
    context: dg.AssetExecutionContext, llm: LLMResource, store: MemoryStoreResource, engine: EngineConfig
) -> LLMSessionExtractor:
    """Calls share the run's usage ledger, rate limit and cost cap (COMPRESSION_MAX_COST_USD) with its other
    steps, exactly as the abstraction engine's and the compactor's."""
    distiller = llm.get_distiller(
        reports_dir=store.reports_dir,
        run_id=context.run.run_id,
        rate_limit_per_min=engine.rate_limit_per_min,
        max_cost_usd=engine.max_cost_usd,
        log=context.log.info,
    )
    return LLMSessionExtractor(distiller)


DAILY_ASSETS = [sessions, session_memories, journals]
