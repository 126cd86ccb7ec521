"""Rollup reads and writes on the DuckDB store (no Dagster): session assignment, Core/Sphere rows, counts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from memory_pipeline.rollups.counters import SESSIONS_PER_CORE, core_ordinals, position


class RollupError(RuntimeError):
    """A Core or Sphere cannot be built from what the store holds; the message names the key and what is missing."""


@dataclass(frozen=True)
class SessionRow:
    session_id: str
    ordinal: int
    started_at: datetime
    ended_at: datetime
    title: str
    path: str
    participants: list[str]
    tags: list[str]
    turn_count: int
    text: str
    salience: float | None
    frontmatter: dict[str, Any] = field(default_factory=dict)
    late: bool = False


def sync_assignments(con: duckdb.DuckDBPyConnection, now: datetime) -> int:
    """Give every session without `compression_meta` the next ordinals, oldest first. Existing ordinals never
    change, so a late-arriving older session lands in the open Core and closed Cores stay as they were.
    Call inside a transaction. Returns how many sessions were assigned."""
    rows = con.execute(
        """
        SELECT s.session_id, s.started_at FROM sessions s
        LEFT JOIN compression_meta m USING (session_id)
        WHERE m.session_id IS NULL ORDER BY s.started_at, s.session_id
        """
    ).fetchall()
    if not rows:
        return 0
    top, newest = con.execute(
        "SELECT coalesce(max(m.ordinal), 0), max(s.started_at) "
        "FROM compression_meta m JOIN sessions s USING (session_id)"
    ).fetchall()[0]
    values = []
    for i, (session_id, started_at) in enumerate(rows, start=int(top) + 1):
        meta = position(i)
        late = newest is not None and started_at < newest
        values.append(
            (session_id, i, meta.session_seq, meta.core_seq, meta.sphere_seq, meta.core_id, meta.sphere_id, late, now)
        )
    con.executemany("INSERT INTO compression_meta VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
    return len(values)


def counts(con: duckdb.DuckDBPyConnection) -> tuple[int, int, int, int]:
    """(sessions in the store, sessions assigned, Cores built, Spheres built)."""
    row = con.execute(
        """
        SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM compression_meta),
               (SELECT count(*) FROM rollup_cores), (SELECT count(*) FROM rollup_spheres)
        """
    ).fetchall()[0]
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])


def sessions_for_core(con: duckdb.DuckDBPyConnection, core_id: str) -> list[SessionRow]:
    ordinals = core_ordinals(core_id)
    rows = con.execute(
        """
        SELECT s.session_id, m.ordinal, s.started_at, s.ended_at, s.title, s.path, s.participants, s.tags,
               s.turn_count, s.text, s.salience, s.frontmatter, m.late
        FROM compression_meta m JOIN sessions s USING (session_id)
        WHERE m.ordinal BETWEEN ? AND ? ORDER BY m.ordinal
        """,
        [ordinals.start, ordinals.stop - 1],
    ).fetchall()
    if len(rows) != SESSIONS_PER_CORE:
        assigned = con.execute("SELECT count(*) FROM compression_meta").fetchall()[0][0]
        raise RollupError(
            f"{core_id} holds sessions {ordinals.start}–{ordinals.stop - 1}, but only {assigned} sessions are "
            f"assigned ({len(rows)} of its 8 found): it is not closed yet"
        )
    return [
        SessionRow(
            session_id=r[0],
            ordinal=int(r[1]),
            started_at=r[2],
            ended_at=r[3],
            title=r[4],
            path=r[5],
            participants=list(r[6] or []),
            tags=list(r[7] or []),
            turn_count=int(r[8]),
            text=r[9],
            salience=None if r[10] is None else float(r[10]),
            frontmatter=_json_dict(r[11]),
            late=bool(r[12]),
        )
        for r in rows
    ]


def _json_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value) if value else {}
    except (TypeError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def save_core(con: duckdb.DuckDBPyConnection, doc: dict[str, Any], path: str, now: datetime) -> None:
    con.execute("DELETE FROM rollup_cores WHERE core_id = ?", [doc["core_id"]])  # a re-build replaces its own row
    con.execute(
        "INSERT INTO rollup_cores VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            doc["core_id"],
            doc["sphere_seq"],
            doc["core_seq"],
            path,
            datetime.fromisoformat(doc["timestamp_start"]),
            datetime.fromisoformat(doc["timestamp_end"]),
            doc["session_count"],
            doc["source_sessions"],
            doc["meta"]["compression_method"],
            json.dumps(doc, ensure_ascii=False),
            now,
        ],
    )


def save_sphere(con: duckdb.DuckDBPyConnection, doc: dict[str, Any], path: str, now: datetime) -> None:
    con.execute("DELETE FROM rollup_spheres WHERE sphere_id = ?", [doc["sphere_id"]])
    con.execute(
        "INSERT INTO rollup_spheres VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            doc["sphere_id"],
            doc["sphere_seq"],
            path,
            datetime.fromisoformat(doc["timestamp_start"]),
            datetime.fromisoformat(doc["timestamp_end"]),
            doc["core_count"],
            doc["session_count"],
            doc["source_cores"],
            doc["meta"]["compression_method"],
            json.dumps(doc, ensure_ascii=False),
            now,
        ],
    )


def core_documents(con: duckdb.DuckDBPyConnection, keys: list[str], sphere_id: str) -> list[dict[str, Any]]:
    found = dict(
        con.execute("SELECT core_id, document FROM rollup_cores WHERE core_id IN (SELECT unnest(?))", [keys]).fetchall()
    )
    missing = [k for k in keys if k not in found]
    if missing:
        raise RollupError(f"{sphere_id} rolls up {keys[0]}…{keys[-1]}, but {', '.join(missing)} not built yet")
    return [_json_dict(found[k]) for k in keys]


def built_cores(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, dict[str, Any]]]:
    """(core_id, path, document) of every built Core, in order."""
    rows = con.execute("SELECT core_id, path, document FROM rollup_cores ORDER BY core_id").fetchall()
    return [(r[0], r[1], _json_dict(r[2])) for r in rows]


def built_spheres(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, dict[str, Any]]]:
    rows = con.execute("SELECT sphere_id, path, document FROM rollup_spheres ORDER BY sphere_id").fetchall()
    return [(r[0], r[1], _json_dict(r[2])) for r in rows]
