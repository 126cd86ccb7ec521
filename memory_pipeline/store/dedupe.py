"""Exact-match dedupe before semantic work (the seed's `cortex_dedupe`): keep the oldest, archive the rest."""

from __future__ import annotations

from datetime import datetime

import duckdb

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
    return [(str(a), str(k)[len(DEDUPE_PREFIX) :]) for a, k in rows]
