"""Rollback of consolidation runs (seed 000 §11), without deleting anything.

Sources get their exact prior importance back and lose their archive fields; the runs' summaries stay as
rows marked `rolled_back`; atom confidence changes are reversed (atoms a run created are retired); and a
`rolled_back` compression_log entry lets each fingerprint be compressed again. Rolling back twice is a
no-op: everything it touches is selected by a state that the first rollback changed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import duckdb

from memory_pipeline.store import lease
from memory_pipeline.store.db import MemoryStore, utcnow


@dataclass
class RollbackPlan:
    run_ids: list[str]
    sources: list[str] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    atoms_weakened: list[tuple[str, float]] = field(default_factory=list)
    atoms_retired: list[str] = field(default_factory=list)
    fingerprints: list[tuple[str, str, int]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.sources or self.summaries or self.atoms_weakened or self.atoms_retired or self.fingerprints)

    def describe(self) -> list[str]:
        return [
            f"runs:               {', '.join(self.run_ids) or 'none'}",
            f"sources restored:   {len(self.sources)}",
            f"summaries retired:  {len(self.summaries)}",
            f"atoms weakened:     {len(self.atoms_weakened)}",
            f"atoms retired:      {len(self.atoms_retired)}",
            f"fingerprints freed: {len(self.fingerprints)}",
        ]


def runs_since(con: duckdb.DuckDBPyConnection, since: datetime) -> list[str]:
    rows = con.execute(
        "SELECT run_id FROM consolidation_runs WHERE started_at >= ? ORDER BY started_at", [since]
    ).fetchall()
    return [r[0] for r in rows]


def _param(run_ids: list[str]) -> str:
    return ", ".join("?" for _ in run_ids) or "NULL"


def plan(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> RollbackPlan:
    p = RollbackPlan(list(run_ids))
    if not run_ids:
        return p
    ph = _param(run_ids)
    p.sources = [
        r[0]
        for r in con.execute(
            f"SELECT id FROM memories WHERE lifecycle = 'archived' AND archived_by_run IN ({ph}) ORDER BY id", run_ids
        ).fetchall()
    ]
    p.summaries = [
        r[0]
        for r in con.execute(
            f"SELECT id FROM memories WHERE kind = 'summary' AND lifecycle = 'active' AND created_by_run IN ({ph})"
            " ORDER BY id",
            run_ids,
        ).fetchall()
    ]
    p.atoms_weakened = [
        (r[0], float(r[1]))
        for r in con.execute(
            f"SELECT atom_id, confidence_delta FROM atom_sources WHERE action = 'strengthened' AND run_id IN ({ph})",
            run_ids,
        ).fetchall()
    ]
    p.atoms_retired = [
        r[0]
        for r in con.execute(
            f"SELECT atom_id FROM atom_sources WHERE action = 'created' AND run_id IN ({ph})", run_ids
        ).fetchall()
    ]
    p.fingerprints = [
        (r[0], r[1], int(r[2]))
        for r in con.execute(
            f"""SELECT l.cluster_fingerprint, l.cluster_id, l.member_count FROM compression_log l
            WHERE l.status = 'compressed' AND l.run_id IN ({ph})
              AND NOT EXISTS (SELECT 1 FROM compression_log r WHERE r.status = 'rolled_back'
                              AND r.cluster_fingerprint = l.cluster_fingerprint AND r.created_at >= l.created_at)""",
            run_ids,
        ).fetchall()
    ]
    return p


def apply(con: duckdb.DuckDBPyConnection, p: RollbackPlan, now: datetime, rollback_id: str) -> None:
    """The caller owns the transaction."""
    ph = _param(p.run_ids)
    con.execute(
        f"""UPDATE memories SET importance = coalesce(prior_importance, importance), prior_importance = NULL,
               lifecycle = 'active', archived_by = NULL, archived_at = NULL, archived_by_run = NULL
            WHERE lifecycle = 'archived' AND archived_by_run IN ({ph})""",
        p.run_ids,
    )
    con.execute(
        f"UPDATE memories SET lifecycle = 'rolled_back' WHERE kind = 'summary' AND lifecycle = 'active' "
        f"AND created_by_run IN ({ph})",
        p.run_ids,
    )
    for atom_id, delta in p.atoms_weakened:
        con.execute("UPDATE atoms SET confidence = confidence - ?, updated_at = ? WHERE id = ?", [delta, now, atom_id])
    for atom_id in p.atoms_retired:
        con.execute("UPDATE atoms SET status = 'rolled_back', updated_at = ? WHERE id = ?", [now, atom_id])
    con.execute(
        f"UPDATE atom_sources SET action = action || ':rolled_back' WHERE action IN ('created', 'strengthened') "
        f"AND run_id IN ({ph})",
        p.run_ids,
    )
    for fingerprint, cluster_id, members in p.fingerprints:
        con.execute(
            "INSERT INTO compression_log VALUES (?, ?, ?, NULL, 'rolled_back', ?, ?, NULL, ?, ?)",
            [uuid.uuid4().hex, fingerprint, cluster_id, f"rolled back by {rollback_id}", members, rollback_id, now],
        )


def rollback(
    store: MemoryStore, run_ids: list[str], *, dry_run: bool, now: datetime | None = None
) -> tuple[str, RollbackPlan]:
    """Plan, and unless `dry_run`, apply in one transaction under the consolidation lease."""
    rollback_id = "rollback-" + uuid.uuid4().hex[:12]
    with store.transaction() as con:
        p = plan(con, run_ids)
        if dry_run or p.empty:
            return rollback_id, p
        lease.acquire(con, rollback_id, now or utcnow(), timedelta(minutes=10))
        apply(con, p, now or utcnow(), rollback_id)
        lease.release(con, rollback_id)
    return rollback_id, p
