"""The agents of a fleet: one workspace each under `<fleet root>/agents/<id>/`. The folder is the registry (every
machine that mounts the fleet root sees it); the `agents` dynamic partitions on the instance follow it. Removing
an agent moves its workspace to `<fleet root>/archive/`, never deletes it."""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import datetime
from pathlib import Path

from memory_pipeline.errors import UserError

FLEET_ROOT_ENV = "MEMORY_PIPELINE_FLEET_ROOT"
MARKER = "agent.json"  # written by `agents add`: when the agent joined (the 48 h rule counts from it)
AGENT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")  # a partition key, a folder name and a tag value alike


def fleet_root(environ: dict[str, str] | None = None) -> Path:
    """The directory every fleet machine shares; one line saying what to set when it is missing."""
    value = (os.environ if environ is None else environ).get(FLEET_ROOT_ENV, "").strip()
    if not value:
        raise UserError(f"set {FLEET_ROOT_ENV} to the directory every fleet machine shares (agents, instance)")
    return Path(value).expanduser().resolve()


def check_agent_id(agent: str) -> str:
    if not AGENT_ID.match(agent):
        raise UserError(
            f"agent id {agent!r}: use 1-63 lower-case letters, digits, '-' or '_', starting with a letter or digit"
        )
    return agent


def agents_dir(root: Path) -> Path:
    return root / "agents"


def agent_home(root: Path, agent: str) -> Path:
    """The agent's workspace; an error naming the agent when it is not registered."""
    home = agents_dir(root) / check_agent_id(agent)
    if not home.is_dir():
        raise UserError(f"agent {agent!r} is not registered in {agents_dir(root)}: "
                        f"`memory-pipeline agents add {agent}`")
    return home


def list_agents(root: Path) -> list[str]:
    """Registered agents, sorted; folders that are not valid ids (an interrupted add's temp folder) are not."""
    folder = agents_dir(root)
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and AGENT_ID.match(p.name))


def add_agent(root: Path, agent: str, now: datetime) -> Path:
    """Create the agent's workspace: built in a temp folder and renamed into place, so a crash leaves either no
    agent or a whole one. An existing agent is an error (its memories are never overwritten)."""
    check_agent_id(agent)
    folder = agents_dir(root)
    home = folder / agent
    if home.exists():
        raise UserError(f"agent {agent!r} already exists: {home}")
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".adding-{agent}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "reports").mkdir(parents=True)
    from memory_pipeline.store import MemoryStore

    MemoryStore(tmp / "memory.duckdb").migrate()  # an empty store: `memory-pipeline import` fills it
    (tmp / MARKER).write_text(json.dumps({"agent": agent, "added": now.isoformat()}) + "\n")
    try:
        os.rename(tmp, home)  # atomic; fails if another `add` won the race
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise UserError(f"agent {agent!r} already exists: {home}") from None
    return home


def remove_agent(root: Path, agent: str, now: datetime) -> Path:
    """Move the agent's workspace to `<fleet root>/archive/<id>@<UTC time>` (one rename) and return it."""
    home = agent_home(root, agent)
    archive = root / "archive"
    archive.mkdir(parents=True, exist_ok=True)
    target = archive / f"{agent}@{now:%Y%m%dT%H%M%SZ}"
    if target.exists():
        raise UserError(f"{target} already exists: try again in a second")
    os.rename(home, target)
    return target
