"""Exact-match dedupe before semantic work (the seed's `cortex_dedupe`): keep the oldest, archive the rest.

Seed 004: the archived twin's tags and nexus keys are carried to the kept twin (union) and a tombstone
records both what the archived twin had and what the kept one gained, so retrieval by key still finds the
text and a rollback can take back exactly what was added. With external indexes configured, the same
transaction queues their outbox actions: delete each archived twin, upsert the kept one with its new keys."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import duckdb

from memory_pipeline.store.changes import note_changed
from memory_pipeline.store.invariants import DEDUPE_PREFIX

NORMALISED_CONTENT = "lower(regexp_replace(trim(content), '\\s+', ' ', 'g'))"
# Among active observations with the same normalised text, the oldest is the one that stays.
TWIN_RANK = f"row_number() OVER (PARTITION BY {NORMALISED_CONTENT} ORDER BY created_at, id)"


def archive_exact_duplicates(
    con: duckdb.DuckDBPyConnection,
    *,
    critical_floor: float,
    archived_importance: float,
    fresh_before: datetime,
    now: datetime,
    run_id: str,
    index_names: Sequence[str] = (),
) -> list[tuple[str, str]]:
    """Archive active observations whose normalised text equals an older one's. Returns (archived, kept).

    Protected memories (critical, pinned, locked, fresh) and summaries are never archived, though they can
    be the kept twin; the caller owns the transaction.
    """
    rows = con.execute(
        f"""
        WITH candidates AS (
            SELECT id, created_at, pinned, locked, importance,
                   {NORMALISED_CONTENT} AS norm
            FROM memories WHERE lifecycle = 'active' AND kind <> 'summary' AND compressed_from IS NULL
        ),
        ranked AS (
            SELECT id, norm, pinned, locked, importance, created_at,
                   first_value(id) OVER (PARTITION BY norm ORDER BY created_at, id) AS keeper
            FROM candidates
        )
        UPDATE memories AS m SET prior_importance = m.importance, importance = ?, lifecycle = 'archived',
               archived_by = '{DEDUPE_PREFIX}' || r.keeper, archived_at = ?, archived_by_run = ?
        FROM ranked r
        WHERE m.id = r.id AND r.id <> r.keeper AND NOT r.pinned AND NOT r.locked AND r.importance < ?
          AND r.created_at < ?
        RETURNING id, archived_by
        """,
        [archived_importance, now, run_id, critical_floor, fresh_before],
    ).fetchall()
    note_changed(con, [str(r[0]) for r in rows])
    pairs = sorted((str(a), str(k)[len(DEDUPE_PREFIX) :]) for a, k in rows)
    _carry_keys(con, pairs, run_id, now)
    if index_names:
        _enqueue(con, pairs, index_names, run_id, now)
    return pairs


def _enqueue(
    con: duckdb.DuckDBPyConnection, pairs: list[tuple[str, str]], index_names: Sequence[str], run_id: str, now: datetime
) -> None:
    from memory_pipeline.store.outbox import enqueue_compaction, memory_payload

    twins: dict[str, list[str]] = {}
    for archived, kept in pairs:
        twins.setdefault(kept, []).append(archived)
    rows = con.execute(
        "SELECT id, kind, nexus_keys, tags FROM memories WHERE list_contains(?, id)", [sorted(twins)]
    ).fetchall()
    for kept, kind, keys, tags in rows:
        enqueue_compaction(
            con,
            index_names=index_names,
            summary_id=kept,
            summary_payload=memory_payload(kind, keys, tags),
            source_ids=twins[kept],
            run_id=run_id,
            now=now,
        )


def _union(have: list[str], extra: list[str]) -> tuple[list[str], list[str]]:
    added = [x for x in dict.fromkeys(extra) if x not in set(have)]
    return have + added, added


def _carry_keys(con: duckdb.DuckDBPyConnection, pairs: list[tuple[str, str]], run_id: str, now: datetime) -> None:
    if not pairs:
        return
    ids = sorted({i for pair in pairs for i in pair})
    current = {
        r[0]: (list(r[1] or []), list(r[2] or []))
        for r in con.execute("SELECT id, tags, nexus_keys FROM memories WHERE list_contains(?, id)", [ids]).fetchall()
    }
    for archived, kept in pairs:
        tags, keys = current[archived]
        kept_tags, added_tags = _union(current[kept][0], tags)
        kept_keys, added_keys = _union(current[kept][1], keys)
        current[kept] = (kept_tags, kept_keys)
        if added_tags or added_keys:
            con.execute("UPDATE memories SET tags = ?, nexus_keys = ? WHERE id = ?", [kept_tags, kept_keys, kept])
        con.execute(
            """INSERT INTO tombstones (memory_id, replaced_by_summary_id, cluster_id, run_id, archived_at, tags,
                   nexus_keys, added_tags, added_nexus_keys) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            [archived, kept, DEDUPE_PREFIX + kept, run_id, now, tags, keys, added_tags, added_keys],
        )
