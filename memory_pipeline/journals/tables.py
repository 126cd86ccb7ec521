"""Parsed sessions as Arrow tables (the Parquet partition) and their rows in the store. No Dagster here."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from typing import Any

import duckdb
import pyarrow as pa

from memory_pipeline.journals.extractors import Extractor, category_of, memory_id
from memory_pipeline.journals.transcript import Transcript, Turn
from memory_pipeline.store.changes import note_changed
from memory_pipeline.store.records import MemoryRecord
from memory_pipeline.store.repository import insert_memories

SESSIONS_SCHEMA = pa.schema(
    [
        ("session_id", pa.string()),
        ("day", pa.date32()),
        ("started_at", pa.timestamp("us")),
        ("ended_at", pa.timestamp("us")),
        ("title", pa.string()),
        ("slug", pa.string()),
        ("path", pa.string()),
        ("participants", pa.list_(pa.string())),
        ("tags", pa.list_(pa.string())),
        ("turn_count", pa.int32()),
        ("text", pa.string()),
        ("salience", pa.float64()),
        ("frontmatter", pa.string()),
        ("parsed_at", pa.timestamp("us")),
    ]
)
TURNS_SCHEMA = pa.schema(
    [
        ("session_id", pa.string()),
        ("turn_index", pa.int32()),
        ("hhmm", pa.string()),
        ("at", pa.timestamp("us")),
        ("role", pa.string()),
        ("kind", pa.string()),
        ("line", pa.int32()),
        ("text", pa.string()),
        ("ref", pa.string()),
        ("tools", pa.string()),  # JSON list of {tool, summary, result}
        ("knowledge", pa.string()),  # JSON list of {action, path, summary}
        ("attachments", pa.string()),  # JSON list of {path, caption}
        ("body", pa.string()),  # the turn's lines verbatim
    ]
)


def to_tables(day: date, transcripts: Sequence[Transcript], parsed_at: datetime) -> dict[str, pa.Table]:
    sessions: dict[str, list[Any]] = {name: [] for name in SESSIONS_SCHEMA.names}
    turns: dict[str, list[Any]] = {name: [] for name in TURNS_SCHEMA.names}
    for t in transcripts:
        row = {
            "session_id": t.session_id,
            "day": day,
            "started_at": t.started,
            "ended_at": t.ended,
            "title": t.title,
            "slug": t.slug,
            "path": t.path,
            "participants": list(t.participants),
            "tags": list(t.tags),
            "turn_count": len(t.turns),
            "text": t.text,
            "salience": t.salience,
            "frontmatter": json.dumps(t.frontmatter, sort_keys=False, default=str),
            "parsed_at": parsed_at,
        }
        for k, v in row.items():
            sessions[k].append(v)
        for i, turn in enumerate(t.turns):
            values = {
                "session_id": t.session_id,
                "turn_index": i,
                "hhmm": turn.hhmm,
                "at": turn.at,
                "role": turn.role,
                "kind": turn.kind,
                "line": turn.line,
                "text": turn.text,
                "ref": turn.ref,
                "tools": json.dumps([asdict(x) for x in turn.tools]),
                "knowledge": json.dumps([asdict(x) for x in turn.knowledge]),
                "attachments": json.dumps([asdict(x) for x in turn.attachments]),
                "body": "\n".join(turn.lines),
            }
            for k, v in values.items():
                turns[k].append(v)
    return {
        "sessions": pa.table(sessions, schema=SESSIONS_SCHEMA),
        "turns": pa.table(turns, schema=TURNS_SCHEMA),
    }


def from_tables(tables: dict[str, pa.Table]) -> list[Transcript]:
    """Sessions back from their Parquet tables, with what the extractors read (turn text, roles, times, refs)."""
    by_session: dict[str, list[Turn]] = {}
    for r in tables["turns"].to_pylist():
        by_session.setdefault(r["session_id"], []).append(
            Turn(
                hhmm=r["hhmm"],
                role=r["role"],
                lines=tuple(r["body"].split("\n")) if r["body"] else (),
                kind=r["kind"],
                at=r["at"],
                line=r["line"],
                text=r["text"],
                ref=r["ref"],
            )
        )
    out = []
    for s in tables["sessions"].to_pylist():
        out.append(
            Transcript(
                path=s["path"],
                session_id=s["session_id"],
                started=s["started_at"],
                ended=s["ended_at"],
                title=s["title"],
                slug=s["slug"],
                frontmatter=json.loads(s["frontmatter"]),
                turns=tuple(by_session.get(s["session_id"], [])),
                participants=tuple(s["participants"]),
                tags=tuple(s["tags"]),
                salience=s["salience"],
            )
        )
    return out


def replace_day_sessions(con: duckdb.DuckDBPyConnection, day: date, table: pa.Table) -> int:
    """Exactly this day's rows, replaced; the caller owns the transaction."""
    con.execute("DELETE FROM sessions WHERE day = ?", [day])
    incoming = table  # noqa: F841 - scanned by DuckDB by name
    taken = con.execute(
        "SELECT i.path, s.session_id, s.day, s.path FROM sessions s JOIN incoming i USING (session_id) ORDER BY i.path"
    ).fetchall()
    if taken:
        new_path, sid, other_day, path = taken[0]
        raise ValueError(
            f"{new_path}: session {sid} is already stored for {other_day} ({path}); session ids must be unique"
        )
    con.execute(f"INSERT INTO sessions ({', '.join(SESSIONS_SCHEMA.names)}) SELECT * FROM incoming")
    return table.num_rows


@dataclass
class ExtractionOutcome:
    extractor: str
    source: str
    produced: int = 0
    inserted: int = 0
    unchanged: int = 0
    reactivated: int = 0
    superseded: int = 0
    kept_archived: list[str] = field(default_factory=list)


def replace_extracted(
    con: duckdb.DuckDBPyConnection,
    extractor: Extractor,
    transcripts: Sequence[Transcript],
    candidates: dict[str, list],
    now: datetime,
    run_id: str | None,
) -> ExtractionOutcome:
    """Make the store hold exactly this extractor version's memories for these sessions (caller's transaction).

    Earlier rows of this extractor (any version) for these sessions that are no longer produced become
    `superseded` (never deleted); rows already archived into a summary are left exactly as they are, so the
    summary's lineage holds, and are reported. Other extractors' memories, and summaries, are never touched."""
    out = ExtractionOutcome(extractor.name, extractor.source, kept_archived=[])
    session_ids = [t.session_id for t in transcripts]
    records: dict[str, MemoryRecord] = {}
    for t in transcripts:
        topic = category_of(t)
        for c in candidates.get(t.session_id, []):
            rid = memory_id(extractor.source, t.session_id, c.content)
            if rid in records:
                continue
            records[rid] = MemoryRecord(
                id=rid,
                content=c.content,
                importance=extractor.importance,
                created_at=c.at,
                categories=[topic, extractor.kind],
                tags=[f"extractor:{extractor.name}"] + ([f"dia_id:{c.ref}"] if c.ref else []),
                kind=extractor.kind,
                source=extractor.source,
                session_id=t.session_id,
            )
    out.produced = len(records)
    prev: dict[str, tuple[str, str | None]] = {}
    if session_ids:
        placeholders = ", ".join("?" for _ in session_ids)
        rows = con.execute(
            f"SELECT id, lifecycle, archived_by FROM memories WHERE session_id IN ({placeholders}) "
            "AND starts_with(coalesce(source, ''), ?)",
            [*session_ids, f"extract:{extractor.name}@"],
        ).fetchall()
        prev = {r[0]: (r[1], r[2]) for r in rows}
    fresh = [r for rid, r in records.items() if rid not in prev]
    out.inserted = insert_memories(con, fresh, run_id=run_id)
    for rid, (lifecycle, archived_by) in sorted(prev.items()):
        if rid in records:
            if lifecycle == "superseded":
                con.execute("UPDATE memories SET lifecycle = 'active', superseded_at = NULL WHERE id = ?", [rid])
                note_changed(con, [rid])
                out.reactivated += 1
            else:
                out.unchanged += 1
        elif lifecycle == "active":
            con.execute("UPDATE memories SET lifecycle = 'superseded', superseded_at = ? WHERE id = ?", [now, rid])
            note_changed(con, [rid])
            out.superseded += 1
        elif lifecycle == "archived" and archived_by:
            out.kept_archived.append(rid)
    return out


def day_items(con: duckdb.DuckDBPyConnection, session_ids: Sequence[str], sources: Sequence[str]) -> list[tuple]:
    """(created_at, session_id, kind, content, topic) of the current extractors' memories for these sessions,
    archived ones included (they still happened that day)."""
    if not session_ids or not sources:
        return []
    s_ph = ", ".join("?" for _ in session_ids)
    v_ph = ", ".join("?" for _ in sources)
    return con.execute(
        f"""SELECT created_at, session_id, kind, content, categories[1] FROM memories
            WHERE session_id IN ({s_ph}) AND source IN ({v_ph}) AND lifecycle IN ('active', 'archived')
            ORDER BY created_at, session_id, kind, content""",
        [*session_ids, *sources],
    ).fetchall()
