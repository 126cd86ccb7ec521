"""Watched agent session folders: Claude Code / Codex / message-log files that are new or grew, once quiet for
MEMORY_PIPELINE_TRANSCRIPT_QUIET_MINUTES, become transcripts, and the journals of their days are requested as
`journal_daily` runs, one per day, as the daily schedule requests them."""

from __future__ import annotations

import hashlib
import json
import time

import dagster as dg

from memory_pipeline.defs.journals.partitions import daily_partitions
from memory_pipeline.defs.journals.schedules import journal_daily
from memory_pipeline.errors import UserError
from memory_pipeline.journals.imports.importer import commit_imported, import_paths
from memory_pipeline.journals.imports.watch import (
    QUIET_ENV,
    SOURCES_ENV,
    configured_sources,
    quiet_minutes,
    remember,
    scan,
)
from memory_pipeline.resources import MemoryStoreResource

TICK_BUDGET_S = 40.0  # files are imported until then; the rest wait for the next tick (a sensor tick times out)


@dg.sensor(
    job=journal_daily,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description=f"Imports agent session files (Claude Code, Codex CLI, message logs) from the folders in "
    f"{SOURCES_ENV} as transcripts (`memory-pipeline transcripts import`) once they have been quiet for "
    f"{QUIET_ENV} minutes (default 10; a live session is left until then), then requests journal_daily for each "
    "day whose transcripts changed; MEMORY.md follows with the weekly schedule. Stopped by default.",
)
def agent_transcripts_sensor(context: dg.SensorEvaluationContext, store: MemoryStoreResource) -> dg.SensorResult:
    sources = configured_sources()
    if not sources:
        return dg.SensorResult(skip_reason=f"{SOURCES_ENV} is not set: no folders to watch")
    try:
        quiet = quiet_minutes()
    except UserError as exc:
        return dg.SensorResult(skip_reason=str(exc))
    seen: dict[str, list[int]] = json.loads(context.cursor) if context.cursor else {}
    found = scan(sources, seen, time.time_ns(), quiet * 60)
    for line in found.missing:
        context.log.warning(f"transcript import: {line}")
    waiting = f"; {len(found.live)} live session file(s) wait until quiet for {quiet:g} min" if found.live else ""
    if not found.ready:
        cursor = json.dumps(remember(seen, found, []))
        return dg.SensorResult(skip_reason=f"no new or grown quiet session files{waiting}", cursor=cursor)
    home = store.home_path
    deadline = time.monotonic() + TICK_BUDGET_S
    report = import_paths(found.ready, home / "raw" / "conversations", stop=lambda: time.monotonic() > deadline)
    cursor = json.dumps(remember(seen, found, report.done))
    for line in [*report.errors, *report.notes]:
        context.log.warning(f"transcript import: {line}")
    left = len(found.ready) - len(report.done)
    context.log.info(f"transcript import: {len(report.done)} file(s) read, {len(report.written)} transcript(s) "
                     f"written{f', {left} left for the next tick' if left else ''}{waiting}")  # fmt: skip
    if report.written:
        outcome = commit_imported(home, report)
        if outcome.error:
            context.log.warning(f"transcript import: written but not committed: {outcome.error}")
    valid = set(daily_partitions.get_partition_keys(dynamic_partitions_store=context.instance))
    requests = []
    for day in report.days:
        key = day.isoformat()
        if key not in valid:  # before the journals' first day: the code location must be reloaded first
            context.log.warning(f"transcript import: {key} is not a journal partition yet; reload the code location")
            continue
        versions = " ".join(f"{w.session_id}@{w.version}" for w in report.written if w.day == day)
        digest = hashlib.sha256(versions.encode()).hexdigest()[:12]  # these transcript versions: one run
        requests.append(dg.RunRequest(run_key=f"import-{key}-{digest}", partition_key=key))
    return dg.SensorResult(run_requests=requests, cursor=cursor)
