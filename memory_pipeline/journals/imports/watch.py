"""Watched session folders, for the `agent_transcripts_sensor` and `transcripts import --watch`: which files are new
or changed since they were last imported, and which of those are quiet (not written to for N minutes) and so
ready — a live session is left until it has been quiet, then imported whole.

State is `{path: [size, mtime_ns]}` of the files imported (or refused) so far: a file is looked at again only
when its size or modification time changed. No Dagster here; the sensor keeps the state in its cursor, the CLI in
memory.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memory_pipeline.errors import UserError
from memory_pipeline.journals.imports.importer import source_files

SOURCES_ENV = "MEMORY_PIPELINE_TRANSCRIPT_SOURCES"
QUIET_ENV = "MEMORY_PIPELINE_TRANSCRIPT_QUIET_MINUTES"
QUIET_DEFAULT = 10.0  # minutes a session file must go unwritten before it is imported


def configured_sources(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The folders (or files) in MEMORY_PIPELINE_TRANSCRIPT_SOURCES, separated like PATH (':' on Unix)."""
    value = (os.environ if environ is None else environ).get(SOURCES_ENV, "")
    return [Path(p.strip()).expanduser() for p in value.split(os.pathsep) if p.strip()]


def quiet_minutes(environ: Mapping[str, str] | None = None) -> float:
    """MEMORY_PIPELINE_TRANSCRIPT_QUIET_MINUTES (default 10): minutes ≥ 0, or a UserError naming it."""
    raw = (os.environ if environ is None else environ).get(QUIET_ENV, "").strip()
    if not raw:
        return QUIET_DEFAULT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise UserError(f"{QUIET_ENV}={raw!r}: expected a number of minutes ≥ 0")
    return value


@dataclass
class Scan:
    ready: list[Path] = field(default_factory=list)  # new or changed, and quiet: to import now
    live: list[Path] = field(default_factory=list)  # new or changed, but written to within the quiet time
    stats: dict[str, list[int]] = field(default_factory=dict)  # every file found: [size, mtime_ns] now
    missing: list[str] = field(default_factory=list)  # named sources that do not exist


def scan(sources: Iterable[Path], seen: Mapping[str, list[int]], now_ns: int, quiet_s: float) -> Scan:
    """The files under `sources` that are new or changed since `seen`, split into quiet (`ready`) and `live`."""
    files, missing = source_files(list(sources))
    out = Scan(missing=missing)
    for f in files:
        try:
            st = f.stat()
        except OSError:  # gone since it was listed
            continue
        key = str(f)
        out.stats[key] = [st.st_size, st.st_mtime_ns]
        if seen.get(key) == out.stats[key]:
            continue
        (out.ready if now_ns - st.st_mtime_ns >= quiet_s * 1e9 else out.live).append(f)
    return out


def remember(seen: Mapping[str, list[int]], found: Scan, done: Iterable[Path]) -> dict[str, list[int]]:
    """The state after importing `done`: those at their size and time now, the others as they were, files gone
    forgotten (so the state stays as large as the folders)."""
    state = {k: v for k, v in seen.items() if k in found.stats}
    for f in done:
        if (key := str(f)) in found.stats:
            state[key] = found.stats[key]
    return state
