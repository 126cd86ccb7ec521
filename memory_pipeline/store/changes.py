"""The change log: one row per memory whose lifecycle, importance, archived_by or usage changed, written
in the same transaction as the change. Appended rows need no entry (they are past the index's rowid watermark).

The search index keeps a cursor (the last `seq` it has applied): an update reads the log past its cursor and the
rows it names, never the whole store; a query reads the same short list for the live state of rows changed since
the build. Every statement that updates those columns calls `note_changed` (a test walks the code for them).
No Dagster here."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

TABLE = "memory_changes"


def note_changed(con: duckdb.DuckDBPyConnection, ids: Sequence[str] | None = None, *, where: str = "",
                 params: Sequence[object] = ()) -> None:
    """Log a change to these memories, inside the caller's transaction: `ids`, or the rows `where` selects
    from `memories` (a SQL condition with `params`). A store older than the log has none: nothing."""
    if not _has_log(con):
        return
    if ids is not None:
        if ids:
            con.execute(
                f"INSERT INTO {TABLE} (memory_id, changed_at) SELECT DISTINCT unnest(?::VARCHAR[]), now()::TIMESTAMP",
                [list(ids)],
            )
        return
    con.execute(f"INSERT INTO {TABLE} (memory_id, changed_at) SELECT id, now()::TIMESTAMP FROM memories WHERE {where}",
                list(params))


def _has_log(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND schema_name = 'main'", [TABLE]
    ).fetchone()
    return bool(row and row[0])


def cursor(con: duckdb.DuckDBPyConnection) -> int:
    """The newest change's seq (0 with none, -1 without a log). For reading connections (a failed statement would
    abort a writer's transaction: `note_changed` asks the catalog instead)."""
    try:
        row = con.execute(f"SELECT coalesce(max(seq), 0) FROM {TABLE}").fetchone()
    except duckdb.CatalogException:
        return -1
    return int(row[0]) if row else 0


def changed_since(con: duckdb.DuckDBPyConnection, after: int, upto: int | None = None) -> list[str]:
    """Memories changed after seq `after` (up to `upto`), each once."""
    if after < 0:
        return []
    sql = f"SELECT DISTINCT memory_id FROM {TABLE} WHERE seq > ?"
    params: list[object] = [after]
    if upto is not None:
        sql += " AND seq <= ?"
        params.append(upto)
    try:
        return sorted(str(r[0]) for r in con.execute(sql, params).fetchall())
    except duckdb.CatalogException:
        return []
