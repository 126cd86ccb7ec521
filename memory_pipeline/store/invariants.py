"""The store's invariants (DESIGN §6) as queries that return the offending rows. Empty = holds."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as _field

import duckdb

DEDUPE_PREFIX = "dedupe:"


def our_pending(alias: str = "") -> str:
    """SQL condition: a pending summary a run of ours wrote. Phase 1 stamps `created_by_run` and lineage; an
    import never sets `created_by_run` (and refuses `pending`), so reconciliation cannot touch imported rows."""
    p = f"{alias}." if alias else ""
    return f"{p}lifecycle = 'pending' AND {p}created_by_run IS NOT NULL AND {p}compressed_from IS NOT NULL"


@dataclass(frozen=True)
class Violation:
    """Rows that break one blocking check: `field` is the record field to fix, `problem` says what is wrong for
    each of `ids`, `details` adds what is specific to one id (e.g. which source is missing)."""

    check: str
    field: str
    problem: str
    ids: list[str]
    details: dict[str, str] = _field(default_factory=dict)  # `field` is also the name of a column above

_SOURCES = """
    SELECT s.id AS summary_id, unnest(json_extract_string(s.compressed_from, '$.source_ids[*]')) AS source_id
    FROM memories s WHERE s.compressed_from IS NOT NULL AND s.lifecycle = 'active'
"""


def _ids(con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> list[str]:
    return [str(r[0]) for r in con.execute(sql, params or []).fetchall()]


def protected_archived(con: duckdb.DuckDBPyConnection, critical_floor: float) -> list[str]:
    """Critical (by importance before archiving), pinned or locked memories that were archived by us."""
    return _ids(
        con,
        """SELECT id FROM memories WHERE lifecycle = 'archived' AND archived_by IS NOT NULL
           AND (pinned OR locked OR coalesce(prior_importance, importance) >= ?)""",
        [critical_floor],
    )


def recompressed_summaries(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Summaries that were archived into, or listed as a source of, another summary."""
    return _ids(
        con,
        f"""SELECT id FROM memories WHERE (kind = 'summary' OR compressed_from IS NOT NULL)
              AND archived_by IS NOT NULL AND NOT starts_with(archived_by, '{DEDUPE_PREFIX}')
            UNION
            SELECT src.source_id FROM ({_SOURCES}) src JOIN memories m ON m.id = src.source_id
            WHERE m.kind = 'summary' OR m.compressed_from IS NOT NULL""",
    )


def archived_without_summary(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Archived memories that no active summary lists. An exact duplicate points at its kept twin instead,
    which must be active or itself listed by an active summary."""
    return _ids(
        con,
        f"""SELECT m.id FROM memories m
            WHERE m.lifecycle = 'archived' AND NOT starts_with(coalesce(m.archived_by, ''), '{DEDUPE_PREFIX}')
              AND m.id NOT IN (SELECT source_id FROM ({_SOURCES}))
            UNION
            SELECT m.id FROM memories m LEFT JOIN memories k ON k.id = substr(m.archived_by, {len(DEDUPE_PREFIX) + 1})
            WHERE m.lifecycle = 'archived' AND starts_with(coalesce(m.archived_by, ''), '{DEDUPE_PREFIX}')
              AND (k.id IS NULL OR (k.lifecycle <> 'active' AND k.id NOT IN (SELECT source_id FROM ({_SOURCES}))))""",
    )


def summaries_with_unarchived_sources(con: duckdb.DuckDBPyConnection) -> list[str]:
    return _ids(
        con,
        f"""SELECT DISTINCT src.summary_id FROM ({_SOURCES}) src LEFT JOIN memories m ON m.id = src.source_id
            WHERE m.id IS NULL OR m.lifecycle <> 'archived'""",
    )


def unarchived_sources(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """Active summary → the sources its lineage lists that are missing or not archived."""
    rows = con.execute(
        f"""SELECT src.summary_id, list(src.source_id ORDER BY src.source_id) FROM ({_SOURCES}) src
            LEFT JOIN memories m ON m.id = src.source_id
            WHERE m.id IS NULL OR m.lifecycle <> 'archived' GROUP BY 1 ORDER BY 1"""
    ).fetchall()
    return {str(r[0]): [str(x) for x in r[1]] for r in rows}


def pending_rows(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Pending summaries a run wrote and did not finish (the only kind of pending row there is)."""
    return _ids(con, f"SELECT id FROM memories WHERE {our_pending()} ORDER BY id")


def row_count_high_water(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """(current memory count, the largest count any earlier run recorded): counts only grow."""
    current = int(con.execute("SELECT count(*) FROM memories").fetchall()[0][0])
    recorded = con.execute(
        "SELECT max(CAST(json_extract(report, '$.memory_count') AS BIGINT)) FROM consolidation_runs"
    ).fetchall()[0][0]
    return current, int(recorded or 0)
