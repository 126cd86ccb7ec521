"""`memory-pipeline fleet status` with nothing running: every server down, one line each, exit status 1; the
server records it reads (a record whose process is gone is dropped); `fleet stop` with nothing to stop. The
servers up, their ready lines, `fleet stop`'s order and `fleet night` through the daemon's code server:
test_fleet_commands.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from memory_pipeline.fleet.processes import health, servers
from memory_pipeline.fleet.processes.executor import BROKER_ENV, FLEET_ROOT_ENV, PG_URL_ENV


def test_status_says_each_server_is_down_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_pipeline.cli import main

    pg_port, redis_port = servers.free_port(), servers.free_port()  # nothing listens on either
    monkeypatch.setenv(FLEET_ROOT_ENV, str(tmp_path))
    monkeypatch.setenv(PG_URL_ENV, servers.pg_url(pg_port))
    monkeypatch.setenv(BROKER_ENV, f"redis://127.0.0.1:{redis_port}/0")
    monkeypatch.delenv("DAGSTER_HOME", raising=False)

    assert main(["fleet", "status"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["postgres", "down", f"127.0.0.1:{pg_port}", "pid", "-"]
    assert lines[1].split() == ["redis", "down", f"127.0.0.1:{redis_port}", "pid", "-"]
    assert lines[2].split()[:2] == ["daemon", "down"] and "no heartbeat" in lines[2]
    assert lines[3].split()[:2] == ["webserver", "down"]
    assert lines[4] == "workers    0 answering"
    assert lines[-1].startswith("fleet not ready")


def test_status_without_the_urls_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_pipeline.cli import main

    monkeypatch.setenv(FLEET_ROOT_ENV, str(tmp_path))
    monkeypatch.delenv(PG_URL_ENV, raising=False)
    assert main(["fleet", "status"]) == 1
    assert capsys.readouterr().out.strip() == (f"fleet down: {PG_URL_ENV} is not set (`fleet postgres` and `fleet "
                                               "redis` print the lines to export)")


def test_a_record_lives_as_long_as_its_process_and_a_reused_pid_is_not_it(tmp_path: Path) -> None:
    with health.recorded(tmp_path, "webserver", "http://127.0.0.1:3000") as path:
        (found,) = health.records(tmp_path)
        assert (found.name, found.pid, found.address) == ("webserver", os.getpid(), "http://127.0.0.1:3000")
    assert health.records(tmp_path) == [] and not path.exists()

    child = subprocess.Popen(["sleep", "60"])  # a live process that is not the command the record names
    try:
        folder = health.servers_dir(tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        stale = folder / "redis-1.json"
        stale.write_text(json.dumps({"name": "redis", "pid": child.pid, "host": socket.gethostname(),
                                     "address": "127.0.0.1:6379", "started": "2026-11-28T00:00:00+00:00",
                                     "command": "memory-pipeline fleet redis "}))
        assert health.records(tmp_path) == [] and not stale.exists()
    finally:
        child.kill()
        child.wait()


def test_stop_with_nothing_running_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_pipeline.cli import main

    monkeypatch.setenv(FLEET_ROOT_ENV, str(tmp_path))
    assert main(["fleet", "stop"]) == 0
    assert capsys.readouterr().out.strip() == ("nothing to stop: no `memory-pipeline fleet …` server runs on this "
                                               f"machine for {tmp_path}")
