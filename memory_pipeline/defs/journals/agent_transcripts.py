"""Watched agent session folders: Claude Code / Codex / message-log files that are new or grew, once quiet for
MEMORY_PIPELINE_TRANSCRIPT_QUIET_MINUTES, become transcripts, and the journals of their days are requested as
`journal_daily` runs, one per day, as the daily schedule requests them."""

from __future__ import annotations

import json
import time
from datetime import date
from pathlib import Path

import dagster as dg

from memory_pipeline.defs.journals.freshness import stale_journal_days
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
MAX_REQUESTS = 30  # days requested per tick at most (a workspace whose journals were never built); the rest next


@dg.sensor(
    job=journal_daily,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description=f"Imports agent session files (Claude Code, Codex CLI, message logs) from the folders in "
    f"{SOURCES_ENV} as transcripts (`memory-pipeline transcripts import`) once they have been quiet for "
    f"{QUIET_ENV} minutes (default 10; a live session is left until then), then requests journal_daily for each "
    "day whose journal is older than its transcripts (imported now, or earlier by a tick or an import that did not "
    "rebuild it); MEMORY.md follows with the weekly schedule. Stopped by default.",
)
def agent_transcripts_sensor(context: dg.SensorEvaluationContext, store: MemoryStoreResource) -> dg.SensorResult:
    sources = configured_sources()
    if not sources:
        return dg.SensorResult(skip_reason=f"{SOURCES_ENV} is not set: no folders to watch")
    try:
        quiet = quiet_minutes()
    except UserError as exc:
        return dg.SensorResult(skip_reason=str(exc))
    seen, requested = read_cursor(context.cursor)
    found = scan(sources, seen, time.time_ns(), quiet * 60)
    for line in found.missing:
        context.log.warning(f"transcript import: {line}")
    waiting = f"; {len(found.live)} live session file(s) wait until quiet for {quiet:g} min" if found.live else ""
    home = store.home_path
    valid = set(daily_partitions.get_partition_keys(dynamic_partitions_store=context.instance))
    done: list[Path] = []
    if found.ready:
        deadline = time.monotonic() + TICK_BUDGET_S
        report = import_paths(found.ready, home / "raw" / "conversations", stop=lambda: time.monotonic() > deadline)
        done = report.done
        for line in [*report.errors, *report.notes, *report.warnings]:
            context.log.warning(f"transcript import: {line}")
        left = len(found.ready) - len(report.done)
        context.log.info(f"transcript import: {len(report.done)} file(s) read, {len(report.written)} transcript(s) "
                         f"written{f', {left} left for the next tick' if left else ''}{waiting}")  # fmt: skip
        if report.written:
            outcome = commit_imported(home, report)
            if outcome.error:
                context.log.warning(f"transcript import: written but not committed: {outcome.error}")
        for day in report.days:
            if day.isoformat() not in valid:
                context.log.warning(f"transcript import: {day} is not a journal partition yet; reload the code "
                                    "location")  # fmt: skip
    # every day whose journal is older than its transcripts, whoever wrote them and however the last try ended
    stale = stale_journal_days(context.instance, home / "raw" / "conversations", valid)
    due = [day for day, fp in stale.items() if requested.get(day.isoformat()) != fp]
    requests = []
    for day in due[:MAX_REQUESTS]:
        key, fp = day.isoformat(), stale[day]
        requests.append(dg.RunRequest(run_key=f"import-{key}-{fp}", partition_key=key))
        requested[key] = fp
    requested = {k: v for k, v in requested.items() if date.fromisoformat(k) in stale}  # built since: forgotten
    cursor = json.dumps({"files": remember(seen, found, done), "requested": requested})
    if requests:
        more = f"; {len(due) - MAX_REQUESTS} more day(s) on the next ticks" if len(due) > MAX_REQUESTS else ""
        context.log.info(f"journal_daily requested for {', '.join(r.partition_key or '' for r in requests)}{more}")
        return dg.SensorResult(run_requests=requests, cursor=cursor)
    if not found.ready:
        return dg.SensorResult(skip_reason=f"no new or grown quiet session files{waiting}", cursor=cursor)
    return dg.SensorResult(run_requests=[], cursor=cursor)


def read_cursor(cursor: str | None) -> tuple[dict[str, list[int]], dict[str, str]]:
    """(files imported: {path: [size, mtime_ns]}, days requested: {day: fingerprint}); an older cursor was the
    files alone."""
    state = json.loads(cursor) if cursor else {}
    if isinstance(state.get("files"), dict):
        return state["files"], dict(state.get("requested") or {})
    return state, {}

