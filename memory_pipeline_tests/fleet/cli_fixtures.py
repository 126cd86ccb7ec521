"""`memory-pipeline fleet …` commands as real subprocesses for the slow fleet tests: each command in a session of
its own, its whole tree remembered, bounded waits that name what they waited for, and a teardown that can reach
every process a command started. Shared by test_fleet_commands.py and test_fleet_readme.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memory_pipeline.fleet.processes import servers

CLI = Path(sys.executable).parent / "memory-pipeline"
# bounds, not targets (each wait ends once its condition holds), in minutes: CI shares 2 cores with other work
START_WAIT_S = 600.0  # a Dagster process importing the code location on 2 busy cores
STOP_WAIT_S = 120.0  # supervise.py: the server's own stop (6 s), then SIGKILL


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def alive(pids: list[int]) -> list[int]:
    running = set(servers.pids())
    return [pid for pid in pids if pid in running and servers._stat(pid) is not None]


@dataclass
class Command:
    """One `memory-pipeline fleet …` process, started in a session of its own so that the teardown can reach
    every process it started even if the command misbehaves."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    seen: set[int] = field(default_factory=set)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def tree(self) -> list[int]:
        """The command and its descendants now (remembered: the teardown checks every one it ever saw)."""
        now = [self.proc.pid, *servers.descendants(self.proc.pid)]
        self.seen.update(now)
        return now

    def wait_for(self, what: str, condition: Callable[[], bool], timeout: float = START_WAIT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.tree()
            if condition():
                return
            assert self.proc.poll() is None, f"`fleet {self.name}` exited ({self.proc.returncode}) before {what}:\n" \
                f"{self.output()[-3000:]}"
            time.sleep(0.3)
        raise AssertionError(f"`fleet {self.name}`: no {what} within {timeout:.0f} s:\n{self.output()[-3000:]}")

    def terminate(self) -> list[int]:
        """SIGTERM to the pid the user started, as systemd or `kill` does; wait (bounded) for it to exit;
        return the processes of its tree (every one ever seen) still running."""
        tree = self.tree()
        groups = {st[1] for pid in tree if (st := servers._stat(pid)) is not None}
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"`fleet {self.name}` still running {STOP_WAIT_S:.0f} s after SIGTERM") from None
        return alive(sorted(self.seen)) + [pid for g in groups for pid in servers.group_members(g)]

    def kill_everything(self) -> None:
        for pid in [*self.seen, *servers.descendants(self.proc.pid), self.proc.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            pass


@dataclass
class CliFleet:
    root: Path
    env: dict[str, str]
    commands: list[Command] = field(default_factory=list)

    def start(self, *args: str, env: dict[str, str] | None = None) -> Command:
        log = self.root / "logs" / f"{args[0]}-{len(self.commands)}.log"
        log.parent.mkdir(exist_ok=True)
        with log.open("wb") as out:
            proc = subprocess.Popen([str(CLI), "fleet", *args], env=env or self.env, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        command = Command(args[0], proc, log)
        self.commands.append(command)
        return command


def listens(port: int) -> Callable[[], bool]:
    def check() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    return check
