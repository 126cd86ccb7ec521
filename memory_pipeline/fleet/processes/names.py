"""The names the fleet's processes agree on, importable without Dagster: the run tags, the `agents` partitions,
the code location's module and name, the schedules' timezone, and where the daemon's code server listens.
`fleet night` reads these before it decides whether to load anything."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

AGENT_TAG = "memory_pipeline/agent"  # deploy/fleet/dagster.yaml: one run per value at a time
NIGHT_TAG = "memory_pipeline/night"
PERIOD_TAG = "memory_pipeline/period"
AGENTS = "agents"  # the DynamicPartitionsDefinition of the fleet's agents
LOCATION = "memory_pipeline"  # the code location's name in every workspace file of the fleet
MODULE = "memory_pipeline.fleet.definitions"


def fleet_timezone() -> str:
    """The schedules' timezone: a night is labelled with its date there."""
    return os.environ.get("NIGHTLY_CONSOLIDATION_TZ", "America/New_York")


def code_server_socket(dagster_home: Path) -> Path:
    """The unix socket of the code server `fleet daemon` runs for this instance, on this machine: in the local
    temp folder (a socket path must stay short and local), named after the instance directory, so two fleets on
    one machine never share one."""
    digest = hashlib.sha256(str(dagster_home.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"memory-pipeline-code-{digest}.sock"
