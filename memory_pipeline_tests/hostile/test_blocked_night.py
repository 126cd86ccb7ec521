"""A night the knowledge-retention check blocks: one line with the cause and what to do, exit 1, and no
traceback on the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_pipeline.abstraction import retention
from memory_pipeline.cli import main
from memory_pipeline.embedding.spec import HASHING
from memory_pipeline_tests.abstraction.test_retention import _workspace


def test_a_blocked_night_is_one_line_with_the_cause_and_no_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    home = _workspace(tmp_path)
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", HASHING)
    monkeypatch.setenv("COMPRESSION_SIMILARITY_THRESHOLD", "0.6")
    monkeypatch.setenv("MEMORY_PIPELINE_RETENTION_PROBES", "300")
    tally = retention.tally  # no night reaches a floor above 1: this one is blocked
    monkeypatch.setattr(retention, "tally", lambda run_id, outcomes, _floor, budget, archived:
                        tally(run_id, outcomes, 1.01, budget, archived))  # fmt: skip
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    assert main(["run"]) == 1
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "dagster._core" not in out + err, err
    [line] = [x for x in err.splitlines() if x.startswith("error:")]
    assert "retention" in line and "MEMORY_PIPELINE_RETENTION_FLOOR" in line, line
    assert "the night was blocked" in line and err.count("Execution of") <= 2
