"""The names the fleet's processes agree on, importable without Dagster: the run tags, the `agents` partitions,
the code location's module and name, the jobs `fleet night|report` queue, the schedules' timezone and the night a
time belongs to, the lines a refused night prints, and where the daemon's code server listens. `fleet night`
reads these before it decides whether to load anything."""

from __future__ import annotations

import hashlib
import os
import tempfile
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

AGENT_TAG = "memory_pipeline/agent"  # deploy/fleet/dagster.yaml: one run per value at a time
NIGHT_TAG = "memory_pipeline/night"
PERIOD_TAG = "memory_pipeline/period"
AGENTS = "agents"  # the DynamicPartitionsDefinition of the fleet's agents
LOCATION = "memory_pipeline"  # the code location's name in every workspace file of the fleet
MODULE = "memory_pipeline.fleet.definitions"
REPOSITORY = "__repository__"  # the one repository of a location built from dg.Definitions
NIGHT_JOB = "agent_night"
REPORT_JOB = "fleet_report_job"
# the run statuses of a night still in flight (Dagster's DagsterRunStatus values)
UNFINISHED = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING")


def fleet_timezone() -> str:
    """The schedules' timezone: a night is labelled with its date there."""
    return os.environ.get("NIGHTLY_CONSOLIDATION_TZ", "America/New_York")


def night_of(now: datetime, timezone: str) -> str:
    """The night a run started now belongs to: the date in the schedule's timezone (as fleet_nights labels it)."""
    return f"{now.astimezone(ZoneInfo(timezone)):%Y-%m-%d}"


def in_flight(agent: str, run_id: str, status: str) -> str:
    return f"{agent}'s night is already in flight: run {run_id[:8]} ({status})"


def already_ran(agent: str, night: str, run_id: str) -> str:
    return f"{agent}'s night of {night} already ran: run {run_id[:8]} (SUCCESS)"


def refused(agent: str, reason: str) -> str:
    """The line `fleet night AGENT` (without --now) prints for an agent it does not queue."""
    return f"{reason}; `memory-pipeline fleet night {agent} --now` queues another"


def code_server_socket(dagster_home: Path) -> Path:
    """The unix socket of the code server `fleet daemon` runs for this instance, on this machine: in the local
    temp folder (a socket path must stay short and local), named after the instance directory, so two fleets on
    one machine never share one."""
    digest = hashlib.sha256(str(dagster_home.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"memory-pipeline-code-{digest}.sock"
