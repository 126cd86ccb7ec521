"""The store's blocking invariants as one list of violations (no Dagster). The asset checks report them, and the
importer evaluates them before and after an insert, so a file cannot bring in a state that every later night
would fail on. Each violation names its rows; a failing check shows the first of them and the count."""

from __future__ import annotations

import duckdb

from memory_pipeline.graph import queries as graph_queries
from memory_pipeline.store import invariants
from memory_pipeline.store.invariants import Violation

SHOWN = 10  # ids a failing check names in its description (plus the count)


def named(ids: list[str], shown: int = SHOWN) -> str:
    """`a, b, c (+7 more)`: the first ids and how many others."""
    more = f" (+{len(ids) - shown} more)" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more


def recompressed(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Summaries compressed again; an explicit higher-level rollup's members (seed 004 §6) are allowed."""
    explicit = graph_queries.explicit_rollup_members(con)
    return [i for i in invariants.recompressed_summaries(con) if i not in explicit]


def lineage(con: duckdb.DuckDBPyConnection) -> tuple[list[str], dict[str, list[str]]]:
    """(archived memories no active summary lists, active summary → its missing or unarchived sources)."""
    covered = graph_queries.sources_under_rollups(con) | graph_queries.explicit_rollup_members(con)
    orphans = [i for i in invariants.archived_without_summary(con) if i not in covered]
    return orphans, invariants.unarchived_sources(con)


def blocking_violations(con: duckdb.DuckDBPyConnection, critical_floor: float) -> list[Violation]:
    """Every blocking check of the nightly run except the row count (an import only adds rows)."""
    orphans, loose = lineage(con)
    connectivity = graph_queries.connectivity(con)
    lost: dict[str, list[str]] = {}
    for memory_id, item in connectivity.lost:
        lost.setdefault(memory_id, []).append(item)
    return [
        Violation(
            "protected_memories_untouched",
            "lifecycle",
            f"archived although pinned, locked or critical (importance ≥ {critical_floor:g})",
            invariants.protected_archived(con, critical_floor),
        ),
        Violation(
            "no_summary_recompressed",
            "compressed_from",
            "a summary that is archived into, or listed as a source of, another summary",
            recompressed(con),
        ),
        Violation(
            "lineage_consistent",
            "lifecycle",
            "archived, but no active summary lists it in compressed_from.source_ids",
            orphans,
        ),
        Violation(
            "lineage_consistent",
            "compressed_from",
            "an active summary whose sources must all be stored and archived",
            sorted(loose),
            {k: "missing or not archived: " + named(v, 5) for k, v in loose.items()},
        ),
        Violation(
            "keys_stay_reachable",
            "tags",
            "a tag or nexus key of this archived memory is on no active summary that lists it",
            sorted(lost),
            {k: named(v, 5) for k, v in lost.items()},
        ),
        Violation(
            "no_orphan_pending",
            "lifecycle",
            "a pending summary that its run never finished",
            invariants.pending_rows(con),
        ),
    ]
