"""The knowledge files (seed 001 §8.4–8.6): each day's journal, the weekly MEMORY.md roll-up and its line cap, and
the journal archive. The writing and committing is `journals.knowledge_writes`; these assets pick the days and
weeks, and report."""

from datetime import date, datetime, timedelta
from pathlib import Path

import dagster as dg

from memory_pipeline.defs.journals.common import EXTRACTOR_KEYS, GROUP, SESSIONS, SINGLE_RUN, failing_as, run_days
from memory_pipeline.defs.journals.partitions import START_NOTE, daily_partitions, weekly_partitions
from memory_pipeline.faults import crash_point
from memory_pipeline.journals import knowledge, knowledge_writes, tables
from memory_pipeline.journals.freshness import FINGERPRINT, carried
from memory_pipeline.operator.partition_keys import time_part
from memory_pipeline.resources import MemoryStoreResource


@dg.asset(
    partitions_def=daily_partitions,
    backfill_policy=SINGLE_RUN,
    group_name=GROUP,
    deps=list(EXTRACTOR_KEYS.values()),
    ins={"sessions": dg.AssetIn(SESSIONS)},
    code_version="1",
    kinds={"markdown"},
    description="knowledge/journal/YYYY-MM-DD.md: frontmatter (type: journal, date, sessions), bullets grouped by "
    "topic, from the current extractors' memories of the day. A day without sessions writes no file. "
    + START_NOTE,
)
def journals(context: dg.AssetExecutionContext, store: MemoryStoreResource, sessions: dict) -> dg.MaterializeResult:
    home = store.home_path
    db = store.open()
    crash_point("journals_step")
    for key, day in run_days(context):
        path = knowledge.journal_path(knowledge_writes.knowledge_root(home), day)
        transcripts = tables.from_tables(sessions[key])
        table = sessions[key].get("sessions")
        built_from = carried(table.schema.metadata if table is not None else None)  # what imports compare with
        if not transcripts:
            context.log.info(f"{day}: no transcripts, no journal")
            context.add_asset_metadata({"sessions": 0, "written": False, "note": "no transcripts that day",
                                        FINGERPRINT: built_from}, partition_key=key)  # fmt: skip
            continue
        with failing_as("journals", key, path):
            written = knowledge_writes.write_journal(db, home, day, path, transcripts, context.log)
        metadata = {
            "path": dg.MetadataValue.path(str(path)),
            "sessions": len(transcripts),
            "bullets": written.text.count("\n- "),
            "written": written.changed,
            "preview": dg.MetadataValue.md(written.text[:2000]),
            FINGERPRINT: built_from,
        }
        context.add_asset_metadata(metadata, partition_key=key)
    return dg.MaterializeResult()


def week_days(week_key: str) -> list[date]:
    """The seven days (Sunday–Saturday) of a weekly partition."""
    window = weekly_partitions.time_window_for_partition_key(week_key)
    first = window.start.date()
    return [first + timedelta(days=i) for i in range((window.end - window.start).days)]


@dg.asset(
    partitions_def=weekly_partitions,
    backfill_policy=SINGLE_RUN,
    group_name=GROUP,
    deps=[dg.AssetKey("journals")],
    code_version="1",
    kinds={"markdown"},
    description="knowledge/memory/MEMORY.md updated from the week's journals: date-prefixed Key Decisions, "
    "Lessons Learned and Active Context, stale entries dropped, at most 200 lines. A range of weeks is one "
    "run that rolls the weeks up in order, exactly as one run per week would.",
)
def memory_md(context: dg.AssetExecutionContext, store: MemoryStoreResource) -> dg.MaterializeResult:
    home = store.home_path
    path = knowledge_writes.memory_md_path(home)
    crash_point("memory_md_step")
    for key in context.partition_keys:
        with failing_as("memory_md", key, path):
            week = time_part(key)
            rollup = knowledge_writes.rollup_week(home, week, week_days(week), path, context.log)
        metadata = {
            "path": dg.MetadataValue.path(str(path)),
            "journals": rollup.journals,
            "lines": knowledge.line_count(rollup.text),
            **{s.lower().replace(" ", "_"): n for s, n in rollup.sections.items()},
            "written": rollup.changed,
        }
        context.add_asset_metadata(metadata, partition_key=key)
    return dg.MaterializeResult()


@dg.asset_check(asset=memory_md, description="MEMORY.md stays short enough to load whole: WARN at ≥180 "
                "lines, ERROR at ≥220.")
def memory_md_line_cap(store: MemoryStoreResource) -> dg.AssetCheckResult:
    return memory_cap_result(knowledge_writes.memory_md_path(store.home_path))


def memory_cap_result(path: Path) -> dg.AssetCheckResult:
    if not path.exists():
        return dg.AssetCheckResult(passed=True, description="no MEMORY.md yet", metadata={"lines": 0})
    lines = knowledge.line_count(path.read_text(encoding="utf-8"))
    status = knowledge.cap_status(lines)
    return dg.AssetCheckResult(
        passed=status == "ok",
        severity=dg.AssetCheckSeverity.ERROR if status == "error" else dg.AssetCheckSeverity.WARN,
        description=f"MEMORY.md has {lines} lines (cap {knowledge.MEMORY_LINE_CAP}; warn ≥180, error ≥220)",
        metadata={"lines": lines, "status": status},
    )


class ArchiveConfig(dg.Config):
    as_of: str = ""  # YYYY-MM-DD; default today in the journal timezone
    # None: MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS (default 90), read when the run starts, not at import time
    retention_days: int | None = None


@dg.asset(
    group_name=GROUP,
    deps=[dg.AssetKey("journals")],
    kinds={"markdown"},
    description="Journals older than the retention (90 days) move to archive/journal/; nothing is deleted.",
)
def journal_archive(
    context: dg.AssetExecutionContext, config: ArchiveConfig, store: MemoryStoreResource
) -> dg.MaterializeResult:
    from zoneinfo import ZoneInfo

    from memory_pipeline.defs.journals.partitions import journal_timezone

    today = date.fromisoformat(config.as_of) if config.as_of else datetime.now(ZoneInfo(journal_timezone())).date()
    from memory_pipeline.operator.environment import journal_retention_days

    if config.retention_days is not None and config.retention_days < 0:
        raise dg.Failure(f"retention_days={config.retention_days}: must be ≥ 0")
    days = journal_retention_days() if config.retention_days is None else config.retention_days
    moved = knowledge_writes.archive_journals(store.home_path, today, days, context.log)
    return dg.MaterializeResult(
        metadata={
            "moved": len(moved),
            "as_of": str(today),
            "retention_days": days,
            "files": dg.MetadataValue.json([p.name for p in moved]),
        }
    )
