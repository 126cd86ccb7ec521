"""The fleet's long-running processes — dagster-daemon, dagster-webserver, dagster-celery workers — as command
lines (`memory-pipeline fleet …` runs one in the foreground) and as a managed set for tests and the benchmark
(`Stack`: each process in its own process group, every group killed and checked empty on the way out).
Plain subprocess code, no Dagster import."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memory_pipeline.fleet.processes.executor import (
    BROKER_ENV,
    CELERY_YAML,
    FLEET_ROOT_ENV,
    MAX_RUNS_ENV,
    PG_URL_ENV,
    instance_yaml,
)
from memory_pipeline.fleet.processes.names import LOCATION, MODULE
from memory_pipeline.fleet.processes.servers import default_stop_signals, group_members
from memory_pipeline.settings import REPO_ROOT

BIN = Path(sys.executable).parent
WORKSPACE_YAML = "workspace.yaml"


def prepare_home(home: Path, workspace_module: str = MODULE) -> Path:
    """DAGSTER_HOME with the fleet's dagster.yaml and a workspace.yaml naming the code location's module."""
    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(instance_yaml(), home / "dagster.yaml")
    (home / WORKSPACE_YAML).write_text(
        "load_from:\n"
        f"  - python_module:\n      module_name: {workspace_module}\n"
        f"      working_directory: {REPO_ROOT}\n"
        f"      location_name: {LOCATION}\n"
    )
    return home


def code_server_command(socket: Path) -> list[str]:
    """The fleet location's code server on a unix socket (what `fleet daemon` runs beside dagster-daemon): the
    location is imported once, there, and the daemon, its run workers and `fleet night` ask it over gRPC."""
    return [str(BIN / "dagster"), "code-server", "start", "-m", MODULE, "--location-name", LOCATION,
            "-s", str(socket), "--working-directory", str(REPO_ROOT), "--log-level", "warning"]


def daemon_workspace(home: Path, socket: Path) -> Path:
    """A workspace file naming the code server on `socket` (written per start: the socket is this machine's)."""
    path = home / f"workspace-daemon-{socket.stem}.yaml"
    path.write_text(f"load_from:\n  - grpc_server:\n      socket: {socket}\n      host: localhost\n"
                    f"      location_name: {LOCATION}\n")
    return path


def fleet_env(home: Path, pg_url: str, broker: str, fleet_root: Path, max_runs: int = 4,
              base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every fleet process needs (the same on every machine)."""
    env = dict(os.environ if base is None else base)
    env.update({
        "DAGSTER_HOME": str(home), PG_URL_ENV: pg_url, BROKER_ENV: broker, FLEET_ROOT_ENV: str(fleet_root),
        MAX_RUNS_ENV: str(max_runs),
    })
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])  # dagster-celery execs `celery`
    path = env.get("PYTHONPATH", "")
    if str(REPO_ROOT) not in path.split(os.pathsep):
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), path) if p)
    return env


def daemon_command(home: Path, workspace: Path | None = None) -> list[str]:
    return [str(BIN / "dagster-daemon"), "run", "-w", str(workspace or home / WORKSPACE_YAML)]


def webserver_command(home: Path, host: str = "127.0.0.1", port: int = 3000) -> list[str]:
    return [str(BIN / "dagster-webserver"), "-w", str(home / WORKSPACE_YAML), "-h", host, "-p", str(port)]


def worker_command(name: str, concurrency: int = 1, config_yaml: Path = CELERY_YAML) -> list[str]:
    """dagster-celery's own worker start (it writes the resolved celery.yaml where the worker imports it), through
    worker_main, so a worker whose Celery process is killed says so in one line instead of a traceback; the
    worker imports worker_logging, which logs Dagster's console lines at their own level."""
    return [sys.executable, "-m", "memory_pipeline.fleet.processes.worker_main", "-A", "dagster_celery.app",
            "-y", str(config_yaml), "-i", "memory_pipeline.fleet.processes.worker_logging",
            "-n", name, "-l", "WARNING", "--", f"--concurrency={concurrency}", "--pool=prefork",
            "--without-heartbeat", "--without-gossip", "--without-mingle"]


@dataclass
class Proc:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM the process group (a daemon stops its threads and code server; a celery worker finishes
        warm shutdown), then SIGKILL what is left."""
        pgid = self.proc.pid
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.alive():
            time.sleep(0.1)
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.alive():
            self.proc.wait(5)
        # children of the group that outlived the leader are reparented; kill until none is left
        for _ in range(50):
            left = group_members(pgid)
            if not left:
                return
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                return
            time.sleep(0.1)


@dataclass
class Stack:
    """Processes started by a test or the benchmark; `close()` stops them all and says what outlived it."""

    env: dict[str, str]
    logs: Path
    procs: list[Proc] = field(default_factory=list)

    def start(self, name: str, cmd: list[str], extra_env: Mapping[str, str] | None = None) -> Proc:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{name}.log"
        env = {**self.env, **(extra_env or {})}
        with log.open("ab") as out:
            proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, cwd=REPO_ROOT, preexec_fn=default_stop_signals)
        entry = Proc(name, proc, log)
        self.procs.append(entry)
        return entry

    def stop(self, name: str) -> None:
        for p in self.procs:
            if p.name == name:
                p.stop()

    def close(self) -> list[int]:
        """Stop every process (workers first, then the daemon); return the pids still alive (should be none)."""
        for p in reversed(self.procs):
            p.stop()
        return [pid for p in self.procs for pid in group_members(p.proc.pid)]
