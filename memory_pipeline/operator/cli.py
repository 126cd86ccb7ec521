"""`memory-pipeline ui`: the Dagster UI on this workspace, with the run history the CLI records; `doctor`'s
command (operator/doctor.py), with what its scrub rebuilds rather than rewrites (the search index)."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from memory_pipeline.settings import workspace_home

if TYPE_CHECKING:
    from memory_pipeline.operator.secrets_scrub import Derived

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
WORKSPACE_YAML = REPO_ROOT / "workspace.yaml"
# `dagster dev` warns that it "is superseded … Use 'dg dev' instead": a pointer to Dagster's newer `dg` CLI
# (dagster-dg-cli, not a dependency here), which runs the same dev server. Silenced unless --verbose.
SUPERSESSION_FILTER = "ignore:Function `dev_command` is superseded"
# then the rest of dagster dev's process group is killed: its processes are gone within ~8 s (the grace, the kill
# and up to 2 s for init to reap orphans); `ui` exits after that once it has reconciled the run history
# (docs/operating.md states this bound)
STOP_GRACE_S = 6.0


def register(sub: argparse._SubParsersAction) -> None:
    ui = sub.add_parser("ui", help="start the Dagster UI (dagster dev) on this workspace and print its URL")
    ui.add_argument("--port", type=int, default=3000, help="webserver port (default 3000)")
    ui.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    ui.add_argument("--no-sensors", action="store_true",
                    help="the webserver alone, without Dagster's daemon: no sensor or schedule starts work while "
                    "the UI is open (runs launched from it wait in the queue until a UI runs without it)")  # fmt: skip
    ui.set_defaults(fn=cmd_ui)
    from memory_pipeline.operator import doctor

    doctor.register(sub, derived=_derived)


def _derived() -> list[Derived]:
    """What `doctor --secrets --scrub` rebuilds rather than rewrites: the search index, whose files must fit each
    other, built from the store and the workspace's files once they are scrubbed."""
    from memory_pipeline.operator.secrets_scrub import Derived
    from memory_pipeline.search.index import index_root

    return [Derived(index_root(Path()).as_posix(), "the search index", _rebuild_search_index)]


def _rebuild_search_index(home: Path) -> None:
    """Every version, segment and kept vector deleted (all made from the old text), then a full build."""
    from memory_pipeline.search.build import build_index
    from memory_pipeline.search.index import delete_index
    from memory_pipeline.search.live import default_embedder

    delete_index(home)
    encode, model = default_embedder()
    build_index(home, encode, model, full=True)


def dagster_executable() -> str | None:
    """The `dagster` beside this interpreter (the project's venv), else the one on PATH."""
    beside = Path(sys.executable).with_name("dagster")
    return str(beside) if beside.exists() else shutil.which("dagster")


def dagster_dev_command(dagster: str, host: str, port: int) -> list[str]:
    return [dagster, "dev", "-w", str(WORKSPACE_YAML), "--host", host, "--port", str(port)]


def ui_command(dagster: str, host: str, port: int, sensors: bool) -> list[str]:
    """`dagster dev` (webserver and daemon: the daemon runs the sensors, schedules and run queue), or without
    sensors Dagster's webserver alone (`dagster-webserver`, beside `dagster`): nothing runs the sensors."""
    if sensors:
        return dagster_dev_command(dagster, host, port)
    webserver = str(Path(dagster).with_name("dagster-webserver"))
    return [webserver, "-w", str(WORKSPACE_YAML), "--host", host, "--port", str(port)]


def sensors_that_run(defaults: dict[str, bool], stored: dict[str, bool | None]) -> list[str]:
    """The sensors the daemon runs: each as its code declares it (`defaults`: name → on), unless someone started
    or stopped it in the UI (`stored`: name → on; None when it follows the code)."""
    return sorted(name for name, on in defaults.items() if (on if stored.get(name) is None else stored[name]))


def sensor_lines(running: list[str], sensors: bool) -> list[str]:
    """What `ui` says at start about the work the open UI starts by itself."""
    if not sensors:
        return ["  sensors      none: the webserver runs without Dagster's daemon (no sensor, schedule or run queue;",
                "               runs launched from the UI wait until `memory-pipeline ui` runs without --no-sensors)"]
    if not running:
        return ["  sensors      none running"]
    return [f"  sensors      {', '.join(running)} — they start runs when they find work",
            "               (`memory-pipeline ui --no-sensors` opens the UI without them)"]  # fmt: skip


def running_sensors(dagster_home: Path) -> list[str]:
    """The workspace's code location's sensors that the daemon will run, read from its definitions and the run
    history's stored sensor states."""
    import dagster as dg
    from dagster._core.scheduler.instigation import InstigatorStatus, InstigatorType

    from memory_pipeline import definitions

    repo = definitions.defs().get_repository_def()
    defaults = {s.name: s.default_status == dg.DefaultSensorStatus.RUNNING for s in repo.sensor_defs}
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        states = instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)
    stored: dict[str, bool | None] = {
        s.name: None if s.status == InstigatorStatus.DECLARED_IN_CODE else s.status == InstigatorStatus.RUNNING
        for s in states
    }
    return sensors_that_run(defaults, stored)


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
    """Runs `dagster dev` on the same workspace and persistent DAGSTER_HOME that `memory-pipeline run` records
    to, in a process group of its own that this process stops on Ctrl-C, SIGTERM or SIGHUP (see `supervise`)."""
    from memory_pipeline.operator.instance import home_line

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
    env = ui_environment(home)
    if not (home / "memory.duckdb").exists():
        print(f"note: no memory store in {home} yet (`memory-pipeline demo` or `import` creates one)", file=sys.stderr)
    print(home_line(Path(env["DAGSTER_HOME"])), file=sys.stderr, flush=True)
    resolve_left_in_flight(Path(env["DAGSTER_HOME"]))  # by a UI (or CLI) that stopped without ending them
    sensors = not args.no_sensors
    running = running_sensors(Path(env["DAGSTER_HOME"])) if sensors else []
    print(f"Dagster UI: {ui_url(args.host, args.port)}", flush=True)
    print(f"  workspace    {home}", flush=True)
    print("\n".join([*sensor_lines(running, sensors), "  Ctrl-C stops it"]), flush=True)
    try:
        return supervise(ui_command(dagster, args.host, args.port, sensors), env)
    finally:
        resolve_left_in_flight(Path(env["DAGSTER_HOME"]))  # the runs this UI launched stopped with it


def resolve_left_in_flight(dagster_home: Path) -> None:
    """Mark runs whose process is gone as ended (operator/reconcile.py), in one stderr line when there were any."""
    import dagster as dg

    from memory_pipeline.operator.reconcile import reconcile

    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        line = reconcile(instance)
    if line:
        print(f"run history: {line}", file=sys.stderr, flush=True)


def ui_environment(home: Path) -> dict[str, str]:
    """What `dagster dev` runs with: the workspace, and the DAGSTER_HOME the CLI's run commands resolve for it
    (operator.instance.dagster_home), so the UI opens the instance holding their runs."""
    from memory_pipeline.operator.instance import dagster_home
    from memory_pipeline.settings import verbose

    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(dagster_home(home))}
    if not verbose():
        env["PYTHONWARNINGS"] = ",".join(w for w in (os.environ.get("PYTHONWARNINGS"), SUPERSESSION_FILTER) if w)
    return env


def supervise(cmd: list[str], env: dict[str, str], grace_s: float = STOP_GRACE_S) -> int:
    """Run `cmd` in a new session (its own process group, with every process it starts) until it exits or we get
    SIGINT/SIGTERM/SIGHUP. Then: SIGINT to the group (dagster dev shuts its webserver and daemon down), and
    whatever is left after `grace_s` is SIGKILLed, so the UI stops within seconds (dagster dev alone waits up to
    60 s per child) and leaves no process behind. Signals are handled explicitly: a shell that started us in the
    background may have set SIGINT to ignored."""
    # In DAGSTER_HOME: from the repository, dagster dev would warn that the repository's dagster.yaml "will not be
    # used" (DAGSTER_HOME holds the copy of it that is, operator.instance.dagster_home).
    cwd = env.get("DAGSTER_HOME") or None
    proc = subprocess.Popen(  # noqa: PLW1509
        cmd, env=env, cwd=cwd, start_new_session=True, preexec_fn=_die_with_parent
    )
    stop: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        stop.append(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        while proc.poll() is None and not stop:
            time.sleep(0.1)
        if stop:
            print(f"stopping the Dagster UI ({signal.Signals(stop[0]).name})", file=sys.stderr, flush=True)
        stop_group(proc, grace_s)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0 if stop else (proc.returncode or 0)


def _die_with_parent() -> None:
    """In the child: SIGTERM when this supervisor dies, even by SIGKILL (Linux), so dagster dev is not orphaned;
    and SIGINT/SIGTERM as a fresh process has them, not ignored as a shell's background job inherits them, so
    dagster dev stops cleanly when asked instead of waiting out the grace period for SIGKILL."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_group(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGINT the process group led by `proc`, SIGKILL it after `grace_s`, and reap `proc`."""
    pgid = proc.pid
    if _group_alive(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGINT)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and _group_alive(pgid):
        proc.poll()  # reap the leader as soon as it exits, so it does not count as alive
        time.sleep(0.1)
    if _group_alive(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    proc.wait()
    end = time.monotonic() + 2.0
    while time.monotonic() < end and _group_alive(pgid):  # orphans are reaped by init; give it a moment
        time.sleep(0.05)
