"""Monthly distillation (seed 001 §8.4 `monthly_distillation`): old journals archived, project and people files
reviewed, MEMORY.md's cap enforced, a report; a monthly schedule, stopped by default (a dry run lists the plan)."""

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import dagster as dg

from memory_pipeline.defs.journals.common import GROUP
from memory_pipeline.defs.journals.partitions import monthly_partitions
from memory_pipeline.journals import monthly
from memory_pipeline.journals.monthly_llm import ClaudeReviewer
from memory_pipeline.operator.partition_keys import time_part
from memory_pipeline.resources import EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.resources.store import POOL


class MonthlyConfig(dg.Config):
    dry_run: bool = False  # list the plan (offline review, no LLM call); write nothing, not even the report


def month_as_of(month: str, today: date) -> date:
    """The day the month is distilled as of: the first day after it, or today while it is still running."""
    return min(monthly.parse_month(month)[1], today)


def run_monthly(
    home: Path,
    month: str,
    today: date,
    dry_run: bool,
    llm: LLMResource | None,
    log: Any = None,
    warn: Callable[[str], None] = print,
    reports_dir: Path | None = None,
    run_id: str = "adhoc",
    max_cost_usd: float | None = None,
    rate_limit_per_min: float = 10,
) -> tuple[monthly.Plan, dict[str, Any]]:
    """The one helper the asset and `memory-pipeline monthly` both call: Claude reviews when `llm` uses
    Anthropic (not in a dry run), offline otherwise."""
    reviewer = None
    if llm is not None and llm.uses_anthropic() and not dry_run:
        distiller = llm.get_distiller(
            reports_dir=reports_dir, run_id=run_id, max_cost_usd=max_cost_usd, rate_limit_per_min=rate_limit_per_min
        )
        reviewer = ClaudeReviewer(distiller)
    return monthly.distill(home, month, month_as_of(month, today), dry_run, reviewer, warn=warn, log=log,
                           run_id="" if run_id == "adhoc" else run_id)


@dg.asset(
    partitions_def=monthly_partitions,
    group_name=GROUP,
    pool=POOL,
    kinds={"markdown", "git", "json"},
    # The monthly distillation is seed 001 §8.4.
    description="The monthly distillation, for one month: journals older than 90 days move to "
    "archive/journal/; project and people files have their repeated bullets merged (MEMORY.md's rule offline; "
    "the review prompt through the `llm` resource with a key); MEMORY.md above 200 lines loses its most stale "
    "entries. Moved lines go to archive/monthly/<month>/ (never deleted); one `maintenance:` commit of exactly the "
    "paths it changed; the run's report in reports/monthly/<month>/<run>.json and the month's (the last run that "
    "changed something) in reports/monthly/<month>.json. `dry_run` lists the plan and writes nothing.",
)
def monthly_distillation(
    context: dg.AssetExecutionContext,
    config: MonthlyConfig,
    store: MemoryStoreResource,
    llm: LLMResource,
    engine: EngineConfig,
) -> dg.MaterializeResult:
    month = time_part(context.partition_key)[:7]  # agent × month in a fleet
    plan, report = run_monthly(store.home_path, month, engine.now().date(), config.dry_run, llm, log=context.log,
                               warn=context.log.warning, reports_dir=store.reports_dir,
                               run_id=context.run.run_id, max_cost_usd=engine.max_cost_usd,
                               rate_limit_per_min=engine.rate_limit_per_min)  # fmt: skip
    metadata: dict[str, Any] = {**plan.metadata(), "dry_run": config.dry_run, "month": month,
                                   "as_of": plan.as_of.isoformat(), "review": report["review"],
                                   "committed": report["committed"], "llm_calls": report.get("llm_calls", 0),
                                   "plan": dg.MetadataValue.json(report)}  # fmt: skip
    if not config.dry_run:
        metadata["report"] = dg.MetadataValue.path(str(monthly.run_report_path(store.home_path, month, report["run"])))
        metadata["month_report"] = dg.MetadataValue.path(str(monthly.report_path(store.home_path, month)))
        for line in [*report["notes"], *([report["commit_error"]] if report["commit_error"] else [])]:
            context.log.warning(line)
    return dg.MaterializeResult(metadata=metadata)


monthly_distillation_job = dg.define_asset_job(
    "monthly_distillation_job", selection=[monthly_distillation], partitions_def=monthly_partitions,
    description="The monthly distillation of one closed month (archive old journals, merge repeated bullets, cap "
    "MEMORY.md); `memory-pipeline monthly --month YYYY-MM [--dry-run]` does the same from a shell. Nothing is "
    "deleted; after a failure fix the cause in the step's log and re-materialize the month.",
)
# 04:00 on the 1st: the month that just closed (the latest partition), after the night's other journal jobs.
# Stopped by default, like the other journal schedules.
monthly_distillation_schedule = dg.build_schedule_from_partitioned_job(
    monthly_distillation_job, hour_of_day=4, minute_of_hour=0, name="monthly_distillation_schedule",
    description="04:00 on the 1st (journal timezone): runs monthly_distillation_job for the month that just "
    "closed. Stopped by default; a failed month is re-materialized from its partition.",
)
