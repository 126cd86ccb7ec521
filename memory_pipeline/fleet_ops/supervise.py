"""A `memory-pipeline fleet …` command in the foreground, owning its server's whole process tree.

The server runs in a process group of its own (`start_new_session`); this process stays its parent and is what a
user, systemd or a supervisor signals. SIGTERM, SIGINT (Ctrl-C) or SIGHUP here sends the server its own stop
signal (PostgreSQL: SIGINT, its fast shutdown; the others: SIGTERM); once the group's leader has exited, whatever
it left in its group (a celery pool, a code server, a run worker, PostgreSQL backends) gets SIGTERM, and after
`grace` seconds everything still in the group gets SIGKILL. Nothing in the tree calls setsid, so the group is the
tree. Plain subprocess code, no Dagster import.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType

from memory_pipeline.fleet_ops.servers import group_members

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
GRACE_S = 6.0  # the server's own clean stop; then SIGKILL — the whole tree is gone within ~9 s
KILL_WAIT_S = 3.0
POLL_S = 0.1


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_empty(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Reap the leader and wait (at most `timeout` s) until no process is left in its group."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc.poll()
        if proc.returncode is not None and not group_members(proc.pid):
            return True
        time.sleep(POLL_S)
    proc.poll()
    return proc.returncode is not None and not group_members(proc.pid)


def stop_tree(proc: subprocess.Popen[bytes], stop_signal: int, grace: float = GRACE_S) -> None:
    """The server's stop signal to the leader, SIGTERM to what outlives it, SIGKILL to all after `grace` s."""
    deadline = time.monotonic() + grace
    if proc.poll() is None:
        try:
            proc.send_signal(stop_signal)
        except ProcessLookupError:
            pass
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(POLL_S)
    if proc.returncode is not None:  # the leader is gone: its leftovers get SIGTERM for what remains of the grace
        _signal_group(proc.pid, signal.SIGTERM)
        if _wait_empty(proc, max(deadline - time.monotonic(), 0.5)):
            return
    _signal_group(proc.pid, signal.SIGKILL)
    if not _wait_empty(proc, KILL_WAIT_S):
        left = group_members(proc.pid)
        raise RuntimeError(f"processes {left} of group {proc.pid} outlived SIGKILL")  # not seen in practice


def run(
    cmd: list[str],
    env: Mapping[str, str],
    *,
    stop_signal: int = signal.SIGTERM,
    user: str | None = None,
    cwd: Path | None = None,
    ready: Callable[[subprocess.Popen[bytes]], None] | None = None,
    grace: float = GRACE_S,
) -> int:
    """Run `cmd` in its own process group until it exits or this process is asked to stop; return its exit code
    (0 when it was stopped on request). `ready(proc)` runs once it has started (PostgreSQL: create the database);
    if it raises, the server is stopped and the error propagates."""
    requested: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        requested.append(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
    try:
        proc = subprocess.Popen(cmd, env=dict(env), start_new_session=True, stdin=subprocess.DEVNULL, cwd=cwd,
                                user=user, group=user)
        try:
            if ready is not None and not requested:
                ready(proc)
            while proc.poll() is None and not requested:
                time.sleep(POLL_S)
        finally:
            stop_tree(proc, stop_signal, grace)
        return 0 if requested else int(proc.returncode or 0)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
