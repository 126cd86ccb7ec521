"""Asset checks: the store's invariants (blocking, ERROR) and the report's health bands (seed 000 §8.4)."""

import json
from collections.abc import Callable

import dagster as dg
import duckdb

from memory_pipeline.abstraction.outcomes import RunStart
from memory_pipeline.abstraction.report import CompressionRunReport, health_bands, report_from_dict
from memory_pipeline.abstraction.violations import SHOWN, lineage, named, recompressed
from memory_pipeline.defs.abstraction.archiver import archive_updates
from memory_pipeline.defs.abstraction.reporter import report
from memory_pipeline.graph import queries as graph_queries
from memory_pipeline.resources import EngineConfig, MemoryStoreResource
from memory_pipeline.store import invariants

ERROR = dg.AssetCheckSeverity.ERROR
WARN = dg.AssetCheckSeverity.WARN


def _violations(name: str, ids: list[str]) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=not ids,
        severity=ERROR,
        metadata={"violations": len(ids), "examples": ", ".join(ids[:SHOWN]) or "none"},
        description=None if not ids else f"{name}: {len(ids)} violation(s): {named(ids)}",
    )


def _query(store: MemoryStoreResource, fn: Callable[[duckdb.DuckDBPyConnection], list[str]]) -> list[str]:
    with store.open().connect() as con:
        return fn(con)


@dg.asset_check(
    asset=archive_updates,
    blocking=True,
    additional_ins={"exact_duplicates": dg.AssetIn()},
    description="No memory row is ever deleted: the count never drops below the run's start or any earlier run.",
)
def no_memory_deleted(store: MemoryStoreResource, exact_duplicates: RunStart) -> dg.AssetCheckResult:
    with store.open().connect() as con:
        current, high_water = invariants.row_count_high_water(con)
    floor = max(high_water, exact_duplicates.memory_count_before)
    return dg.AssetCheckResult(
        passed=current >= floor,
        severity=ERROR,
        metadata={"memories": current, "must_be_at_least": floor},
        description=None if current >= floor else f"{floor - current} memory row(s) missing: {current} < {floor}",
    )


@dg.asset_check(
    asset=archive_updates, blocking=True, description="Critical, pinned and locked memories are never archived."
)
def protected_memories_untouched(store: MemoryStoreResource, engine: EngineConfig) -> dg.AssetCheckResult:
    return _violations(
        "protected memories archived",
        _query(store, lambda con: invariants.protected_archived(con, engine.critical_floor)),
    )


@dg.asset_check(asset=archive_updates, blocking=True, description="A summary is never compressed again.")
def no_summary_recompressed(store: MemoryStoreResource) -> dg.AssetCheckResult:
    """An explicit higher-level rollup (`summary_of` provenance) is the one allowed exception."""  # seed 004 §6
    return _violations("summaries recompressed", _query(store, recompressed))


@dg.asset_check(
    asset=archive_updates,
    blocking=True,
    description="Every archived memory is listed by an active summary; every active summary's sources are archived.",
)
def lineage_consistent(store: MemoryStoreResource) -> dg.AssetCheckResult:
    with store.open().connect() as con:
        orphans, unarchived = lineage(con)
    loose = sorted(unarchived)
    problems = [f"archived without an active summary: {named(orphans)}"] if orphans else []
    problems += [f"active summaries with missing or unarchived sources: {named(loose)}"] if loose else []
    return dg.AssetCheckResult(
        passed=not orphans and not loose,
        severity=ERROR,
        metadata={
            "archived_without_summary": len(orphans),
            "summaries_with_active_sources": len(loose),
            "examples": ", ".join((orphans + loose)[:SHOWN]) or "none",
        },
        description="; ".join(problems) or None,
    )


@dg.asset_check(
    asset=archive_updates,
    blocking=True,
    # The rule is seed 004 §4.3.
    description="Every tag and nexus key of an archived source is reachable from an active summary "
    "(its rolled-up tags/keys), or listed there as deliberately dropped by the cap.",
)
def keys_stay_reachable(store: MemoryStoreResource) -> dg.AssetCheckResult:
    with store.open().connect() as con:
        c = graph_queries.connectivity(con)
    return dg.AssetCheckResult(
        passed=c.passed,
        severity=ERROR,
        metadata={
            "sources_checked": c.sources_checked,
            "items_checked": c.items_checked,
            "lost": len(c.lost),
            "dropped_by_cap": len(c.dropped_by_cap),
            "legacy_sources": c.legacy_sources,
            "lost_examples": ", ".join(f"{m} {i}" for m, i in c.lost[:10]) or "none",
            "dropped_examples": ", ".join(f"{m} {i}" for m, i in c.dropped_by_cap[:10]) or "none",
        },
        description=None
        if c.passed
        else f"{len(c.lost)} key(s)/tag(s) of archived sources unreachable: "
        + named([f"{m} {i}" for m, i in c.lost]),
    )


@dg.asset_check(asset=archive_updates, blocking=True, description="No pending summary outlives its run.")
def no_orphan_pending(store: MemoryStoreResource) -> dg.AssetCheckResult:
    return _violations("pending rows", _query(store, invariants.pending_rows))


def _load_report(store: MemoryStoreResource, run_id: str) -> CompressionRunReport:
    return report_from_dict(json.loads((store.reports_dir / f"compression-{run_id}.json").read_text(encoding="utf-8")))


# seed §8.3: "should not happen"
@dg.asset_check(
    asset=report,
    description="Token reduction must never be negative; if it is, the night made the store bigger: read the run "
    "report and roll the run back with `memory-pipeline rollback --run-id`.",
)
def token_reduction_not_negative(
    context: dg.AssetCheckExecutionContext, store: MemoryStoreResource
) -> dg.AssetCheckResult:
    r = _load_report(store, context.run.run_id)
    return dg.AssetCheckResult(
        passed=r.token_reduction_pct >= 0, severity=ERROR, metadata={"token_reduction_pct": r.token_reduction_pct}
    )


# The health bands are seed §8.4.
@dg.asset_check(
    asset=report,
    description="The report's health bands: warns when any field is in its warning or bad band (or the verdict is "
    "not PASS); the check's metadata names the fields and their values.",
)
def report_health(context: dg.AssetCheckExecutionContext, store: MemoryStoreResource) -> dg.AssetCheckResult:
    r = _load_report(store, context.run.run_id)
    bands = health_bands(r)
    off = [b for b in bands if b.band != "good"]
    return dg.AssetCheckResult(
        passed=not off and r.verdict == "PASS",
        severity=WARN,
        metadata={"verdict": r.verdict, **{b.field: f"{b.value} ({b.band})" for b in bands}},
        description=None if not off else "outside the good band: " + ", ".join(b.field for b in off),
    )


CHECKS = [
    no_memory_deleted,
    protected_memories_untouched,
    no_summary_recompressed,
    lineage_consistent,
    keys_stay_reachable,
    no_orphan_pending,
    token_reduction_not_negative,
    report_health,
]
