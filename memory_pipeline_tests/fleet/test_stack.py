"""The managed process set the fleet's tests and benchmark start (memory_pipeline.fleet.processes.stack)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from memory_pipeline.fleet.processes import stack


def _ignored(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:")), 16)


def test_a_server_takes_its_stop_signal_though_its_starter_ignores_it(tmp_path: Path) -> None:
    """A job a shell started in the background ignores SIGINT (and a harness may ignore SIGTERM): the servers it
    starts must not inherit that, or SIGTERM would leave them running until SIGKILL."""
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        procs = stack.Stack(dict(os.environ), tmp_path / "logs")
        server = procs.start("sleeper", [sys.executable, "-c", "import time; time.sleep(120)"])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    try:
        ignored = _ignored(server.proc.pid)
        assert not ignored & (1 << (signal.SIGTERM - 1)) and not ignored & (1 << (signal.SIGINT - 1)), hex(ignored)
        os.killpg(server.proc.pid, signal.SIGTERM)
        assert server.proc.wait(timeout=30) == -signal.SIGTERM  # bounded: it dies of the signal, not of SIGKILL
    finally:
        left = procs.close()
    assert left == []
