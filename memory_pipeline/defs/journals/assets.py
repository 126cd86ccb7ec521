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
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path

import dagster as dg

from memory_pipeline.defs.journals.partitions import daily_partitions, weekly_partitions
from memory_pipeline.journals import knowledge, tables
from memory_pipeline.journals.commit_messages import KnowledgeChange, template
from memory_pipeline.journals.extractors import EXTRACTORS, Extractor, category_of
from memory_pipeline.journals.gitlog import commit_knowledge
from memory_pipeline.journals.intake import (
    DATE_MISMATCHES,
    DUPLICATES,
    REJECTED,
    read_day_checked,
    stored_sessions,
)
from memory_pipeline.journals.llm_extractors import (
    LLMExtractionFailed,
    LLMSessionExtractor,
    llm_configured,
    llm_extractor,
    version_for,
)
from memory_pipeline.journals.transcript import day_folder
from memory_pipeline.operator.partition_keys import time_part
from memory_pipeline.resources import EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.resources.store import POOL
from memory_pipeline.store.db import MemoryStore, atomic, utcnow

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


def raw_root(home: Path) -> Path:
    return home / "raw" / "conversations"


def knowledge_root(home: Path) -> Path:
    return home / "knowledge"


def _days(context: dg.AssetExecutionContext) -> list[tuple[str, date]]:
    """The run's days in order: one for a one-day run, the whole range for a single-run backfill (each with its
    partition key, which in a fleet is agent × day)."""
    return [(key, date.fromisoformat(time_part(key))) for key in context.partition_keys]


@contextmanager
def _failing_as(step: str, key: str, where: Path) -> Iterator[None]:
    """Any error of this day (week) stops the step as a Failure naming the day and the file, so a ranged run
    says which of its days failed; the day's transaction has rolled back, the earlier days are committed."""
    try:
        yield
    except Exception as exc:
        raise dg.Failure(
            description=f"{step}: {key} failed ({where}): {type(exc).__name__}: {exc}",
            metadata={FAILED_PARTITION: key, "path": dg.MetadataValue.path(str(where))},
        ) from exc


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
    "A transcript that breaks the format is listed with path and line and skipped; the others go on.",
)
def sessions(context: dg.AssetExecutionContext, store: MemoryStoreResource) -> Iterator[object]:
    home = store.home_path
    db = store.open()
    out: dict[str, dict] = {}
    all_rejected: list[str] = []
    for key, day in _days(context):
        with _failing_as("sessions", key, day_folder(raw_root(home), day)):
            with db.connect() as con:
                intake = read_day_checked(raw_root(home), day, workspace=home, stored=stored_sessions(con))
            parsed, rejected = intake.parsed, intake.rejected
            frames = tables.to_tables(day, parsed, utcnow())
            with db.connect() as con, atomic(con):
                tables.replace_day_sessions(con, day, frames["sessions"])
        listed = [f"{r.path}:{r.line}: {r.problem}" for r in rejected]
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
            f"offline, `{llm_extractor(name).source}` through the `llm` resource (the seed's prompt).",
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
    days = [(key, tables.from_tables(sessions[key])) for key, _ in _days(context)]
    selected = [n for n, k in EXTRACTOR_KEYS.items() if k in context.selected_asset_keys]
    use_llm = llm.uses_anthropic()
    any_sessions = any(transcripts for _, transcripts in days)
    asker = _session_extractor(context, llm, store, engine) if use_llm and selected and any_sessions else None
    for name in selected:
        if version_for(name, use_llm) != DEFINED_VERSIONS[name]:
            context.log.warning(
                f"{name}: this run's `llm` resource runs version {version_for(name, use_llm)}, the code location "
                f"was loaded with {DEFINED_VERSIONS[name]} (the asset's code_version); the memories' source says "
                "which ran"
            )
    db = store.open()
    kept_by_name: dict[str, list[str]] = {name: [] for name in selected}
    for key, transcripts in days:
        folder = day_folder(raw_root(store.home_path), date.fromisoformat(time_part(key)))
        with _failing_as("session_memories", key, folder):
            runs = [_extract(context, name, transcripts, asker) for name in selected]
            now = utcnow()
            outcomes = []
            with db.connect() as con, atomic(con):
                for run in runs:
                    parts = [
                        tables.replace_extracted(con, extractor, subset, run.found, now, context.run.run_id)
                        for extractor, subset in run.groups(transcripts)
                        if subset
                    ]
                    outcomes.append((run, _merged(run, parts)))
        for run, o in outcomes:
            kept = o.kept_archived or []
            kept_by_name[run.name] += kept
            context.add_asset_metadata(
                {
                    **run.metadata(llm, DEFINED_VERSIONS[run.name]),
                    "source": o.source,
                    "memories": o.produced,
                    "inserted": o.inserted,
                    "unchanged": o.unchanged,
                    "reactivated": o.reactivated,
                    "superseded": o.superseded,
                    "kept_archived": len(kept),
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
                description=(
                    f"{len(kept)} replaced memor{'y was' if len(kept) == 1 else 'ies were'} already archived into "
                    "a summary: kept as they are, so the summary keeps its lineage"
                    if kept
                    else "no replaced memory was archived into a summary"
                ),
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


@dataclass
class _ExtractorRun:
    """One extractor over the day: each session's candidates, and which sessions fell back offline and why."""

    name: str
    mode: str  # llm | offline
    found: dict[str, list] = field(default_factory=dict)
    fallbacks: dict[str, str] = field(default_factory=dict)
    calls: int = 0

    def groups(self, transcripts: list) -> list[tuple[Extractor, list]]:
        offline = EXTRACTORS[self.name]
        if self.mode == "offline":
            return [(offline, transcripts)]
        llm_sessions = [t for t in transcripts if t.session_id not in self.fallbacks]
        fell_back = [t for t in transcripts if t.session_id in self.fallbacks]
        return [(llm_extractor(self.name), llm_sessions), (offline, fell_back)]

    def metadata(self, llm: LLMResource, defined: str) -> dict[str, object]:
        return {
            "mode": self.mode,
            "version": version_for(self.name, self.mode == "llm"),
            "code_version_defined": defined,
            "distiller": llm.distiller_name() if self.mode == "llm" else "offline",
            "llm_calls": self.calls,
            "fallback_sessions": len(self.fallbacks),
            "fallbacks": dg.MetadataValue.json(self.fallbacks),
        }


def _extract(
    context: dg.AssetExecutionContext, name: str, transcripts: list, asker: LLMSessionExtractor | None
) -> _ExtractorRun:
    run = _ExtractorRun(name, "llm" if asker else "offline")
    before = asker.calls if asker else 0
    for t in transcripts:
        if asker is not None:
            try:
                run.found[t.session_id] = asker.find(name, t)
                continue
            except LLMExtractionFailed as exc:
                run.fallbacks[t.session_id] = str(exc)
                context.log.warning(f"{name}: session {t.session_id}: LLM extraction failed ({exc}); offline instead")
        run.found[t.session_id] = EXTRACTORS[name].find(t)
    run.calls = (asker.calls - before) if asker else 0
    return run


def _merged(run: _ExtractorRun, parts: list[tables.ExtractionOutcome]) -> tables.ExtractionOutcome:
    """One outcome per extractor; its source is the version this run chose (fallbacks are in the metadata)."""
    source = llm_extractor(run.name).source if run.mode == "llm" else EXTRACTORS[run.name].source
    out = tables.ExtractionOutcome(run.name, source, kept_archived=[])
    for p in parts:
        out.produced += p.produced
        out.inserted += p.inserted
        out.unchanged += p.unchanged
        out.reactivated += p.reactivated
        out.superseded += p.superseded
        out.kept_archived += p.kept_archived
    return out


@dg.asset(
    partitions_def=daily_partitions,
    backfill_policy=SINGLE_RUN,
    group_name=GROUP,
    deps=list(EXTRACTOR_KEYS.values()),
    ins={"sessions": dg.AssetIn(SESSIONS)},
    code_version="1",
    kinds={"markdown"},
    description="knowledge/journal/YYYY-MM-DD.md: frontmatter (type: journal, date, sessions), bullets grouped by "
    "topic, from the current extractors' memories of the day. A day without sessions writes no file.",
)
def journals(context: dg.AssetExecutionContext, store: MemoryStoreResource, sessions: dict) -> dg.MaterializeResult:
    home = store.home_path
    db = store.open()
    for key, day in _days(context):
        path = knowledge.journal_path(knowledge_root(home), day)
        with _failing_as("journals", key, path):
            metadata = _journal_of_day(context, db, home, day, path, tables.from_tables(sessions[key]))
        context.add_asset_metadata(metadata, partition_key=key)
    return dg.MaterializeResult()


def _journal_of_day(
    context: dg.AssetExecutionContext, db: MemoryStore, home: Path, day: date, path: Path, transcripts: list
) -> dict[str, object]:
    """Write (two-phase) and commit one day's journal; its materialisation metadata."""
    if not transcripts:
        context.log.info(f"{day}: no transcripts, no journal")
        return {"sessions": 0, "written": False, "note": "no transcripts that day"}
    topics = {t.session_id: category_of(t) for t in transcripts}
    # both versions of each extractor: a day may mix LLM memories and offline fallbacks (per session), and the
    # replacement rules keep only one version active per session and extractor
    sources = [e.source for name, e in EXTRACTORS.items()] + [llm_extractor(name).source for name in EXTRACTORS]
    with db.connect() as con:
        rows = tables.day_items(con, list(topics), sources)
    items = [
        knowledge.JournalItem(topic or topics[sid], kind, content, (str(at), sid, kind, content))
        for at, sid, kind, content, topic in rows
    ]
    text = knowledge.journal_text(day, [t.session_id for t in transcripts], items)
    changed = knowledge.write_atomic(path, text)
    if changed:
        change = KnowledgeChange("extract", f"journal {day}", files=(path.relative_to(home).as_posix(),),
                                 sessions=tuple(t.session_id for t in transcripts))  # fmt: skip
        commit_knowledge(home, template(change), tag=f"memory/daily/{day}", log=context.log, paths=change.files)
    return {
        "path": dg.MetadataValue.path(str(path)),
        "sessions": len(transcripts),
        "bullets": text.count("\n- "),
        "written": changed,
        "preview": dg.MetadataValue.md(text[:2000]),
    }


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
    path = knowledge_root(home) / "memory" / "MEMORY.md"
    for key in context.partition_keys:
        with _failing_as("memory_md", key, path):
            metadata = _rollup_week(context, home, time_part(key), path)
        context.add_asset_metadata(metadata, partition_key=key)
    return dg.MaterializeResult()


def _rollup_week(context: dg.AssetExecutionContext, home: Path, key: str, path: Path) -> dict[str, object]:
    """Merge one week's journals into MEMORY.md (two-phase write, then a commit); its metadata."""
    root = knowledge_root(home)
    days = week_days(key)
    found = []
    for d in days:
        for folder in (root / "journal", home / "archive" / "journal"):
            p = folder / f"{d.isoformat()}.md"
            if p.exists():
                found.append(knowledge.parse_journal(p.read_text(encoding="utf-8")))
                break
    existing = knowledge.parse_memory_md(path.read_text(encoding="utf-8")) if path.exists() else []
    merged = knowledge.merge_memory(existing, knowledge.week_entries(found), days[-1])
    text = knowledge.memory_md_text(merged, max([days[-1], *(e.day for s in merged.values() for e in s)]))
    changed = knowledge.write_atomic(path, text)
    if changed:
        year, week, _ = days[-1].isocalendar()  # the ISO week of the week's Saturday
        change = KnowledgeChange("memory", f"weekly rollup {key}", files=(path.relative_to(home).as_posix(),))
        commit_knowledge(home, template(change), tag=f"memory/weekly/{year}-W{week:02d}", log=context.log,
                         paths=change.files)  # fmt: skip
    return {
        "path": dg.MetadataValue.path(str(path)),
        "journals": len(found),
        "lines": knowledge.line_count(text),
        **{s.lower().replace(" ", "_"): len(merged[s]) for s in knowledge.SECTIONS},
        "written": changed,
    }


@dg.asset_check(asset=memory_md, description="The seed's pre-commit rule: WARN at ≥180 lines, ERROR at ≥220.")
def memory_md_line_cap(store: MemoryStoreResource) -> dg.AssetCheckResult:
    return memory_cap_result(knowledge_root(store.home_path) / "memory" / "MEMORY.md")


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

    home = store.home_path
    today = date.fromisoformat(config.as_of) if config.as_of else datetime.now(ZoneInfo(journal_timezone())).date()
    from memory_pipeline.operator.environment import journal_retention_days

    if config.retention_days is not None and config.retention_days < 0:
        raise dg.Failure(f"retention_days={config.retention_days}: must be ≥ 0")
    days = journal_retention_days() if config.retention_days is None else config.retention_days
    old = knowledge.journals_to_archive(knowledge_root(home) / "journal", today, days)
    moved = [knowledge.archive_journal(p, home / "archive" / "journal") for p in old]
    if moved:
        change = KnowledgeChange("maintenance", f"archive {len(moved)} journal(s) before {today}",
                                 files=tuple(p.relative_to(home).as_posix() for p in moved))  # fmt: skip
        sources = [p.relative_to(home).as_posix() for p in old]
        commit_knowledge(home, template(change), tag=None, log=context.log, paths=[*sources, *change.files])
    return dg.MaterializeResult(
        metadata={
            "moved": len(moved),
            "as_of": str(today),
            "retention_days": days,
            "files": dg.MetadataValue.json([p.name for p in moved]),
        }
    )


DAILY_ASSETS = [sessions, session_memories, journals]
ASSETS = [*DAILY_ASSETS, memory_md, journal_archive]
CHECKS = [memory_md_line_cap]
