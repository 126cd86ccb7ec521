"""The agents of a fleet: one workspace each under `<fleet root>/agents/<id>/`. The folder is the registry (every
machine that mounts the fleet root sees it); the `agents` dynamic partitions on the instance follow it. Removing
an agent moves its workspace to `<fleet root>/archive/`, never deletes it."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
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
    root = Path(value).expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise UserError(f"{FLEET_ROOT_ENV}={value}: is a file, not a directory; point it at the fleet's shared folder")
    return root


def _cannot(action: str, path: Path, exc: BaseException) -> UserError:
    """One line for a file-system failure (read-only, full, permission), naming what was being done where."""
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).strip().splitlines()[0]
    return UserError(f"cannot {action} {path}: {why}")


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


def add_agent(root: Path, agent: str, now: datetime, fill: Callable[[Path], object] | None = None) -> Path:
    """Create the agent's workspace: built in a temp folder and renamed into place, so a crash leaves either no
    agent or a whole one. An existing agent is an error (its memories are never overwritten). `fill` writes the
    agent's first memories into the temp folder before the rename: a night the schedule starts at once then
    finds them all, never an empty or half-imported store, and a fill that fails leaves no agent."""
    check_agent_id(agent)
    folder = agents_dir(root)
    home = folder / agent
    if home.exists():
        raise UserError(f"agent {agent!r} already exists: {home}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _cannot("create the agents folder", folder, exc) from None
    tmp = folder / f".adding-{agent}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _build_workspace(tmp, agent, now)
        if fill is not None:
            fill(tmp)
    except BaseException as exc:  # a full disk, a read-only mount, Ctrl-C: no half-built folder is left behind
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) or type(exc).__module__.startswith(("duckdb", "_duckdb")):
            raise _cannot(f"create the workspace of agent {agent!r} in", folder, exc) from None
        raise
    try:
        os.rename(tmp, home)  # atomic; fails if another `add` won the race
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if home.exists():
            raise UserError(f"agent {agent!r} already exists: {home}") from None
        raise _cannot("create", home, exc) from None
    return home


def _build_workspace(tmp: Path, agent: str, now: datetime) -> None:
    from memory_pipeline.faults import fail_point
    from memory_pipeline.store import MemoryStore

    (tmp / "reports").mkdir(parents=True)
    MemoryStore(tmp / "memory.duckdb").migrate()  # an empty store: `memory-pipeline import` fills it
    fail_point("agent_add_write")
    (tmp / MARKER).write_text(json.dumps({"agent": agent, "added": now.isoformat()}) + "\n")


def remove_agent(root: Path, agent: str, now: datetime) -> Path:
    """Move the agent's workspace to `<fleet root>/archive/<id>@<UTC time>` (one rename) and return it."""
    home = agent_home(root, agent)
    archive = root / "archive"
    target = archive / f"{agent}@{now:%Y%m%dT%H%M%SZ}"
    try:
        archive.mkdir(parents=True, exist_ok=True)
        if target.exists():
            raise UserError(f"{target} already exists: try again in a second")
        os.rename(home, target)
    except OSError as exc:
        raise _cannot(f"move agent {agent!r}'s workspace to", target, exc) from None
    return target
