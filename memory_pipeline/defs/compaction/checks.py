"""Asset checks: the seed's semantic limits (soft → WARN, hard → ERROR), the entry schema of every semantic
file, and "never delete" — files across the tiers plus the archive never drop."""

import dagster as dg

from memory_pipeline.compaction import governance, triggers
from memory_pipeline.compaction.tiers import measure_tier, memory_root, read_text, tier_files, unreadable
from memory_pipeline.defs.compaction.assets import compaction_report, semantic_insights
from memory_pipeline.resources import EngineConfig, MemoryStoreResource
from memory_pipeline.store.db import utcnow


def _semantic_tokens(store: MemoryStoreResource) -> dict[str, int]:
    return {f.name: f.tokens for f in measure_tier(store.home_path, "semantic", utcnow()).files}


@dg.asset_check(asset=semantic_insights, description="Every semantic file ≤ 900 tokens (the soft limit: a warning).")
def semantic_soft_limit(store: MemoryStoreResource) -> dg.AssetCheckResult:
    tokens = _semantic_tokens(store)
    over = {name: n for name, n in tokens.items() if n > triggers.SOFT_LIMIT}
    return dg.AssetCheckResult(
        passed=not over,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"max_tokens": max(tokens.values(), default=0), "over_soft_limit": dg.MetadataValue.json(over)},
    )


@dg.asset_check(asset=semantic_insights, description="Every semantic file ≤ 1200 tokens (the hard limit: "
                "compaction appends nothing more to a file past it).")
def semantic_hard_limit(store: MemoryStoreResource) -> dg.AssetCheckResult:
    tokens = _semantic_tokens(store)
    over = {name: n for name, n in tokens.items() if n > triggers.HARD_LIMIT}
    return dg.AssetCheckResult(
        passed=not over,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"max_tokens": max(tokens.values(), default=0), "over_hard_limit": dg.MetadataValue.json(over)},
    )


@dg.asset_check(
    asset=semantic_insights,
    description="Every entry has Title, Context and Durable Insight and holds no logs, governance or tool output.",
)
def semantic_entry_schema(store: MemoryStoreResource) -> dg.AssetCheckResult:
    problems: list[str] = []
    entries = 0
    skipped: list[str] = []
    for path in tier_files(memory_root(store.home_path) / "semantic"):
        reason = unreadable(path, "semantic")
        if reason is not None:  # reported by the plan, which then does not extract into semantic/
            skipped.append(f"{path.name}: {reason}")
            continue
        text = read_text(path)
        entries += len(governance.parse_semantic(text)[0])
        problems += [f"{path.name}: {e}" for e in governance.validate_semantic_file(text)]
    return dg.AssetCheckResult(
        passed=not problems,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "entries": entries,
            "errors": len(problems),
            "first_errors": dg.MetadataValue.json(problems[:20]),
            "skipped": dg.MetadataValue.json(skipped),
        },
    )


def _metadata_value(record: dg.EventLogRecord, key: str) -> int | None:
    materialization = record.asset_materialization
    value = materialization.metadata.get(key) if materialization else None
    value = getattr(value, "value", value)
    return int(value) if isinstance(value, int | float) else None


@dg.asset_check(
    asset=compaction_report,
    description="No file deleted from any tier: files in working + episodic + semantic + archive never drop "
    "(against this run's start, the previous materialisation and the count persisted in the meta file).",
)
def no_file_deleted(context: dg.AssetCheckExecutionContext, store: MemoryStoreResource, engine: EngineConfig) -> (
    dg.AssetCheckResult
):
    now = engine.now()
    current = sum(measure_tier(store.home_path, tier, now).file_count for tier in ("working", "episodic", "semantic",
                                                                               "archive"))
    records = context.instance.fetch_materializations(compaction_report.key, limit=2).records
    baselines: dict[str, int] = {}
    if records:
        for key, name in (("files_total_before", "this_run_start"), ("files_total_previous_run", "meta_file")):
            value = _metadata_value(records[0], key)
            if value is not None:
                baselines[name] = value
    if len(records) > 1:
        value = _metadata_value(records[1], "files_total_after")
        if value is not None:
            baselines["previous_materialization"] = value
    floor = max(baselines.values(), default=0)
    return dg.AssetCheckResult(
        passed=current >= floor,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"files_total": current, "floor": floor, "baselines": dg.MetadataValue.json(baselines)},
    )


CHECKS = [semantic_soft_limit, semantic_hard_limit, semantic_entry_schema, no_file_deleted]
