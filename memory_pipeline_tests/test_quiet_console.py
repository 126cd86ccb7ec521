"""Dagster's DEBUG lines stay off the console of the CLI's runs (and so out of the background imports' log)
unless `--verbose`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_pipeline.operator.quiet import without_dagster_debug
from memory_pipeline.settings import VERBOSE_ENV

CODEX = (Path(__file__).parent / "fixtures" / "transcript_imports" / "codex"
         / "rollout-2026-10-15T14-03-11-0199e0d2-4c1b-7a30-b5e4-2f8d9c6a1e57.jsonl")  # fmt: skip
DEBUG = "2026-12-07 19:26:36 +0000 - dagster - DEBUG - journal_daily - 2740a426 - 4855 - sessions - STEP_WORKER_STARTED"
WORKER = f"import sys; print({DEBUG!r}, file=sys.stderr); print('a step failed: the reason', file=sys.stderr)"


def _worker() -> None:
    """A process started meanwhile, as the multiprocess executor starts its step workers: it inherits stderr."""
    subprocess.run([sys.executable, "-c", WORKER], check=True)


def test_a_started_process_loses_its_dagster_debug_lines_and_keeps_the_rest(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(VERBOSE_ENV, raising=False)
    with without_dagster_debug():
        _worker()
        print("said by this process", file=sys.stderr)
    err = capfd.readouterr().err
    assert "a step failed: the reason" in err and "said by this process" in err
    assert "DEBUG" not in err
    print("after", file=sys.stderr)  # stderr is itself again
    assert capfd.readouterr().err == "after\n"


def test_verbose_keeps_them(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(VERBOSE_ENV, "1")
    with without_dagster_debug():
        _worker()
    assert "STEP_WORKER_STARTED" in capfd.readouterr().err


@pytest.mark.slow  # one journal run with its step workers, in the background (~30 s)
def test_a_background_import_logs_no_debug_lines(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(tmp_path / "dagster_home"),
           "MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256", "MEMORY_PIPELINE_JOURNAL_GIT": "0"}  # fmt: skip
    env.pop(VERBOSE_ENV, None)
    started = subprocess.run([sys.executable, "-m", "memory_pipeline.cli", "transcripts", "import", str(CODEX),
                              "--background"], env=env, capture_output=True, text=True, check=True)  # fmt: skip
    assert "DEBUG" not in started.stdout + started.stderr
    pid = int(started.stdout.split("(pid ")[1].split(")")[0])
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.5)
    log = (home / "reports" / "background-imports.log").read_text(encoding="utf-8")
    assert "rebuilding the journals of 2026-10-15" in log and "2026-10-15: ok" in log, log
    assert "DEBUG" not in log, log
