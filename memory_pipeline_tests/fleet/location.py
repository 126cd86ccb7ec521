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
    description="One agent's nightly consolidation (its workspace from the run config).",
)


@dg.schedule(job=agent_night, cron_schedule="* * * * *", default_status=dg.DefaultScheduleStatus.RUNNING)
def fleet_nights(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    """One run per agent per tick (the tests tick it every minute)."""
    tick = context.scheduled_execution_time.strftime("%Y%m%dT%H%M")
    return [
        dg.RunRequest(run_key=f"{agent}:{tick}", run_config=agent_run_config(agent), tags={AGENT_TAG: agent})
        for agent in agent_ids()
    ]


def _location() -> dg.Definitions:
    base = defs_with({})  # the project's assets, checks and resources, as the code location has them
    return dg.Definitions(assets=base.assets, asset_checks=base.asset_checks, jobs=[agent_night],
                          schedules=[fleet_nights], resources={**(base.resources or {}), "io_manager": dg.fs_io_manager})


defs = _location()
