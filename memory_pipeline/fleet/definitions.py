"""The fleet code location: the nightly engine, the journals and tiered compaction, one partition per
agent (agents; agent × day, week or month where the asset is time-partitioned).

The assets and checks are the single-agent location's own, given these partitions with `map_asset_specs`; the
resources that name a workspace (store, engine, notifier) are built for each run from the run's agent, so every
step of agent A's run reads and writes only `<fleet root>/agents/A/`. The single-agent location
(`memory_pipeline.definitions`) is untouched. `memory-pipeline fleet daemon|webserver|worker`, the Helm values and
the Dockerfile load this module.
"""


import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg

from memory_pipeline.definitions import _assembled, _loaded_once
from memory_pipeline.defs.compaction import partitions as compaction_parts
from memory_pipeline.defs.compaction.partitions import partition_for as compaction_week
from memory_pipeline.defs.journals import partitions as journal_parts
from memory_pipeline.defs.journals.assets import DAILY_ASSETS
from memory_pipeline.defs.journals.partitions import journal_timezone
from memory_pipeline.fleet import budget, registry, retries
from memory_pipeline.fleet import report as fleet_report_rows
from memory_pipeline.fleet.processes.executor import fleet_default_executor, fleet_executor
from memory_pipeline.fleet.processes.names import AGENT_TAG, AGENTS, NIGHT_TAG, PERIOD_TAG, fleet_timezone
from memory_pipeline.operator.alert import Alert
from memory_pipeline.resources.engine import EngineConfig
from memory_pipeline.resources.notifier import NotifierResource
from memory_pipeline.resources.store import MemoryStoreResource

# Per agent: the nightly engine, the journals (agent × day, week, month), tiered compaction (agent × week) and
# the search index (kept current per agent by its eager condition). Rollups and graph: see README.
PER_AGENT_GROUPS = ("abstraction", "journals", "compaction", "search")
TIME_DIMENSIONS: dict[type, str] = {
    dg.DailyPartitionsDefinition: "day", dg.WeeklyPartitionsDefinition: "week", dg.MonthlyPartitionsDefinition: "month",
}
FLEET_CRON = os.environ.get("MEMORY_PIPELINE_FLEET_CRON", "30 3 * * *")
FLEET_TZ = fleet_timezone()
AS_OF_ENV = "MEMORY_PIPELINE_FLEET_AS_OF"  # a fixed clock for every night (tests, replays); empty = now
REPORT_ASSET = dg.AssetKey("report")

agents = dg.DynamicPartitionsDefinition(name=AGENTS)


def run_agent(context: dg.InitResourceContext) -> str:
    """The agent a run is for: its `agents` partition (alone, or the `agent` dimension of a multi-partition)."""
    tags = context.dagster_run.tags if context.dagster_run else {}
    agent = tags.get("dagster/partition/agent") or tags.get("dagster/partition") or tags.get(AGENT_TAG)
    if not agent:
        raise dg.Failure("this run names no agent: launch it for a partition of `agents`", allow_retries=False)
    return registry.check_agent_id(agent)


def _home(context: dg.InitResourceContext) -> Path:
    return registry.agent_home(registry.fleet_root(), run_agent(context))


@dg.resource(description="The memory store of the run's agent: <fleet root>/agents/<agent>/memory.duckdb")
def agent_store(context: dg.InitResourceContext) -> MemoryStoreResource:
    return MemoryStoreResource(home=str(_home(context)))


@dg.resource(description="Alerts of the run's agent: its reports/alerts.jsonl (and the webhook, when set)")
def agent_notifier(context: dg.InitResourceContext) -> NotifierResource:
    return NotifierResource(alerts_path=str(_home(context) / "reports" / "alerts.jsonl"),
                            webhook_url=os.environ.get("MEMORY_PIPELINE_WEBHOOK_URL") or None)


def _spent(root: Path, instance: dg.DagsterInstance) -> Any:
    """What a finished run really spent (its usage ledger × the price table); None while the instance does not
    know it as finished — it then counts at its whole reservation."""
    from memory_pipeline.resources.llm import LLMResource

    llm = LLMResource(mode=os.environ.get("MEMORY_PIPELINE_LLM", "auto"))

    def spent(agent: str, run_id: str) -> float | None:
        run = instance.get_run_by_id(run_id)
        if run is None or not run.is_finished:
            return None
        return float(llm.usage_summary(registry.agents_dir(root) / agent / "reports", run_id).cost(llm.prices()))

    return spent


@dg.resource(description="Engine settings; max_cost_usd is this night's allowance under the fleet's nightly cap")
def agent_engine(context: dg.InitResourceContext) -> EngineConfig:
    base = EngineConfig.from_env(as_of=os.environ.get(AS_OF_ENV, ""))
    root, agent = registry.fleet_root(), run_agent(context)
    tags = context.dagster_run.tags if context.dagster_run else {}
    night = tags.get(NIGHT_TAG) or f"{datetime.now(UTC):%Y-%m-%d}"  # the budget's night: when it runs
    reservation = budget.reserve(root, night, str(context.run_id), agent, base.max_cost_usd, budget.fleet_cap(),
                                 _spent(root, context.instance or dg.DagsterInstance.get()))
    if reservation.limited_by_fleet:
        context.log.warning(  # type: ignore[union-attr]
            f"fleet cap ${reservation.fleet_cap_usd:g} for {night}: {agent}'s night may spend "
            f"${reservation.allowance_usd:g} of its ${reservation.agent_cap_usd:g}"
        )
    return EngineConfig(**{**base.model_dump(), "max_cost_usd": reservation.allowance_usd})


AGENT_RESOURCES: dict[str, Any] = {"store": agent_store, "engine": agent_engine, "notifier": agent_notifier}


def _per_agent_partitions(partitions: dg.PartitionsDefinition | None) -> dg.PartitionsDefinition:
    """agents, or agents × the asset's own time partitions (one object per time partitions, so the assets of
    one job share it)."""
    if partitions is None:
        return agents
    if id(partitions) not in _MULTI:
        name = next((n for cls, n in TIME_DIMENSIONS.items() if isinstance(partitions, cls)), "time")
        _MULTI[id(partitions)] = dg.MultiPartitionsDefinition({"agent": agents, name: partitions})
    return _MULTI[id(partitions)]


_MULTI: dict[int, dg.MultiPartitionsDefinition] = {}
# A retried run runs whole: its first step takes over the dead run's lease and reconciles what it left.
RETRY_WHOLE = {"dagster/retry_strategy": "ALL_STEPS"}


def agent_of_partition(partitions: dg.PartitionsDefinition, key: str) -> str:
    """The agent of a partition key of a per-agent job: the key itself, or its `agent` dimension."""
    if isinstance(partitions, dg.MultiPartitionsDefinition):
        return partitions.get_partition_key_from_str(key).keys_by_dimension["agent"]
    return key


def agent_tagged(partitions: dg.PartitionsDefinition | None) -> dg.PartitionedConfig:
    """The job's partition → run tags mapping: every run of a per-agent job for a partition carries
    memory_pipeline/agent=<agent>, the run queue's per-agent limit, however it is launched — the schedules, a
    sensor, `memory-pipeline fleet night`, the UI's launchpad or a backfill of the job (Dagster asks the code
    location for a partition's tags: `PartitionedConfig.tags_for_partition_key_fn`)."""
    per_agent = _per_agent_partitions(partitions)
    return dg.PartitionedConfig(
        per_agent, run_config_for_partition_key_fn=lambda key: {},
        tags_for_partition_key_fn=lambda key: {AGENT_TAG: agent_of_partition(per_agent, key)})

agent_night = dg.define_asset_job(
    "agent_night",
    selection=dg.AssetSelection.groups("abstraction") | dg.AssetSelection.assets("search_usage", "agent_writes"),
    executor_def=fleet_executor(), tags=RETRY_WHOLE, config=agent_tagged(None),
    description="One agent's nightly consolidation (and its search-usage and agent-writes spools): the agent is "
    "the partition. "
    "Started by fleet_nights; a failed run is retried once, whole, and its first step reconciles what it left.")
# The search index follows every agent's writes by its own eager condition (one run per agent partition).
fleet_automation = dg.AutomationConditionSensorDefinition(
    "fleet_automation", target=dg.AssetSelection.groups("search"), default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=60,
    description="Every minute: updates each agent's search index after that agent's writes (one run per agent "
    "partition). A failed update leaves the previous index in use; the next evaluation requests it again.")
agent_journal_day = dg.define_asset_job(
    "agent_journal_day", selection=dg.AssetSelection.assets(*DAILY_ASSETS),
    executor_def=fleet_executor(), tags=RETRY_WHOLE,
    description="One agent's day: transcripts → journal. Started by fleet_journal_days; a failed day is retried "
    "once, whole, and can be re-materialized from its agent × day partition.")
agent_journal_week = dg.define_asset_job(
    "agent_journal_week", selection=dg.AssetSelection.assets("memory_md"), executor_def=fleet_executor(),
    tags=RETRY_WHOLE, description="One agent's week: its journals → MEMORY.md. Started by fleet_journal_weeks; a "
    "failed week is retried once, whole, and can be re-materialized from its agent × week partition.")
agent_journal_month = dg.define_asset_job(
    "agent_journal_month", selection=dg.AssetSelection.assets("monthly_distillation"), executor_def=fleet_executor(),
    tags=RETRY_WHOLE, config=agent_tagged(journal_parts.monthly_partitions),  # seed 001 §8.4
    description="One agent's monthly distillation (archive old journals, merge repeats, cap MEMORY.md). Started "
    "by fleet_journal_months; a failed month is retried once, whole, and can be re-materialized from its "
    "partition.")
agent_compaction_week = dg.define_asset_job(
    "agent_compaction_week", selection=dg.AssetSelection.groups("compaction"), executor_def=fleet_executor(),
    tags=RETRY_WHOLE, config=agent_tagged(compaction_parts.weekly_partitions),
    description="One agent's tiered compaction for a week (evaluates first, acts on a "
    "threshold). Started by fleet_compaction_weeks; a failed week is retried once, whole.")


def per_agent_requests(
    context: dg.ScheduleEvaluationContext, job: str, period: str | None, run_config: dict[str, Any] | None = None,
) -> list[dg.RunRequest]:
    """One run of `job` per agent for `period` (a day or week key; None: the agent alone). A schedule's run key
    dedupes only within a tick, so agents that already have such a run are left out: a cron that ticks more
    often never starts a second one. Runs are not batched: a run per agent measured 8-9 % over compute."""
    night = f"{context.scheduled_execution_time:%Y-%m-%d}"
    label = period or night
    had = {r.dagster_run.tags.get(AGENT_TAG) for r in context.instance.get_run_records(
        dg.RunsFilter(job_name=job, tags={PERIOD_TAG: label}))}
    return [
        dg.RunRequest(
            run_key=f"{job}:{agent}:{label}",
            partition_key=dg.MultiPartitionKey({"agent": agent, DIMENSION_OF_JOB[job]: period}) if period else agent,
            run_config=run_config or {},
            tags={AGENT_TAG: agent, NIGHT_TAG: night, PERIOD_TAG: label},
        )
        for agent in context.instance.get_dynamic_partitions(AGENTS) if agent not in had
    ]


def _days_before(context: dg.ScheduleEvaluationContext, days: int) -> str:
    return f"{context.scheduled_execution_time - timedelta(days=days):%Y-%m-%d}"


DIMENSION_OF_JOB = {"agent_journal_day": "day", "agent_journal_week": "week", "agent_journal_month": "month",
                    "agent_compaction_week": "week"}


@dg.schedule(job=agent_night, cron_schedule=FLEET_CRON, execution_timezone=FLEET_TZ,
             default_status=dg.DefaultScheduleStatus.RUNNING,
             description=f"Every night (cron `{FLEET_CRON}`, {FLEET_TZ}; MEMORY_PIPELINE_FLEET_CRON changes it): one "
             "agent_night run per registered agent that has none yet. A failed night is retried once, whole, and "
             "shows in fleet_report; the other agents are not held back.")
def fleet_nights(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    """Every agent's nightly consolidation."""
    return per_agent_requests(context, "agent_night", None)


@dg.schedule(job=agent_journal_day, cron_schedule="15 0 * * *", execution_timezone=journal_timezone(),
             default_status=dg.DefaultScheduleStatus.RUNNING,
             description="00:15 (journal timezone): one agent_journal_day run per agent for the day that just "
             "closed. A failed agent's day is re-materialized from its partition.")
def fleet_journal_days(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    """00:15: every agent's day that just closed (today is a partition too, for the flush)."""
    return per_agent_requests(context, "agent_journal_day", _days_before(context, 1))


@dg.schedule(job=agent_journal_week, cron_schedule="0 1 * * 0", execution_timezone=journal_timezone(),
             default_status=dg.DefaultScheduleStatus.RUNNING,
             description="Sunday 01:00 (journal timezone): one agent_journal_week run per agent for the "
             "Sunday–Saturday week that just closed. A failed agent's week is re-materialized from its partition.")
def fleet_journal_weeks(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    """Sunday 01:00: every agent's week (Sunday–Saturday) that just closed."""
    return per_agent_requests(context, "agent_journal_week", _days_before(context, 7))


@dg.schedule(job=agent_journal_month, cron_schedule="0 4 1 * *", execution_timezone=journal_timezone(),
             default_status=dg.DefaultScheduleStatus.RUNNING,
             description="04:00 on the 1st (journal timezone): one agent_journal_month run per agent for the month "
             "that just closed. A failed agent's month is re-materialized from its partition.")
def fleet_journal_months(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    """04:00 on the 1st: every agent's month that just closed."""
    last_day = context.scheduled_execution_time - timedelta(days=1)
    return per_agent_requests(context, "agent_journal_month", f"{last_day:%Y-%m}-01")


@dg.schedule(job=agent_compaction_week, cron_schedule="0 3 * * 0", execution_timezone="UTC",
             default_status=dg.DefaultScheduleStatus.RUNNING,
             description="Sunday 03:00 UTC: one agent_compaction_week run per agent, which evaluates that agent's "
             "tiers first and acts only on a threshold. A failed agent's week is run again from its partition.")
def fleet_compaction_weeks(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    """Sunday 03:00 UTC, as the single-agent schedule: each agent's run evaluates its own tiers first."""
    now = context.scheduled_execution_time
    config = {"ops": {"tier_volumes": {"config": {"trigger": "weekly", "as_of": now.isoformat()}}}}
    return per_agent_requests(context, "agent_compaction_week", compaction_week(now), config)


@dg.sensor(
    minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING,
    description="Every 30 s: keeps the `agents` partitions equal to the folders under <fleet root>/agents "
    "(`memory-pipeline agents add|remove`). If it fails, check that MEMORY_PIPELINE_FLEET_ROOT is set and mounted "
    "on the daemon's machine.",
)
def agents_registry(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """The `agents` partitions follow the folders under <fleet root>/agents (the registry every machine sees):
    an agent added or removed by hand, or while the instance was unreachable, is picked up here."""
    on_disk = set(registry.list_agents(registry.fleet_root()))
    known = set(context.instance.get_dynamic_partitions(AGENTS))
    requests: list[Any] = []
    if on_disk - known:
        requests.append(agents.build_add_request(sorted(on_disk - known)))
    if known - on_disk:
        requests.append(agents.build_delete_request(sorted(known - on_disk)))
    return dg.SensorResult(dynamic_partitions_requests=requests)


@dg.sensor(
    minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING,
    description="Every minute: a failed run that Dagster decided to retry (tag dagster/will_retry=true) but whose "
    "retry has not come two minutes later is announced failed once more, so Dagster's run-retry daemon retries it. "
    "Dagster's daemon can read a failure a moment before the run's status says so and then pass over it for good; "
    "this makes up for it once per run (the run gets the tag memory_pipeline/failure_reannounced).",
)
def missed_retries(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    """Announce again each failure whose decided retry never came (see `memory_pipeline.fleet.retries`)."""
    instance = context.instance
    if not instance.run_retries_enabled:
        return dg.SkipReason("run retries are off in this instance")
    now = datetime.now(UTC)
    records = instance.get_run_records(dg.RunsFilter(
        statuses=[dg.DagsterRunStatus.FAILURE], tags={retries.WILL_RETRY_TAG: "true"},
        updated_after=now - timedelta(days=1)), limit=200)
    runs = {r.dagster_run.run_id: r.dagster_run for r in records}
    failed = [retries.Failed(r.dagster_run.run_id, r.dagster_run.tags, r.end_time) for r in records]
    missed = retries.missed_retries(failed, now.timestamp(), retries.MISSED_AFTER_S)
    for run_id in missed:
        run = runs[run_id]
        # the failure first, then the tag: a tick cut between them finds the run failed just now and waits
        instance.report_run_failed(run, "Failure announced again: Dagster decided to retry this run, but its "
                                   "run-retry daemon passed over the failure (it read the run before its status "
                                   f"said FAILURE) and no retry came in {retries.MISSED_AFTER_S:.0f} s.")
        instance.add_run_tags(run_id, {retries.REANNOUNCED_TAG: "true"})
        context.log.info(f"run {run_id}: failure announced again for Dagster's run-retry daemon")
    return dg.SkipReason(f"{len(missed)} failure(s) announced again for a missed retry" if missed
                         else "every failed run that is to be retried has its retry")


def _registered(home: Path) -> datetime:
    marker = home / registry.MARKER
    return datetime.fromtimestamp((marker if marker.exists() else home).stat().st_mtime, UTC)


def _nights(instance: dg.DagsterInstance, agent: str) -> list[fleet_report_rows.Night]:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=REPORT_ASSET, asset_partitions=[agent]), limit=60
    ).records
    nights = []
    for rec in records:
        mat = rec.asset_materialization
        meta = {k: getattr(v, "value", v) for k, v in (mat.metadata if mat else {}).items()}
        nights.append(fleet_report_rows.night_from_report(
            Path(str(meta.get("report_path", ""))), rec.run_id, datetime.fromtimestamp(rec.timestamp, UTC), meta))
    return nights


_UNFINISHED = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
               dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


def _running(instance: dg.DagsterInstance, agent: str) -> list[fleet_report_rows.Running]:
    records = instance.get_run_records(dg.RunsFilter(tags={AGENT_TAG: agent}, statuses=_UNFINISHED), limit=20)
    return [fleet_report_rows.Running(r.dagster_run.run_id, r.dagster_run.status.value,
                                      datetime.fromtimestamp(r.start_time or r.create_timestamp.timestamp(), UTC))
            for r in records]  # fmt: skip


@dg.asset(
    group_name="fleet",
    kinds={"json"},
    check_specs=[dg.AssetCheckSpec(
        "every_agent_succeeded_within_48h", asset="fleet_report",
        description="Warns when an agent has had no successful night for 48 hours, or has a night in flight for "
        "longer than a night may take (2 h) — a hung night (the agents are named in the check's metadata and in "
        "an alert): open that agent's last agent_night run to see why.")],
    description="Per agent: the last night's verdict, reduction, cost, duration, last success and deferrals, "
    "and any night still in flight with its state and age (over 2 h: overdue).",
)
def fleet_report(context: dg.AssetExecutionContext, fleet_notifier: NotifierResource) -> dg.MaterializeResult:
    root, now = registry.fleet_root(), datetime.now(UTC)
    held = budget.recent_reservations(root)
    rows = [
        fleet_report_rows.agent_row(agent, _nights(context.instance, agent),
                                    _registered(registry.agents_dir(root) / agent), now, held,
                                    _running(context.instance, agent))
        for agent in registry.list_agents(root)
    ]
    numbers = fleet_report_rows.summary(rows)
    path = fleet_report_rows.write(root / "reports", now, rows, numbers)
    stale = [r.agent for r in rows if r.stale]
    overdue = [r.agent for r in rows if r.overdue]
    if stale:
        fleet_notifier.send(Alert(priority="action", source="report", run_id=context.run_id,
                                  subject=f"{len(stale)} agent(s) without a successful night for 48 h: "
                                          f"{', '.join(stale[:10])}", details={"agents": stale}), context.log)
    if overdue:
        fleet_notifier.send(Alert(priority="action", source="report", run_id=context.run_id,
                                  subject=f"{len(overdue)} agent(s) with a night in flight for over 2 h: "
                                          f"{', '.join(overdue[:10])}", details={"agents": overdue}), context.log)
    return dg.MaterializeResult(
        metadata={**numbers, "report_path": dg.MetadataValue.path(str(path)),
                  "agents_table": dg.MetadataValue.md(fleet_report_rows.markdown(rows))},
        check_results=[dg.AssetCheckResult(
            check_name="every_agent_succeeded_within_48h", passed=not stale and not overdue,
            severity=dg.AssetCheckSeverity.WARN, metadata={"stale_agents": ", ".join(stale) or "none",
                                                           "overdue_agents": ", ".join(overdue) or "none"})],
    )


fleet_report_job = dg.define_asset_job(
    "fleet_report_job", selection=[fleet_report],
    description="Rebuilds the fleet report (every agent's last night) under <fleet root>/reports from the agents' "
    "runs; it changes no agent, so a failed run is simply launched again once the cause in its log is fixed.")
fleet_report_schedule = dg.ScheduleDefinition(
    job=fleet_report_job, cron_schedule="45 * * * *", execution_timezone=FLEET_TZ,
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every hour at :45: runs fleet_report_job. A failed run is replaced by the next hour's.",
)


def _per_agent(spec: dg.AssetSpec) -> dg.AssetSpec:
    return spec.replace_attributes(partitions_def=_per_agent_partitions(spec.partitions_def))


def _per_agent_check(checks: dg.AssetsDefinition, partitions: dict[dg.AssetKey, Any]) -> dg.AssetsDefinition:
    """A check of a per-agent asset runs per agent too (with its asset's partitions): unpartitioned, it would
    load every agent's partition of its inputs. (`AssetCheckSpec.partitions_def` is a preview in Dagster 1.13,
    with no public mapper yet.)"""
    attrs = checks.get_attributes_dict()
    specs = attrs["check_specs_by_output_name"]
    attrs["check_specs_by_output_name"] = {
        n: s._replace(partitions_def=partitions[s.asset_key]) for n, s in specs.items()}
    return checks.__class__.dagster_internal_init(**attrs)


def _not_per_agent(assets: list[dg.AssetsDefinition]) -> list[dg.AssetSpec]:
    """Upstream assets of per-agent ones that the fleet does not build (rollups): the graph would show them as
    bare external assets; they say why instead."""
    defined = {k for a in assets for k in a.keys}
    upstream = {dep.asset_key for a in assets for spec in a.specs for dep in spec.deps}
    return [dg.AssetSpec(key, description="Built by the single-agent location only: the fleet does not build it "
                         "per agent yet, so here it is an upstream the per-agent assets do not wait for.")
            for key in sorted(upstream - defined, key=lambda k: k.to_user_string())]


def location(resources: dict[str, Any] | None = None) -> dg.Definitions:
    """The fleet's definitions; `resources` replace the defaults (tests)."""
    base = _assembled(_loaded_once(), {})
    per_agent = [a for a in base.assets or [] if isinstance(a, dg.AssetsDefinition)
                 and any(s.group_name in PER_AGENT_GROUPS for s in a.specs)]
    keys = {k for a in per_agent for k in a.keys}
    checks = [c for c in base.asset_checks or [] if all(k.asset_key in keys for k in c.check_keys)]
    fleet = {"fleet_notifier": NotifierResource(
        alerts_path=str(registry.fleet_root() / "reports" / "alerts.jsonl"),
        webhook_url=os.environ.get("MEMORY_PIPELINE_WEBHOOK_URL") or None)}
    mapped = [a.map_asset_specs(_per_agent) for a in per_agent]
    partitions = {spec.key: spec.partitions_def for a in mapped for spec in a.specs}
    return dg.Definitions(
        assets=[*mapped, fleet_report, *_not_per_agent(mapped)],
        asset_checks=[_per_agent_check(c, partitions) for c in checks],
        jobs=[agent_night, agent_journal_day, agent_journal_week, agent_journal_month, agent_compaction_week,
              fleet_report_job],
        schedules=[fleet_nights, fleet_journal_days, fleet_journal_weeks, fleet_journal_months,
                   fleet_compaction_weeks, fleet_report_schedule],
        sensors=[agents_registry, fleet_automation, missed_retries],
        executor=fleet_default_executor(),  # the jobs without their own: the report, the index's automation runs
        # the base's own (embedder, llm, the journals' IO manager, which follows `store`), per-agent ones on top
        resources={**(base.resources or {}), **AGENT_RESOURCES, **fleet, **(resources or {})},
    )


@dg.definitions
def defs() -> dg.Definitions:
    return location()
