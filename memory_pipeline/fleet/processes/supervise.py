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

from memory_pipeline.fleet.processes.servers import group_members

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
GRACE_S = 6.0  # the server's own clean stop; then SIGKILL — the whole tree is gone within ~9 s
KILL_WAIT_S = 3.0
POLL_S = 0.1


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_empty(procs: list[subprocess.Popen[bytes]], pgid: int, timeout: float) -> bool:
    """Reap the processes and wait (at most `timeout` s) until no process is left in the group."""
    deadline = time.monotonic() + timeout
    while True:
        done = all(p.poll() is not None for p in procs)
        if done and not group_members(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)


def stop_tree(proc: subprocess.Popen[bytes] | list[subprocess.Popen[bytes]], stop_signal: int,
              grace: float = GRACE_S) -> None:
    """The server's stop signal, SIGTERM to what outlives it in its group, SIGKILL to all after `grace` s.
    `proc`: the server, or the servers of one group, its leader first and the server it exists for last (the
    daemon's code server, then dagster-daemon: the code server does not stop on a signal, it goes with the
    group)."""
    procs = proc if isinstance(proc, list) else [proc]
    pgid, main = procs[0].pid, procs[-1]
    deadline = time.monotonic() + grace
    for p in reversed(procs):
        if p.poll() is None:
            try:
                p.send_signal(stop_signal)
            except ProcessLookupError:
                pass
    while time.monotonic() < deadline and main.poll() is None:
        time.sleep(POLL_S)
    if main.returncode is not None:  # the server is gone: its leftovers get SIGTERM for what remains of the grace
        _signal_group(pgid, signal.SIGTERM)
        if _wait_empty(procs, pgid, max(deadline - time.monotonic(), 0.5)):
            return
    _signal_group(pgid, signal.SIGKILL)
    if not _wait_empty(procs, pgid, KILL_WAIT_S):
        left = group_members(pgid)
        raise RuntimeError(f"processes {left} of group {pgid} outlived SIGKILL")  # not seen in practice


def run(
    cmd: list[str],
    env: Mapping[str, str],
    *,
    stop_signal: int = signal.SIGTERM,
    user: str | None = None,
    cwd: Path | None = None,
    ready: Callable[[subprocess.Popen[bytes]], None] | None = None,
    grace: float = GRACE_S,
    first: tuple[list[str], Callable[[subprocess.Popen[bytes]], None]] | None = None,
    announce: Callable[[], str | None] | None = None,
) -> int:
    """Run `cmd` in its own process group until it exits or this process is asked to stop; return its exit code
    (0 when it was stopped on request). `ready(proc)` runs once it has started (PostgreSQL: create the database);
    if it raises, the server is stopped and the error propagates. `first`: a server started before `cmd`, in the
    same group, and a function that returns once it serves (the daemon's code server); if either exits, both
    stop. `announce()` is asked every second until it returns a line: the server's "ready" line, printed once."""
    requested: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        requested.append(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        try:
            if first is not None:
                # a group of its own in this session (the second joins it: a group cannot span sessions)
                procs.append(subprocess.Popen(first[0], env=dict(env), process_group=0, stdin=subprocess.DEVNULL,
                                              cwd=cwd))
                first[1](procs[0])
            leader = procs[0].pid if procs else None  # the code server's group, or a group of its own
            if not requested:
                procs.append(subprocess.Popen(cmd, env=dict(env), stdin=subprocess.DEVNULL, cwd=cwd, user=user,
                                              group=user, start_new_session=leader is None,
                                              process_group=leader))
                if ready is not None:
                    ready(procs[-1])
            asked = 0.0
            while procs and all(p.poll() is None for p in procs) and not requested:
                if announce is not None and time.monotonic() - asked >= 1.0:
                    asked = time.monotonic()
                    line = announce()
                    if line:
                        print(line, flush=True)
                        announce = None
                time.sleep(POLL_S)
        finally:
            if procs:
                stop_tree(procs, stop_signal, grace)
        if requested or not procs:
            return 0
        return next((int(p.returncode or 0) for p in procs if p.returncode), 0)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
