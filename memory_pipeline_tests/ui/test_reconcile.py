"""Runs a stopped UI (or a killed CLI) left STARTED are resolved when `memory-pipeline ui`
starts: the ones whose process is gone are marked failed, in one line; live and queued ones are left alone.
Asserted from the instance's records."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.events import EngineEventData

from memory_pipeline.cli import main
from memory_pipeline.operator import cli as ui
from memory_pipeline.operator.instance import job_origin
from memory_pipeline.operator.reconcile import InFlight, verdict
from memory_pipeline.operator.recovery import HOST_TAG, PID_TAG

HOST = socket.gethostname()


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def add_run(instance: dg.DagsterInstance, status: dg.DagsterRunStatus, tags: dict[str, str] | None = None) -> str:
    run_id = str(uuid.uuid4())
    instance.add_run(
        dg.DagsterRun(
            job_name="rollup_assign", run_id=run_id, status=status, tags=tags or {},
            remote_job_origin=job_origin("rollup_assign"),
        )
    )
    return run_id


def test_verdict_needs_a_known_pid_on_this_host_that_is_gone() -> None:
    gone = lambda _pid: False  # noqa: E731
    run = InFlight("r", "j", "STARTED", 123, None)
    assert verdict(run, this_host=HOST, pid_exists=gone) == "its process (pid 123) is gone"
    assert verdict(run, this_host=HOST, pid_exists=lambda _pid: True) is None
    assert verdict(InFlight("r", "j", "STARTED", None, None), this_host=HOST, pid_exists=gone) is None
    assert verdict(InFlight("r", "j", "STARTED", 123, "elsewhere"), this_host=HOST, pid_exists=gone) is None
    assert verdict(InFlight("r", "j", "QUEUED", 123, None), this_host=HOST, pid_exists=gone) is None


def test_ui_start_marks_runs_whose_process_is_gone_and_leaves_live_and_queued_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "dagster_home"
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "ws"))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    home.mkdir()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        killed_cli = add_run(instance, dg.DagsterRunStatus.STARTED, {PID_TAG: str(dead_pid()), HOST_TAG: HOST})
        live_cli = add_run(instance, dg.DagsterRunStatus.STARTED, {PID_TAG: str(os.getpid()), HOST_TAG: HOST})
        ui_run = add_run(instance, dg.DagsterRunStatus.STARTED)  # launched by the UI: its pid is in an engine event
        pid = dead_pid()
        instance.report_engine_event(
            f"Started process for run (pid: {pid}).", instance.get_run_by_id(ui_run), EngineEventData.in_process(pid)
        )
        queued = add_run(instance, dg.DagsterRunStatus.QUEUED)

    started: list[str] = []
    monkeypatch.setattr(ui, "supervise", lambda argv, env: started.append(env["DAGSTER_HOME"]) or 0)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["ui", "--port", str(port)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("run history: ")]
    assert started == [str(home)] and len(lines) == 2  # at start, and after the UI stopped (the queued run)
    assert "marked 2 run(s) left in flight as ended" in lines[0] and "1 queued run(s)" in lines[0]

    with dg.DagsterInstance.from_config(str(home)) as instance:
        status = {r: instance.get_run_by_id(r).status for r in (killed_cli, live_cli, ui_run, queued)}
        assert status == {
            killed_cli: dg.DagsterRunStatus.FAILURE,
            live_cli: dg.DagsterRunStatus.STARTED,
            ui_run: dg.DagsterRunStatus.FAILURE,
            queued: dg.DagsterRunStatus.QUEUED,
        }
        failure = instance.get_records_for_run(killed_cli, of_type=dg.DagsterEventType.RUN_FAILURE).records
        assert "its process (pid" in failure[0].event_log_entry.dagster_event.message
