"""`memory-pipeline ui`: the Dagster UI on this workspace, with the run history the CLI records."""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
from pathlib import Path

from memory_pipeline.settings import workspace_home

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
WORKSPACE_YAML = REPO_ROOT / "workspace.yaml"


def register(sub: argparse._SubParsersAction) -> None:
    ui = sub.add_parser("ui", help="start the Dagster UI (dagster dev) on this workspace and print its URL")
    ui.add_argument("--port", type=int, default=3000, help="webserver port (default 3000)")
    ui.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    ui.set_defaults(fn=cmd_ui)


def dagster_executable() -> str | None:
    """The `dagster` beside this interpreter (the project's venv), else the one on PATH."""
    beside = Path(sys.executable).with_name("dagster")
    return str(beside) if beside.exists() else shutil.which("dagster")


def dagster_dev_command(dagster: str, host: str, port: int) -> list[str]:
    return [dagster, "dev", "-w", str(WORKSPACE_YAML), "--host", host, "--port", str(port)]


def port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def ui_url(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}"


def cmd_ui(args: argparse.Namespace) -> int:
    """Replaces this process with `dagster dev` (so Ctrl-C and SIGTERM reach it and its children directly),
    pointed at the same workspace and the same persistent DAGSTER_HOME that `memory-pipeline run` records to."""
    from memory_pipeline.operator.instance import dagster_home as _dagster_home

    if not 0 < args.port < 65536:
        print(f"--port {args.port}: expected 1–65535", file=sys.stderr)
        return 2
    dagster = dagster_executable()
    if dagster is None:
        print("dagster is not installed in this environment (run `bash scripts/setup.sh`)", file=sys.stderr)
        return 2
    if not port_free(args.host, args.port):
        print(f"{args.host}:{args.port} is in use (another `dagster dev`?); pick another with --port", file=sys.stderr)
        return 2
    home = workspace_home().resolve()
    dagster_home = _dagster_home(home).resolve()
    if not (home / "memory.duckdb").exists():
        print(f"note: no memory store in {home} yet (`memory-pipeline demo` or `import` creates one)", file=sys.stderr)
    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(dagster_home)}
    print(f"Dagster UI: {ui_url(args.host, args.port)}", flush=True)
    print(f"  workspace    {home}\n  DAGSTER_HOME {dagster_home}\n  Ctrl-C stops it", flush=True)
    cmd = dagster_dev_command(dagster, args.host, args.port)
    os.execve(cmd[0], cmd, env)
    return 0  # not reached
