"""Recording inclusions (the agent reports which memories it put in context) into the store: the event
ledger `usage_events` and each memory's (included_count_total, included_count_decay, usage_day).

One transaction per call; an event id already recorded is ignored, so re-importing a file is a no-op. A
bad line or an unknown memory id rejects the whole import, naming the file, line and field. No Dagster."""

from __future__ import annotations

import csv
import hashlib
import json
import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

import duckdb
import pandas as pd

from memory_pipeline.graph.usage import DEFAULT_FACTOR, UsageState, day_bucket, record
from memory_pipeline.store.changes import note_changed
from memory_pipeline.store.db import MemoryStore, utcnow
from memory_pipeline.store.records import ImportRejected, RecordError, parse_timestamp


@dataclass(frozen=True)
class InclusionEvent:
    event_id: str
    memory_id: str
    day: date
    count: int = 1
    source: str | None = None


@dataclass(frozen=True)
class UsageResult:
    events: int  # new events recorded
    duplicates: int  # already recorded (same event id): ignored
    memories: int  # memories whose counters changed


def events_for(memory_ids: Sequence[str], at: datetime, count: int = 1, source: str = "api") -> list[InclusionEvent]:
    """One fresh inclusion event per id (each call is a distinct inclusion)."""
    return [InclusionEvent(uuid.uuid4().hex, mid, day_bucket(at), count, source) for mid in memory_ids]


def apply_events(
    con: duckdb.DuckDBPyConnection,
    events: Sequence[InclusionEvent],
    *,
    factor: float = DEFAULT_FACTOR,
    where: dict[str, str] | None = None,
    origin: str = "usage",
) -> UsageResult:
    """Inside the caller's transaction. `where` maps an event id to `file:line` for error messages."""
    where = where or {}
    seen: set[str] = set()
    fresh: list[InclusionEvent] = []
    for e in events:
        if e.event_id not in seen:
            seen.add(e.event_id)
            fresh.append(e)
    ids = pd.DataFrame({"event_id": [e.event_id for e in fresh]})  # noqa: F841 - scanned by DuckDB
    known = {r[0] for r in con.execute("SELECT u.event_id FROM usage_events u JOIN ids USING (event_id)").fetchall()}
    new = [e for e in fresh if e.event_id not in known]
    wanted = pd.DataFrame({"id": sorted({e.memory_id for e in new})})  # noqa: F841
    state = {
        r[0]: UsageState(int(r[1] or 0), float(r[2] or 0.0), r[3])
        for r in con.execute(
            "SELECT m.id, m.included_count_total, m.included_count_decay, m.usage_day FROM memories m JOIN wanted w "
            "USING (id)"
        ).fetchall()
    }
    missing = [e for e in new if e.memory_id not in state]
    if missing:
        errors = [
            RecordError(where.get(e.event_id, origin), "memory_id", f"no memory {e.memory_id!r} in the store")
            for e in missing
        ]
        raise ImportRejected(origin, errors)
    by_memory: dict[str, list[InclusionEvent]] = defaultdict(list)
    for e in new:
        by_memory[e.memory_id].append(e)
    updates = []
    for mid in sorted(by_memory):
        s = state[mid]
        for e in sorted(by_memory[mid], key=lambda e: (e.day, e.event_id)):
            s = record(s, e.day, e.count, factor)
        updates.append((mid, s.total, s.decayed, s.day))
    if updates:
        frame = pd.DataFrame(updates, columns=["id", "total", "decayed", "day"])  # noqa: F841
        con.execute(
            """UPDATE memories SET included_count_total = f.total, included_count_decay = f.decayed,
                      usage_day = CAST(f.day AS DATE)
               FROM frame f WHERE memories.id = f.id"""
        )
        note_changed(con, [u[0] for u in updates])
        now = utcnow()
        rows = pd.DataFrame(  # noqa: F841
            {
                "event_id": [e.event_id for e in new],
                "memory_id": [e.memory_id for e in new],
                "day": [e.day for e in new],
                "count": [e.count for e in new],
                "source": [e.source for e in new],
                "recorded_at": [now] * len(new),
            }
        )
        con.execute(
            "INSERT INTO usage_events SELECT event_id, memory_id, CAST(day AS DATE), CAST(count AS INTEGER), source, "
            "recorded_at FROM rows"
        )
    return UsageResult(len(new), len(events) - len(new), len(updates))


def record_inclusions(
    store: MemoryStore, memory_ids: Sequence[str], at: datetime, count: int = 1, factor: float = DEFAULT_FACTOR
) -> UsageResult:
    """API: the agent put these memories in context at `at`."""
    if count < 1:
        raise ValueError(f"count must be ≥ 1, got {count}")
    store.migrate()
    with store.transaction() as con:
        return apply_events(con, events_for(memory_ids, at, count), factor=factor, origin="usage record")


def _event_from(obj: object, where: str, occurrence: Counter[tuple[str, str, int]]) -> InclusionEvent:
    if not isinstance(obj, dict):
        raise RecordError(where, "<record>", f"expected an object, got {type(obj).__name__}")
    mid = obj.get("memory_id")
    if not isinstance(mid, str) or not mid.strip():
        raise RecordError(where, "memory_id", f"required non-empty string, got {mid!r}")
    if not obj.get("at"):
        raise RecordError(where, "at", "required (ISO-8601 time of the inclusion)")
    at = parse_timestamp(obj["at"], where, "at")
    raw_count = obj.get("count", 1)
    try:
        count = int(raw_count)
    except (TypeError, ValueError):
        raise RecordError(where, "count", f"expected a whole number ≥ 1, got {raw_count!r}") from None
    if count < 1 or str(count) != str(raw_count).strip():
        raise RecordError(where, "count", f"expected a whole number ≥ 1, got {raw_count!r}")
    event_id = obj.get("event_id")
    if event_id in (None, ""):
        triple = (mid.strip(), at.isoformat(), count)
        occurrence[triple] += 1  # the n-th identical line: stable when the file grows by appending
        event_id = hashlib.sha256(f"{triple}|{occurrence[triple]}".encode()).hexdigest()[:32]
    elif not isinstance(event_id, str):
        raise RecordError(where, "event_id", f"expected a string, got {event_id!r}")
    return InclusionEvent(str(event_id), mid.strip(), day_bucket(at), count, "import")


def import_usage(store: MemoryStore, path: Path, factor: float = DEFAULT_FACTOR) -> UsageResult:
    """Bulk import: `.jsonl` ({"memory_id", "at", "count"?, "event_id"?} per line) or `.csv` with that header."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    rows: list[tuple[str, object]] = []
    errors: list[RecordError] = []
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append((f"{path}:{lineno}", json.loads(line)))
            except json.JSONDecodeError as exc:
                errors.append(RecordError(f"{path}:{lineno}", "<line>", f"invalid JSON: {exc.msg}"))
    elif path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8") as fh:
            for lineno, row in enumerate(csv.DictReader(fh), start=2):
                rows.append((f"{path}:{lineno}", {k: v for k, v in row.items() if v not in (None, "")}))
    else:
        raise ValueError(f"{path}: unknown usage format {path.suffix!r} (expected .jsonl or .csv)")
    occurrence: Counter[tuple[str, str, int]] = Counter()
    events: list[InclusionEvent] = []
    where: dict[str, str] = {}
    for loc, obj in rows:
        try:
            e = _event_from(obj, loc, occurrence)
        except RecordError as exc:
            errors.append(exc)
            continue
        events.append(e)
        where.setdefault(e.event_id, loc)
    if errors:
        raise ImportRejected(str(path), errors)
    store.migrate()
    with store.transaction() as con:
        return apply_events(con, events, factor=factor, where=where, origin=str(path))
