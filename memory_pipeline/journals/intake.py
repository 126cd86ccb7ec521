"""A day's transcripts as the `sessions` asset takes them in: parsed, duplicates and date mismatches found.

Session ids are unique across the whole store. The first transcript with an id wins: the one already stored
(its `sessions.path`, on this day while that file is still there, or on any other day), else the first by
file name; every other transcript with that id is rejected naming both paths. `reconstruct` counts every
rejected transcript as a failure (non-zero exit) while the day's other transcripts go on. A transcript whose
folder date differs from its frontmatter `started` date is journaled under the folder's date, with a warning
naming the file and both dates. Pure logic: the asset passes the stored (day, path) of every session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import duckdb
import pyarrow as pa

from memory_pipeline.journals import tables
from memory_pipeline.journals.freshness import SCHEMA_KEY, day_fingerprint
from memory_pipeline.journals.transcript import Rejected, Transcript, TranscriptError, day_folder, parse_transcript
from memory_pipeline.store.db import MemoryStore, atomic, utcnow
from memory_pipeline.store.workspace_files import NotRegularFile, read_regular_text

DUPLICATES = "duplicate_transcripts"  # the sessions asset's per-day metadata key that `reconstruct` counts as failed
DATE_MISMATCHES = "date_mismatches"
REJECTED = "rejected_transcripts"  # every rejected transcript, `path:line: problem` (duplicates included)


@dataclass
class DayIntake:
    parsed: list[Transcript] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)  # every rejection, duplicates included
    duplicates: list[str] = field(default_factory=list)  # one line each, naming both paths
    warnings: list[str] = field(default_factory=list)  # folder/frontmatter date mismatches
    fingerprint: str = ""  # of the day's transcript files, taken before they were read (`freshness`)

    def rejected_lines(self) -> list[str]:
        """`path:line: problem` for each rejected transcript: what the warning log and the check list."""
        return [f"{r.path}:{r.line}: {r.problem}" for r in self.rejected]


def stored_sessions(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[date, str]]:
    """session id → (day, path) of every stored session."""
    return {sid: (day, path) for sid, day, path in con.execute("SELECT session_id, day, path FROM sessions").fetchall()}


def frontmatter_day(t: Transcript) -> date | None:
    """The date of `started` as written (its own time zone: the date the folder is named after)."""
    value = t.frontmatter.get("started")
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return datetime.fromisoformat(str(value).strip().replace("Z", "+00:00")).date()
    except ValueError:
        return None


def read_day_checked(
    raw_root: Path, day: date, workspace: Path | None = None, stored: Mapping[str, tuple[date, str]] | None = None
) -> DayIntake:
    """Every transcript of the day's folder, sorted by file name; broken ones and duplicates rejected."""
    out = DayIntake()
    folder = day_folder(raw_root, day)
    if not folder.is_dir():
        return out
    parsed: list[Transcript] = []
    for file in sorted(folder.glob("*.md")):
        shown = str(file.relative_to(workspace)) if workspace is not None else str(file)
        try:
            if not file.is_file():
                raise TranscriptError(shown, 1, "not a file (a directory named like a transcript)")
            text = read_regular_text(file, root=workspace or raw_root, errors="strict")
            parsed.append(parse_transcript(text, shown))
        except TranscriptError as exc:
            out.rejected.append(Rejected(exc.path, exc.line, exc.problem))
        except NotRegularFile as exc:  # a named pipe; a symlink out of the workspace (to /etc/passwd)
            out.rejected.append(Rejected(shown, 1, f"{exc.problem}: not read"))
        except UnicodeDecodeError as exc:
            out.rejected.append(Rejected(shown, 1, f"not UTF-8 (byte {exc.start}); save the transcript as UTF-8"))
        except OSError as exc:
            out.rejected.append(Rejected(shown, 1, f"cannot be read: {exc.strerror or exc}"))
    stored = stored or {}
    here = {t.path for t in parsed}
    owners: dict[str, str] = {}
    for sid, (stored_day, path) in stored.items():
        if stored_day != day or path in here:  # a stored file of this day that is gone no longer owns its id
            owners[sid] = path
    # the stored owner first, then file-name order
    for t in sorted(parsed, key=lambda t: (owners.get(t.session_id) != t.path, t.path)):
        owner = owners.get(t.session_id)
        if owner is not None and owner != t.path:
            line = f"{t.path}: session_id {t.session_id!r} is already used by {owner}; rename or remove the duplicate"
            out.rejected.append(Rejected(t.path, 2, line.split(": ", 1)[1]))
            out.duplicates.append(line)
            continue
        owners[t.session_id] = t.path
        out.parsed.append(t)
        written = frontmatter_day(t)
        if written is not None and written != day:
            out.warnings.append(
                f"{t.path}: in the folder of {day} but its frontmatter 'started' is {written}; "
                f"journaled under {day} (move it to {written:%Y/%m/%d}/ if that is its day)"
            )
    out.parsed.sort(key=lambda t: t.path)
    return out


def ingest_day(db: MemoryStore, raw_root: Path, day: date, workspace: Path) -> tuple[DayIntake, dict[str, pa.Table]]:
    """Parse one day's transcripts and replace that day's rows of the store's `sessions` table in one
    transaction: (what was read and rejected, the day's Arrow tables for the Parquet IO manager). The day's
    fingerprint is taken before the files are read (a file changed meanwhile makes the journal stale, never
    falsely fresh) and travels in the sessions table's schema metadata to the journal built from it."""
    fingerprint = day_fingerprint(day_folder(raw_root, day))
    with db.connect() as con:
        intake = read_day_checked(raw_root, day, workspace=workspace, stored=stored_sessions(con))
    intake.fingerprint = fingerprint
    frames = tables.to_tables(day, intake.parsed, utcnow())
    frames["sessions"] = frames["sessions"].replace_schema_metadata({SCHEMA_KEY: fingerprint.encode()})
    with db.connect() as con, atomic(con):
        tables.replace_day_sessions(con, day, frames["sessions"])
    return intake, frames
