"""`memory-pipeline agents add|list|remove|token ID`: the fleet's agents. The folder under
<fleet root>/agents is the registry; the instance's `agents` partitions follow it at once here, and the
`agents_registry` sensor catches up whatever this could not reach (an instance that was down). The runners that
`fleet night|report` use to queue runs live beside it: webserver_launch.py (through the fleet's webserver, no
Dagster imported) and launch.py (through the instance and the code location)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.fleet import registry

PARTITIONS = "agents"  # memory_pipeline.fleet.processes.names.AGENTS


def _sync_instance(add: list[str], delete: list[str]) -> str:
    """Apply the change to the fleet's instance; '' when done, else one line saying the sensor will."""
    try:
        from memory_pipeline.fleet.processes.executor import fleet_dagster_home

        home = fleet_dagster_home()
        if not (home / "dagster.yaml").is_file():
            return f"note: no instance at {home} yet: the agents_registry sensor adds the partition once it runs"
        import dagster as dg

        with dg.DagsterInstance.from_config(str(home)) as instance:
            if add:
                instance.add_dynamic_partitions(PARTITIONS, add)
            for key in delete:
                instance.delete_dynamic_partition(PARTITIONS, key)
        return ""
    except Exception as exc:  # the folder changed either way; the sensor reconciles
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"note: the instance was not updated ({first}): the agents_registry sensor will"


def cmd_add(args: argparse.Namespace) -> int:
    from memory_pipeline.cli import import_into, refresh_index

    imported: list[tuple[str, int]] = []

    def fill(tmp: Path) -> None:  # inside the new workspace, before it is renamed into place
        try:
            imported.append(import_into(tmp, args.import_path))
        except OSError as exc:  # the file, not the workspace: say so (add_agent would name the workspace)
            raise UserError(f"{exc.strerror or exc}; no agent was added") from None

    home = registry.add_agent(registry.fleet_root(), args.agent, datetime.now(UTC),
                              fill=fill if args.import_path is not None else None)  # fmt: skip
    print(f"added {args.agent}: {home}")
    if imported:
        print(f"  {imported[0][0]}")
        if imported[0][1]:
            refresh_index(home)
    else:
        print(f"  fill its store: MEMORY_PIPELINE_HOME={home} memory-pipeline import FILE")
    note = _sync_instance([args.agent], [])
    if note:
        print(note)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    root = registry.fleet_root()
    agents = registry.list_agents(root)
    for agent in agents:
        print(f"{agent}\t{registry.agents_dir(root) / agent}")
    if not agents:
        print(f"no agents in {registry.agents_dir(root)}: `memory-pipeline agents add ID`")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    from memory_pipeline.fleet import tokens

    root = registry.fleet_root()
    target = registry.remove_agent(root, args.agent, datetime.now(UTC))
    print(f"removed {args.agent}: its workspace is kept in {target}")
    if tokens.revoke(root, args.agent):  # an id added again later must not inherit the old token
        print("  its gateway token is revoked")
    note = _sync_instance([], [args.agent])
    if note:
        print(note)
    return 0


def cmd_token(args: argparse.Namespace) -> int:
    from memory_pipeline.fleet import tokens

    root = registry.fleet_root()
    if args.revoke:
        had = tokens.revoke(root, args.agent)
        print(f"revoked {args.agent}'s gateway token" if had else f"{args.agent} had no gateway token")
        return 0
    token = tokens.issue(root, args.agent, datetime.now(UTC))
    print(f"new gateway token for {args.agent} (any previous one no longer works); it is shown only now,")
    print("send it as `Authorization: Bearer <token>` to `memory-pipeline fleet serve`:")
    print(token)
    return 0


def register(sub: Any) -> None:
    agents = sub.add_parser(
        "agents", help="the fleet's agents: add | list | remove | token (MEMORY_PIPELINE_FLEET_ROOT)"
    )
    cmds = agents.add_subparsers(dest="agents_command", required=True)
    p = cmds.add_parser("add", help="a new agent: an empty workspace and an `agents` partition")
    p.add_argument("agent", help="the id: lower-case letters, digits, - and _")
    p.add_argument("--import", dest="import_path", type=Path, metavar="FILE",
                   help="its first memories (.jsonl/.ndjson, .parquet or a SQLite .db/.sqlite/.sqlite3, as `import` "
                   "reads them), in the workspace before the "
                   "agent exists: its first night never finds an empty store; a rejected file adds no agent")
    p.set_defaults(fn=cmd_add)
    p = cmds.add_parser("list", help="the registered agents and their workspaces",
                        description="List the registered agents (the folders under <fleet root>/agents/), one line "
                        "each: the id and its workspace.")  # fmt: skip
    p.set_defaults(fn=cmd_list)
    p = cmds.add_parser("token", help="a new bearer token for the fleet gateway (last line, shown once; replaces "
                        "the old one), or --revoke")
    p.add_argument("agent", help="a registered agent (`memory-pipeline agents list`)")
    p.add_argument("--revoke", action="store_true", help="end the agent's token: its next request gets 401")
    p.set_defaults(fn=cmd_token)
    p = cmds.add_parser("remove", help="archive the agent's workspace (never deleted) and drop its partition",
                        description="Remove an agent: its workspace moves to <fleet root>/archive/<id>@<UTC time> "
                        "(nothing is deleted), its `agents` partition is dropped, so no night is scheduled for it, "
                        "and its gateway token is revoked.")  # fmt: skip
    p.add_argument("agent", help="a registered agent (`memory-pipeline agents list`)")
    p.set_defaults(fn=cmd_remove)
