"""Watched session folders: new or grown Claude Code / Codex / message-log files become transcripts, and the
journals of their days are requested as `journal_daily` runs, one per day, as the daily schedule requests them."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import dagster as dg

from memory_pipeline.defs.journals.partitions import daily_partitions
from memory_pipeline.defs.journals.schedules import journal_daily
from memory_pipeline.journals.imports.importer import commit_imported, import_paths, source_files
from memory_pipeline.resources import MemoryStoreResource

SOURCES_ENV = "MEMORY_PIPELINE_TRANSCRIPT_SOURCES"


def configured_sources(environ: dict[str, str] | None = None) -> list[Path]:
    """The folders (or files) in MEMORY_PIPELINE_TRANSCRIPT_SOURCES, separated like PATH (':' on Unix)."""
    value = (os.environ if environ is None else environ).get(SOURCES_ENV, "")
    return [Path(p).expanduser() for p in value.split(os.pathsep) if p.strip()]


def changed_files(sources: list[Path], cursor: str | None) -> tuple[list[Path], dict[str, list[int]]]:
    """Files that are new or whose size or modification time changed since the cursor, and the new cursor."""
    seen: dict[str, list[int]] = json.loads(cursor) if cursor else {}
    files, _missing = source_files(sources)
    now: dict[str, list[int]] = {}
    changed = []
    for f in files:
        try:
            stat = f.stat()
        except OSError:
            continue
        now[str(f)] = [stat.st_size, stat.st_mtime_ns]
        if seen.get(str(f)) != now[str(f)]:
            changed.append(f)
    return changed, now


@dg.sensor(
    job=journal_daily,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description=f"Imports new and grown agent session files (Claude Code, Codex CLI, message logs) from the "
    f"folders in {SOURCES_ENV} as transcripts (`memory-pipeline transcripts import`), then requests journal_daily "
    "for each day whose transcripts changed; MEMORY.md follows with the weekly schedule. Stopped by default.",
)
def transcript_sources_sensor(context: dg.SensorEvaluationContext, store: MemoryStoreResource) -> dg.SensorResult:
    sources = configured_sources()
    if not sources:
        return dg.SensorResult(skip_reason=f"{SOURCES_ENV} is not set: no folders to watch")
    changed, cursor = changed_files(sources, context.cursor)
    if not changed:
        return dg.SensorResult(skip_reason="no new or grown session files", cursor=json.dumps(cursor))
    home = store.home_path
    report = import_paths(changed, home / "raw" / "conversations")
    for line in report.errors:
        context.log.warning(f"transcript import: {line}")
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
    return dg.SensorResult(run_requests=requests, cursor=json.dumps(cursor))
