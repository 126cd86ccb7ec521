"""Rollback of consolidation runs (seed 000 §11), without deleting anything.

Sources get their exact prior importance back and lose their archive fields; the runs' summaries stay as
rows marked `rolled_back`; atom confidence changes are reversed (atoms a run created are retired); and a
`rolled_back` compression_log entry lets each fingerprint be compressed again. Rolling back twice is a
no-op: everything it touches is selected by a state that the first rollback changed.

Supersessions the runs made (a fact's older value marked superseded by a newer one) are taken back in the same
transaction, each memory current again and the record kept, marked reverted.

Seed 004 in the same transaction: the runs' tombstones are marked reverted (kept, with who and when), what
an exact-dedupe archive carried to its kept twin is taken back, and — when external indexes are configured
or the runs wrote to one — compensating outbox actions re-upsert each restored source and delete each
rolled-back summary, so a drain brings the index back to where it was before the runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import duckdb
import pandas as pd

from memory_pipeline.errors import UserError
from memory_pipeline.store import lease, validity
from memory_pipeline.store.changes import note_changed
from memory_pipeline.store.db import MemoryStore, utcnow
from memory_pipeline.store.invariants import DEDUPE_PREFIX


class RollbackRefused(ValueError):
    """Rolling back these runs alone would leave the store inconsistent; nothing was changed."""


class UnknownRun(UserError):
    """A run id the store has no record of (a typo, or another workspace's run); nothing was changed."""


# Every place a run leaves its id: a run id found in none of them is unknown to this store.
_RUN_ID_COLUMNS = (
    ("consolidation_runs", "run_id"),
    ("compression_log", "run_id"),
    ("memories", "created_by_run"),
    ("memories", "archived_by_run"),
    ("atom_sources", "run_id"),
    ("tombstones", "run_id"),
    ("supersessions", "run_id"),
)


def unknown_runs(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> list[str]:
    """The ids among `run_ids` that no run of this store left anywhere (a consolidation, a summary rollup …)."""
    ids = list(dict.fromkeys(run_ids))
    if not ids:
        return []
    ph = _param(ids)
    union = " UNION ".join(f"SELECT {col} FROM {table} WHERE {col} IN ({ph})" for table, col in _RUN_ID_COLUMNS)
    known = {r[0] for r in con.execute(union, ids * len(_RUN_ID_COLUMNS)).fetchall()}
    return [r for r in ids if r not in known]


@dataclass
class RollbackPlan:
    run_ids: list[str]
    sources: list[str] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    atoms_weakened: list[tuple[str, float]] = field(default_factory=list)
    atoms_retired: list[str] = field(default_factory=list)
    fingerprints: list[tuple[str, str, int]] = field(default_factory=list)
    tombstones: list[str] = field(default_factory=list)  # memory ids whose tombstone of these runs gets reverted
    twin_additions: list[tuple[str, list[str], list[str]]] = field(default_factory=list)  # (kept twin, tags, keys)
    kept_twins: list[str] = field(default_factory=list)  # what exact dedupe kept: re-upserted with its old keys
    hubs_unpinned: list[str] = field(default_factory=list)  # hubs the runs pinned (hub_policy=pin)
    supersessions: int = 0  # memories the runs marked superseded: current again
    index_names: list[str] = field(default_factory=list)
    outbox_actions: int = 0

    @property
    def reindexed(self) -> list[str]:
        """Memories an external index gets back as they are after the rollback."""
        return sorted({*self.sources, *self.kept_twins})

    @property
    def empty(self) -> bool:
        return not (
            self.sources
            or self.summaries
            or self.atoms_weakened
            or self.atoms_retired
            or self.fingerprints
            or self.tombstones
            or self.hubs_unpinned
            or self.supersessions
        )

    def describe(self) -> list[str]:
        return [
            f"runs:               {', '.join(self.run_ids) or 'none'}",
            f"sources restored:   {len(self.sources)}",
            f"summaries retired:  {len(self.summaries)}",
            f"atoms weakened:     {len(self.atoms_weakened)}",
            f"atoms retired:      {len(self.atoms_retired)}",
            f"fingerprints freed: {len(self.fingerprints)}",
            f"tombstones reverted: {len(self.tombstones)}",
            f"dedupe twins reset: {len(self.twin_additions)}",
            f"hubs unpinned:      {len(self.hubs_unpinned)}",
            f"supersessions undone: {self.supersessions}",
            f"outbox actions:     {self.outbox_actions}"
            + (f" ({', '.join(self.index_names)})" if self.index_names else " (no external index)"),
        ]


def runs_since(con: duckdb.DuckDBPyConnection, since: datetime) -> list[str]:
    rows = con.execute(
        "SELECT run_id FROM consolidation_runs WHERE started_at >= ? ORDER BY started_at", [since]
    ).fetchall()
    return [r[0] for r in rows]


def _param(run_ids: list[str]) -> str:
    return ", ".join("?" for _ in run_ids) or "NULL"


def plan(con: duckdb.DuckDBPyConnection, run_ids: list[str], index_names: Sequence[str] = ()) -> RollbackPlan:
    """`index_names`: the configured external indexes; any index the runs wrote to is compensated too."""
    p = RollbackPlan(list(run_ids))
    if not run_ids:
        return p
    ph = _param(run_ids)
    rolled_up = con.execute(
        f"""SELECT id, archived_by_run FROM memories WHERE kind = 'summary' AND created_by_run IN ({ph})
            AND lifecycle = 'archived' AND archived_by_run NOT IN ({ph}) ORDER BY id""",
        [*run_ids, *run_ids],
    ).fetchall()
    if rolled_up:
        later = sorted({str(r[1]) for r in rolled_up})
        raise RollbackRefused(
            f"{len(rolled_up)} summary(ies) of these runs (e.g. {rolled_up[0][0]}) were rolled up since by run(s) "
            f"{', '.join(later)}: roll those back first, or together with these"
        )
    p.sources = [
        r[0]
        for r in con.execute(
            f"SELECT id FROM memories WHERE lifecycle = 'archived' AND archived_by_run IN ({ph}) ORDER BY id", run_ids
        ).fetchall()
    ]
    p.summaries = [
        r[0]
        for r in con.execute(
            f"""SELECT id FROM memories WHERE kind = 'summary' AND created_by_run IN ({ph})
                AND (lifecycle = 'active' OR (lifecycle = 'archived' AND archived_by_run IN ({ph}))) ORDER BY id""",
            [*run_ids, *run_ids],
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
    tombstones = con.execute(
        f"""SELECT memory_id, replaced_by_summary_id, added_tags, added_nexus_keys, cluster_id FROM tombstones
            WHERE run_id IN ({ph}) AND reverted_at IS NULL ORDER BY archived_at, memory_id""",
        run_ids,
    ).fetchall()
    p.tombstones = sorted({str(r[0]) for r in tombstones})
    p.twin_additions = [(str(r[1]), list(r[2] or []), list(r[3] or [])) for r in tombstones if r[2] or r[3]]
    p.kept_twins = sorted({str(r[1]) for r in tombstones if str(r[4]).startswith(DEDUPE_PREFIX)})
    p.hubs_unpinned = [
        r[0]
        for r in con.execute(
            f"SELECT DISTINCT memory_id FROM graph_hubs WHERE action = 'pinned' AND run_id IN ({ph}) ORDER BY 1",
            run_ids,
        ).fetchall()
    ]
    p.supersessions = validity.count_for_runs(con, run_ids)
    written = con.execute(f"SELECT DISTINCT index_name FROM outbox WHERE run_id IN ({ph})", run_ids).fetchall()
    p.index_names = sorted({*index_names, *(str(r[0]) for r in written)})
    if p.index_names:
        p.outbox_actions = len(p.index_names) * (len(p.reindexed) + len(p.summaries))
    return p


def apply(con: duckdb.DuckDBPyConnection, p: RollbackPlan, now: datetime, rollback_id: str) -> None:
    """The caller owns the transaction."""
    ph = _param(p.run_ids)
    for twin, tags, keys in p.twin_additions:  # what an exact-dedupe archive carried to its kept twin
        con.execute(
            """UPDATE memories SET tags = list_filter(tags, lambda t: NOT list_contains(?, t)),
                   nexus_keys = list_filter(nexus_keys, lambda k: NOT list_contains(?, k)) WHERE id = ?""",
            [tags, keys, twin],
        )
    if p.hubs_unpinned:
        con.execute("UPDATE memories SET pinned = false WHERE list_contains(?, id)", [p.hubs_unpinned])
        con.execute(
            f"UPDATE graph_hubs SET action = 'pinned:rolled_back' WHERE action = 'pinned' AND run_id IN ({ph})",
            p.run_ids,
        )
    con.execute(
        f"UPDATE tombstones SET reverted_at = ?, reverted_by = ? WHERE run_id IN ({ph}) AND reverted_at IS NULL",
        [now, rollback_id, *p.run_ids],
    )
    note_changed(con, where=f"lifecycle = 'archived' AND archived_by_run IN ({ph})", params=p.run_ids)
    note_changed(con, where=f"kind = 'summary' AND lifecycle = 'active' AND created_by_run IN ({ph})", params=p.run_ids)
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
    validity.rollback_runs(con, p.run_ids, now, rollback_id)
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
    if p.index_names and (p.reindexed or p.summaries):
        from memory_pipeline.store.outbox import enqueue_rollback

        src = pd.DataFrame({"id": p.reindexed})  # noqa: F841 - scanned by DuckDB
        restored = con.execute(
            "SELECT id, kind, nexus_keys, tags FROM memories WHERE id IN (SELECT id FROM src) ORDER BY id"
        ).fetchall()
        enqueue_rollback(
            con,
            index_names=p.index_names,
            restored=restored,
            summary_ids=p.summaries,
            rollback_id=rollback_id,
            now=now,
        )


def configured_indexes() -> list[str]:
    """MEMORY_PIPELINE_EXTERNAL_INDEXES, for callers without an EngineConfig (the CLI)."""
    from memory_pipeline.settings import env_overrides
    from memory_pipeline.store.external_index import parse_index_names

    return parse_index_names(str(env_overrides().get("external_indexes", "")))


def rollback(
    store: MemoryStore,
    run_ids: list[str],
    *,
    dry_run: bool,
    now: datetime | None = None,
    index_names: Sequence[str] | None = None,
) -> tuple[str, RollbackPlan]:
    """Plan, and unless `dry_run`, apply in one transaction under the consolidation lease. `index_names`
    defaults to the configured external indexes (environment)."""
    rollback_id = "rollback-" + uuid.uuid4().hex[:12]
    names = configured_indexes() if index_names is None else list(index_names)
    with store.transaction() as con:
        unknown = unknown_runs(con, run_ids)
        if unknown:
            raise UnknownRun(
                f"no consolidation run {', '.join(repr(r) for r in unknown)} in {store.path}: "
                "`memory-pipeline status` shows the last run; every run's id is in reports/compression-<run_id>.json"
            )
        p = plan(con, run_ids, names)
        if dry_run or p.empty:
            return rollback_id, p
        lease.acquire(con, rollback_id, now or utcnow(), timedelta(minutes=10))
        apply(con, p, now or utcnow(), rollback_id)
        lease.release(con, rollback_id)
    return rollback_id, p
