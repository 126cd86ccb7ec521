"""A stand-in fleet code location for the real-server tests: the nightly consolidation of every agent under
$MEMORY_PIPELINE_FLEET_ROOT/agents/<id>/, one run per agent tagged `memory_pipeline/agent=<id>`, requested by a
schedule the daemon ticks every minute, executed by `fleet_executor()` (Celery when a broker is configured).

It exercises the deployment (Postgres instance, queued coordinator, daemon, Celery workers) with the project's
real assets; the product's own agent partitions live in memory_pipeline/defs/fleet (the `fleet` work)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg

from memory_pipeline.definitions import defs_with
from memory_pipeline.fleet_ops.executor import fleet_executor

AGENT_TAG = "memory_pipeline/agent"
NIGHT_TAG = "memory_pipeline/night"
AS_OF = os.environ.get("FLEET_TEST_AS_OF", "2026-11-01T03:30:00+00:00")


def fleet_root() -> Path:
    return Path(os.environ["MEMORY_PIPELINE_FLEET_ROOT"])


def agent_ids() -> list[str]:
    agents = fleet_root() / "agents"
    return sorted(p.name for p in agents.iterdir() if p.is_dir()) if agents.is_dir() else []


def agent_run_config(agent: str) -> dict[str, Any]:
    home = str(fleet_root() / "agents" / agent)
    return {
        "resources": {
            "store": {"config": {"home": home}},
            "engine": {"config": {"as_of": AS_OF}},
            "notifier": {"config": {"alerts_path": f"{home}/reports/alerts.jsonl"}},
            # Unpartitioned assets share one output path per asset key (storage/<asset>): agents' concurrent runs
            # would read each other's step outputs. Each agent's outputs go in its own workspace.
            "io_manager": {"config": {"base_dir": f"{home}/dagster_storage"}},
        }
    }


agent_night = dg.define_asset_job(
    "agent_night",
    selection=dg.AssetSelection.groups("abstraction"),
    executor_def=fleet_executor(),
    # A retried night runs whole: its first step takes over the dead run's lease and reconciles what it left.
    tags={"dagster/retry_strategy": "ALL_STEPS"},
    description="One agent's nightly consolidation (its workspace from the run config).",
)


def night_id(context: dg.ScheduleEvaluationContext) -> str:
    """Which night a tick belongs to: the tests name it in <fleet root>/night (the schedule ticks every minute;
    each agent gets one run per night); else the tick's date."""
    marker = fleet_root() / "night"
    return marker.read_text().strip() if marker.is_file() else f"{context.scheduled_execution_time:%Y-%m-%d}"


@dg.schedule(job=agent_night, cron_schedule="* * * * *", default_status=dg.DefaultScheduleStatus.RUNNING)
def fleet_nights(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    """One run per agent per night: a schedule's run key only dedupes within a tick, so agents whose night
    already has a run (the tests tick every minute) are left out."""
    night = night_id(context)
    had = {r.dagster_run.tags.get(AGENT_TAG) for r in context.instance.get_run_records(
        dg.RunsFilter(tags={NIGHT_TAG: night}))}
    return [
        dg.RunRequest(run_key=f"{agent}:{night}", run_config=agent_run_config(agent),
                      tags={AGENT_TAG: agent, NIGHT_TAG: night})
        for agent in agent_ids() if agent not in had
    ]


def _location() -> dg.Definitions:
    base = defs_with({})  # the project's assets, checks and resources, as the code location has them
    resources = {**(base.resources or {}), "io_manager": dg.fs_io_manager}  # base_dir per agent: run config
    return dg.Definitions(assets=base.assets, asset_checks=base.asset_checks, jobs=[agent_night],
                          schedules=[fleet_nights], resources=resources)


defs = _location()
