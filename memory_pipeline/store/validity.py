"""Validity of memories in the store: which memory a later value of the same fact superseded, and until when.

A memory is valid from its `created_at`; once superseded, `superseded_by` names the memory that holds the fact
now and `valid_until` the moment it stopped holding. Nothing is deleted or archived for being superseded: the
row stays readable, and reading ranks it below the current value and marks it. Every supersession is logged in
`supersessions` with the run (or operator action) that made it, so a rollback of a night, an operator's
`superseded undo ID` and a re-stated memory take one back and keep the record, marked reverted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb

from memory_pipeline.errors import UserError
from memory_pipeline.store.changes import note_changed
from memory_pipeline.store.db import MemoryStore, utcnow
from memory_pipeline.store.validity_events import RESTATED, ROLLBACK, Edge, Span, derive, mark_at

__all__ = ["RESTATED", "ROLLBACK", "FactRow", "Supersession", "Validities"]


class ValidityError(UserError, ValueError):
    """An operator's undo that cannot be done; nothing was changed."""


@dataclass(frozen=True)
class FactRow:
    """What detecting versions reads of one memory."""

    id: str
    content: str
    stated_at: datetime  # its created_at, or when it was last stated again
    superseded_by: str | None


@dataclass(frozen=True)
class Supersession:
    memory_id: str
    superseded_by: str
    valid_until: datetime
    fact_key: str


@dataclass(frozen=True)
class SupersededRow:
    id: str
    content: str
    created_at: datetime
    valid_until: datetime
    superseded_by: str
    current: str  # the superseding memory's text
    run_id: str


def fact_rows(con: duckdb.DuckDBPyConnection) -> list[FactRow]:
    """Every readable memory that is not a summary: the statements a fact's versions are found among."""
    rows = con.execute(
        "SELECT id, content, coalesce(stated_at, created_at), superseded_by FROM memories "
        "WHERE lifecycle IN ('active', 'archived') AND kind <> 'summary' AND compressed_from IS NULL "
        "ORDER BY id"
    ).fetchall()
    return [FactRow(str(r[0]), str(r[1]), r[2], r[3]) for r in rows]


def undone_pairs(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str]]:
    """Supersessions an operator undid or a re-statement took back: never made again by a night."""
    rows = con.execute(
        "SELECT memory_id, superseded_by FROM supersessions WHERE reverted_at IS NOT NULL "
        "AND NOT starts_with(coalesce(reverted_by, ''), ?)",
        [ROLLBACK],
    ).fetchall()
    return {(str(a), str(b)) for a, b in rows}


def apply(con: duckdb.DuckDBPyConnection, plan: Sequence[Supersession], run_id: str, now: datetime) -> int:
    """Mark each planned memory superseded (the caller's transaction); one still unsuperseded only."""
    done: list[str] = []
    for s in plan:
        row = con.execute(
            "UPDATE memories SET superseded_by = ?, valid_until = ? WHERE id = ? AND superseded_by IS NULL "
            "RETURNING id",
            [s.superseded_by, s.valid_until, s.memory_id],
        ).fetchone()
        if row is None:
            continue
        con.execute("INSERT INTO supersessions VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)",
                    [s.memory_id, s.superseded_by, s.valid_until, s.fact_key, run_id, now])  # fmt: skip
        done.append(s.memory_id)
    note_changed(con, done)
    return len(done)


def _take_back(con: duckdb.DuckDBPyConnection, where: str, params: list[object], now: datetime, by: str) -> list[str]:
    rows = con.execute(
        f"UPDATE supersessions SET reverted_at = ?, reverted_by = ? WHERE reverted_at IS NULL AND {where} "
        "RETURNING memory_id, superseded_by",
        [now, by, *params],
    ).fetchall()
    ids = []
    for memory_id, successor in rows:
        con.execute("UPDATE memories SET superseded_by = NULL, valid_until = NULL WHERE id = ? AND superseded_by = ?",
                    [memory_id, successor])  # fmt: skip
        ids.append(str(memory_id))
    note_changed(con, ids)
    return ids


def rollback_runs(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str], now: datetime, rollback_id: str) -> int:
    """The runs' supersessions taken back (the rollback's transaction)."""
    if not run_ids:
        return 0
    ph = ", ".join("?" for _ in run_ids)
    return len(_take_back(con, f"run_id IN ({ph})", list(run_ids), now, f"{ROLLBACK}{rollback_id}"))


def count_for_runs(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> int:
    if not run_ids:
        return 0
    ph = ", ".join("?" for _ in run_ids)
    row = con.execute(f"SELECT count(*) FROM supersessions WHERE reverted_at IS NULL AND run_id IN ({ph})",
                      list(run_ids)).fetchone()  # fmt: skip
    return int(row[0]) if row else 0


def restate(con: duckdb.DuckDBPyConnection, memory_id: str, at: datetime) -> None:
    """`memory_id` was stated again at `at`: current again, and the version that held the fact until now is
    superseded by it from `at` (the caller's transaction). A memory that is current already only gets `at`."""
    row = con.execute("SELECT superseded_by FROM memories WHERE id = ?", [memory_id]).fetchone()
    con.execute("UPDATE memories SET stated_at = ? WHERE id = ?", [at, memory_id])
    if row is None or row[0] is None:
        return
    head, seen = str(row[0]), {memory_id}
    while head not in seen:  # the chain's end: the version current until now
        seen.add(head)
        nxt = con.execute("SELECT superseded_by FROM memories WHERE id = ?", [head]).fetchone()
        if nxt is None or nxt[0] is None:
            break
        head = str(nxt[0])
    _take_back(con, "memory_id = ?", [memory_id], at, RESTATED)
    fact = con.execute("SELECT fact_key FROM supersessions WHERE memory_id = ? ORDER BY made_at DESC LIMIT 1",
                       [memory_id]).fetchone()  # fmt: skip
    if head != memory_id:
        apply(con, [Supersession(head, memory_id, at, str(fact[0]) if fact else "")], RESTATED, at)
    note_changed(con, [memory_id])


def list_superseded(store: MemoryStore) -> list[SupersededRow]:
    """Readable memories superseded now, as derived from the store's events: the one named as holding now is
    readable (never a forgotten one)."""
    store.migrate()
    with store.connect() as con:
        spans = derive(_edges(con), _live(con))
        now = {mid: sp for mid, v in spans.items() if (sp := mark_at(v, None)) is not None}
        if not now:
            return []
        ids = sorted(set(now) | {sp.by for sp in now.values()})
        ph = ", ".join("?" for _ in ids)
        text = {str(r[0]): (str(r[1]), r[2]) for r in
                con.execute(f"SELECT id, content, created_at FROM memories WHERE id IN ({ph})", ids).fetchall()}
    rows = [SupersededRow(mid, text[mid][0], text[mid][1], sp.start, sp.by, text.get(sp.by, ("", None))[0],
                          sp.run_id) for mid, sp in now.items()]  # fmt: skip
    return sorted(rows, key=lambda r: (r.valid_until, r.id))


def undo(store: MemoryStore, memory_id: str, by: str) -> str:
    """The operator's undo of what marks a memory superseded — a night's supersession, or two statements of one
    fact that reading tells apart (recorded as undone, so neither reading nor a night makes it again): the
    memory is current again. Returns the memory it had been superseded by."""
    store.migrate()
    with store.transaction() as con:
        row = con.execute("SELECT superseded_by, content, lifecycle FROM memories WHERE id = ?",
                          [memory_id]).fetchone()  # fmt: skip
        if row is None:
            raise ValidityError(f"no memory with id {memory_id!r} in {store.path.name}; nothing was changed")
        now = utcnow()
        spans = derive(_edges(con), _live(con)).get(memory_id, [])
        held = mark_at(spans, None)
        if row[0] is not None or held is not None:
            _take_back(con, "memory_id = ?", [memory_id], now, by)
            return held.by if held is not None else str(row[0])
        later = _read_time_versions(con, memory_id, str(row[1]))
        if not later:
            raise ValidityError(f"memory {memory_id!r} is not superseded; nothing was changed")
        for other, fact in later:
            con.execute("INSERT INTO supersessions VALUES (?, ?, ?, ?, 'undo', ?, ?, ?)",
                        [memory_id, other, now, fact, now, now, by])  # fmt: skip
        note_changed(con, [memory_id])
    return ", ".join(o for o, _ in later)


def _read_time_versions(con: duckdb.DuckDBPyConnection, memory_id: str, content: str) -> list[tuple[str, str]]:
    """Readable memories stated after `memory_id` that state its fact with another value: what reading marks it
    superseded by before any night has (`statements.values`, the night's rule)."""
    from memory_pipeline.statements.values import fact_key, versions_of

    key = fact_key(content)
    if key is None:
        return []
    undone = undone_pairs(con)
    mine = con.execute("SELECT coalesce(stated_at, created_at) FROM memories WHERE id = ?", [memory_id]).fetchone()
    out = []
    for r in fact_rows(con):
        other = fact_key(r.content) if r.id != memory_id and mine and r.stated_at > mine[0] else None
        if other is not None and other.key == key.key and versions_of(key, other) and (memory_id, r.id) not in undone:
            out.append((r.id, " ".join(key.key)))
    return out


@dataclass(frozen=True)
class Validities:
    """What search reads of validity: each memory's spans of not holding, and the re-statements of those
    stated again (a memory's first statement is its `created_at`, which the index holds)."""

    spans: dict[str, list[Span]]
    restated: dict[str, list[datetime]]


def _edges(con: duckdb.DuckDBPyConnection) -> list[Edge]:
    rows = con.execute("SELECT memory_id, superseded_by, valid_until, reverted_at, reverted_by, run_id "
                       "FROM supersessions").fetchall()  # fmt: skip
    return [Edge(str(r[0]), str(r[1]), r[2], r[3], r[4], str(r[5] or "")) for r in rows]


def _live(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute("SELECT id FROM memories WHERE lifecycle IN ('active', 'archived')").fetchall()
    return {str(r[0]) for r in rows}


def superseded(con: duckdb.DuckDBPyConnection) -> Validities:
    """Validity derived from the store's events (`store.validity_events`): few rows, read once per store change."""
    restated: dict[str, list[datetime]] = {}
    for mid, at in con.execute("SELECT superseded_by, made_at FROM supersessions WHERE run_id = ?",
                               [RESTATED]).fetchall():  # fmt: skip
        restated.setdefault(str(mid), []).append(at)
    for mid, at in con.execute("SELECT id, stated_at FROM memories WHERE stated_at IS NOT NULL").fetchall():
        restated.setdefault(str(mid), []).append(at)
    return Validities(derive(_edges(con), _live(con)), restated)
