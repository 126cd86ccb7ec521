"""Tiered compaction (seed 003) as assets: measure and decide → working → episodic → episodic → semantic →
report. The plan is made once, in `tier_volumes`, and the steps after it act only on that plan, in the same run."""

from datetime import datetime
from typing import Any

import dagster as dg

from memory_pipeline.compaction import engine as compactor
from memory_pipeline.compaction import report
from memory_pipeline.compaction.llm_extract import extractor_for
from memory_pipeline.compaction.tiers import DEFAULT_SEMANTIC_FILE
from memory_pipeline.defs.compaction.partitions import clamp_to_window, weekly_partitions
from memory_pipeline.operator.partition_keys import time_part
from memory_pipeline.resources import EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.store.records import parse_timestamp

GROUP = "compaction"
TIER_POOL = "memory_tiers"  # one run moves tier files at a time (pools are limited to 1 in dagster.yaml)
TRIGGER_TAG = "memory_pipeline/compaction_trigger"  # what the sensor or schedule saw when it asked
FIRED_TAG = "memory_pipeline/compaction_fired"  # what the run itself evaluated (highest priority first)
APPROVED_TAG = "memory_pipeline/approved"
MODE_TAG = "memory_pipeline/compaction_mode"
REQUESTED_BY_TAG = "memory_pipeline/compaction_requested_by"


class CompactionConfig(dg.Config):
    """Run config of a compaction (on `tier_volumes`; the later steps follow its plan)."""

    approved: bool = False  # the seed's explicit APPROVED: Tier C, first run, cooldown, duplicates, hard limit
    dry_run: bool = False  # evaluate and report what would happen; move and append nothing
    as_of: str = ""  # ISO timestamp used as "now" (empty: the engine's clock)
    trigger: str = "manual"  # who asked: manual | weekly | sensor:<name>
    semantic_file: str = DEFAULT_SEMANTIC_FILE  # the default semantic file: insights no domain claims
    # domain → keywords for routing insights to semantic/<domain>.md; None: the built-in vocabulary
    # (openclaw, whatsapp-bot); {}: no keyword routing (explicit domains and the default file only)
    domains: dict[str, list[str]] | None = None


def _json_values(metadata: dict[str, Any]) -> dict[str, Any]:
    """The domain's metadata with its lists and dicts shown as JSON."""
    return {k: dg.MetadataValue.json(v) if isinstance(v, list | dict) else v for k, v in metadata.items()}


def _clock(context: dg.AssetExecutionContext, config: CompactionConfig, engine_config: EngineConfig) -> datetime:
    clock = parse_timestamp(config.as_of, "tier_volumes config", "as_of") if config.as_of else engine_config.now()
    try:
        return clamp_to_window(clock, time_part(context.partition_key))
    except ValueError as exc:
        raise dg.Failure(str(exc)) from None


def _same_run(context: dg.AssetExecutionContext, plan: compactor.Plan) -> None:
    if plan.run_id != context.run_id:
        raise dg.Failure(
            f"the compaction plan comes from run {plan.run_id}; materialise tier_volumes in the same run "
            "(job tiered_compaction) so the steps act on a fresh evaluation"
        )


@dg.asset(group_name=GROUP, partitions_def=weekly_partitions, kinds={"python"}, code_version="2")
def tier_volumes(
    context: dg.AssetExecutionContext, config: CompactionConfig, store: MemoryStoreResource, engine: EngineConfig
) -> dg.Output[compactor.Plan]:
    """Per tier: file count, total tokens, oldest file age; the semantic file's tokens; every threshold in
    the order they are checked (hard limit, risk, volume, weekly) and which fired; for each step, whether it
    may run on its own or waits for approval — all before any extraction. Also the plan: what this run may
    do and, when it may do nothing, why."""
    # The approval classes are the compaction seed's Tier B (runs on its own) and Tier C (waits for approval).
    home = store.home_path
    now = _clock(context, config, engine)
    try:
        options = compactor.options_for(
            config.approved, config.dry_run, config.trigger, config.semantic_file, config.domains
        )
    except ValueError as exc:
        raise dg.Failure(f"tier_volumes config: {exc}") from None
    try:
        plan = compactor.plan(home, now, options)
    except ValueError as exc:  # a tier folder that is a file: one line naming it
        raise dg.Failure(str(exc)) from None
    plan.run_id = context.run_id
    context.instance.add_run_tags(
        context.run_id,
        {
            APPROVED_TAG: str(config.approved).lower(),
            FIRED_TAG: ",".join(plan.evaluation.fired_triggers) or "none",
            MODE_TAG: plan.mode,
        },
    )
    for skipped in plan.state.skipped:
        context.log.warning(f"compaction: {skipped.describe()}")
    context.log.info(f"compaction plan: {plan.mode}; trigger {plan.evaluation.primary_detail()}; "
                     f"classification {plan.classification}; {plan.no_action_reason or ''}")
    return dg.Output(plan, metadata=_json_values(report.plan_metadata(plan, now)))


@dg.asset(group_name=GROUP, partitions_def=weekly_partitions, pool=TIER_POOL, kinds={"markdown"}, code_version="2")
def episodic_summaries(
    context: dg.AssetExecutionContext,
    store: MemoryStoreResource,
    llm: LLMResource,
    engine: EngineConfig,
    tier_volumes: compactor.Plan,
) -> dg.Output[compactor.WorkingResult]:
    """Working files older than 7 days → `episodic/<name>`, a summary of 3–5 key-event bullets; each original →
    `archive/<name>-archived-YYYY-MM-DD.md` (summary written and synced first, then the move). Summaries
    by Claude when configured, by the offline extractor otherwise or when the LLM fails for a file."""
    _same_run(context, tier_volumes)
    write = tier_volumes.run_working
    writes = write and bool(tier_volumes.working_due)
    extractor = extractor_for(llm, writes, store.reports_dir, context.run_id, engine, context.log.info)
    fallbacks: list[compactor.Fallback] = []
    compacted = compactor.compact_working(store.home_path, tier_volumes, write, extractor, fallbacks)
    for c in compacted:
        context.log.info(f"{'compacted' if write else 'would compact'} {c.source} → episodic/{c.episodic}, "
                         f"archive/{c.archived} [{c.extractor}]{' (recovered)' if c.recovered else ''}")
    for f in fallbacks:
        context.log.warning(f"LLM summary of {f.file} failed, offline extractor used: {f.reason}")
    return dg.Output(
        compactor.WorkingResult(compacted, fallbacks, extractor.name if extractor else compactor.OFFLINE),
        metadata={
            "files_compacted": len(compacted) if write else 0,
            "would_compact": 0 if write else len(compacted),
            "extractor": extractor.name if extractor else compactor.OFFLINE,
            "llm_fallbacks": len(fallbacks),
            "files": dg.MetadataValue.json([c.__dict__ for c in compacted]),
        },
    )


@dg.asset(group_name=GROUP, partitions_def=weekly_partitions, pool=TIER_POOL, kinds={"markdown"}, code_version="2")
def semantic_insights(
    context: dg.AssetExecutionContext,
    store: MemoryStoreResource,
    llm: LLMResource,
    engine: EngineConfig,
    tier_volumes: compactor.Plan,
    episodic_summaries: compactor.WorkingResult,
) -> dg.Output[compactor.SemanticResult]:
    """Episodic files older than 30 days → durable insights appended to `semantic/<file>` when they pass
    the schema and the pollution filter, are no duplicate title, fit the size limits and respect the
    cooldown (or carry an approval); then the episodic file goes to the archive. Append-only."""
    _same_run(context, tier_volumes)
    home = store.home_path
    plan = tier_volumes
    compacted = episodic_summaries.compacted
    writes = plan.run_semantic and bool(plan.episodic_due)
    extractor = extractor_for(llm, writes, store.reports_dir, context.run_id, engine, context.log.info)
    result = compactor.extract_semantic(home, plan, plan.run_semantic, extractor)
    for o in result.outcomes:
        context.log.info(f"insight {o.title!r} from {o.episodic} → {o.semantic_file or '-'} ({o.routed_by}, "
                         f"{o.extractor}): {o.status} {o.reason}".rstrip())
    for f in result.fallbacks:
        context.log.warning(f"LLM insight extraction of {f.file} failed, offline extractor used: {f.reason}")
    compactor.finish_run(home, plan, compacted, result, context.run_id)
    extractor_name = extractor.name if extractor else compactor.OFFLINE
    return dg.Output(result, metadata=_json_values(report.semantic_metadata(plan, result, extractor_name)))


@dg.asset(group_name=GROUP, partitions_def=weekly_partitions, kinds={"json"}, code_version="2")
def compaction_report(
    context: dg.AssetExecutionContext,
    store: MemoryStoreResource,
    llm: LLMResource,
    tier_volumes: compactor.Plan,
    episodic_summaries: compactor.WorkingResult,
    semantic_insights: compactor.SemanticResult,
) -> dg.MaterializeResult:
    """The compaction run's report: what moved from working to episodic and from episodic to semantic, what
    was archived, held for approval or found duplicated, each semantic file's size against its limits, the
    cooldown, the trigger and thresholds, and the LLM's use — as `reports/compaction-<run_id>.json` (+ `.md`)
    and as metadata; when nothing was done, the reason."""
    _same_run(context, tier_volumes)
    payload = report.run_report(context.run_id, store.home_path, store.reports_dir, tier_volumes,
                                episodic_summaries, semantic_insights, llm)  # fmt: skip
    text = report.output_text(payload)
    path = report.write_report(store.reports_dir, context.run_id, payload, text)
    context.log.info("\n" + text)
    scalar = {k: v for k, v in payload.items() if isinstance(v, int | float | str | bool) and v is not None}
    return dg.MaterializeResult(
        metadata={
            **scalar,
            "output": dg.MetadataValue.md("```\n" + text + "```"),
            "report_path": dg.MetadataValue.path(str(path)),
            "thresholds_evaluated": dg.MetadataValue.json(payload["thresholds_evaluated"]),
            "tier_classification": dg.MetadataValue.json(payload["tier_classification"]),
            "warnings": dg.MetadataValue.json(payload["warnings"]),
            "semantic_files": dg.MetadataValue.json(payload["semantic_files"]),
            "llm": dg.MetadataValue.json(payload["llm"]),
        }
    )


ASSETS = [tier_volumes, episodic_summaries, semantic_insights, compaction_report]
