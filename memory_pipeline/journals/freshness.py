"""Whether a day's journal is older than the day's transcripts, however the last attempt to build it ended.

A day's transcripts have a fingerprint: a hash of the name, size and modification time of each `*.md` file in
its folder (stat only, so looking at every day of a large workspace stays cheap; each transcript is written by
replacing the whole file, so any change shows). The `sessions` step takes the fingerprint before it reads the
folder and hands it on with the day's sessions; the `journals` step records it with the journal's
materialisation (metadata `FINGERPRINT`). A day is stale when its fingerprint now differs from the one its last
journal was built from, or when it has transcripts and no journal was ever built — so an import killed while
rebuilding, a failed sensor tick or `--no-journals` leaves the day to be rebuilt by the next import or sensor
tick. No Dagster here: `defs.journals.freshness` reads the recorded fingerprints.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import date, timedelta
from pathlib import Path

FINGERPRINT = "transcripts_fingerprint"  # the journals' (and sessions') per-day metadata key
LEGACY = "legacy"  # a journal built before fingerprints were recorded: taken as up to date, never rebuilt for it
UNKNOWN = "unknown"  # sessions read without a fingerprint (an older Parquet): the journal is rebuilt next time
SCHEMA_KEY = FINGERPRINT.encode()  # where the fingerprint travels in the sessions Parquet (schema metadata)


def day_fingerprint(folder: Path) -> str:
    """The fingerprint of a day folder's transcripts (an empty or missing folder has one too)."""
    digest = hashlib.sha256()
    try:
        names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".md"))
    except OSError:
        names = []
    for name in names:
        try:
            st = (folder / name).lstat()
            digest.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "replace"))
        except OSError:
            digest.update(f"{name}\0gone\n".encode("utf-8", "replace"))
    return digest.hexdigest()[:16]


def transcript_days(raw_root: Path) -> dict[date, str]:
    """Every day folder (`YYYY/MM/DD`) under `raw_root` holding a transcript → its fingerprint now."""
    out: dict[date, str] = {}
    if not raw_root.is_dir():
        return out
    for folder in sorted(raw_root.glob("[0-9][0-9][0-9][0-9]/[0-9][0-9]/[0-9][0-9]")):
        try:
            day = date(int(folder.parent.parent.name), int(folder.parent.name), int(folder.name))
        except ValueError:
            continue
        if folder.is_dir() and any(p.name.endswith(".md") for p in folder.iterdir()):
            out[day] = day_fingerprint(folder)
    return out


def carried(schema_metadata: Mapping[bytes, bytes] | None) -> str:
    """The fingerprint a day's sessions table carries (`UNKNOWN` for one written before they carried it)."""
    value = (schema_metadata or {}).get(SCHEMA_KEY)
    return value.decode() if value else UNKNOWN


def stale_days(now: Mapping[date, str], built: Mapping[date, str], among: Iterable[date] | None = None) -> list[date]:
    """The days of `now` (or of `among`) whose journal is older than their transcripts: never built, or built
    from another fingerprint (`UNKNOWN` included); a `LEGACY` journal counts as up to date."""
    days = now.keys() if among is None else [d for d in among if d in now]
    return sorted(d for d in days if built.get(d) != now[d] and built.get(d) != LEGACY)


def week_start(day: date) -> date:
    """The Sunday that starts the journal week (Sunday–Saturday) holding `day`."""
    return day - timedelta(days=(day.weekday() + 1) % 7)
