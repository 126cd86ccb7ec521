"""A `fleet worker` whose Celery process is killed says so in one line — "worker w1 lost: killed by signal 9; …" —
and exits 1, instead of dagster-celery's CalledProcessError traceback. A real worker command line (as
`memory-pipeline fleet worker` runs it) with its Celery process SIGKILLed; no broker needs to answer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_pipeline.fleet.processes.executor import BROKER_ENV
from memory_pipeline.fleet.processes.stack import BIN, worker_command
from memory_pipeline.fleet.processes.worker_main import lost_line, worker_name
from memory_pipeline.settings import REPO_ROOT
from memory_pipeline_tests.ui.server import free_port


def test_the_lost_line() -> None:
    assert lost_line("w1", -9) == ("worker w1 lost: killed by signal 9 (SIGKILL); its nights are retried by the daemon "
                                   "(a step it held goes back on the queue)")  # fmt: skip
    assert "exited with status 2" in lost_line("w1", 2)
    assert worker_name(worker_command("w7", 1)) == "w7" and worker_name(["--name=w8"]) == "w8"


def _celery_child(pid: int) -> int | None:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and any(part.endswith(b"celery") for part in cmdline):
            return int(entry.name)
    return None


@pytest.mark.slow
def test_a_killed_worker_says_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dh"), BROKER_ENV: f"redis://127.0.0.1:{free_port()}/0"}
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *sys.path])
    (tmp_path / "dh").mkdir()
    cmd = [c if c != "--pool=prefork" else "--pool=solo" for c in worker_command("w1", 1)]
    err = (tmp_path / "stderr").open("w+")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        deadline = time.monotonic() + 300  # importing Dagster and Celery beside other work: minutes, not seconds
        child = None
        while child is None and time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "stderr").read_text()[-3000:]
            child = _celery_child(proc.pid)
            time.sleep(0.5)
        assert child is not None, "the worker never started its Celery process"
        os.kill(child, signal.SIGKILL)
        assert proc.wait(timeout=300) == 1
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
        err.close()
    said = (tmp_path / "stderr").read_text()
    assert "Traceback" not in said and "CalledProcessError" not in said, said[-3000:]
    assert said.strip().splitlines()[-1] == lost_line("w1", -9)
