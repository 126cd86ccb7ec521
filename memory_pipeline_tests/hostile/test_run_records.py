"""Run records in benchmarks/results/runs/ are read on other machines: none carries this machine's temporary or
home folder."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from benchmarks import common

RUNS = Path(common.__file__).parent / "results" / "runs"


def test_a_run_record_names_no_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "RUNS", tmp_path / "runs")
    cache = Path(tempfile.gettempdir()) / "gw-bench"
    env = {"date": "2026-12-01T10:00:00Z", "workspace": str(tmp_path / "ws")}
    common.append_results("gateway", f"Workspaces cached in {cache} (build this run: 0 s).", env, "0.1")
    text = (tmp_path / "runs" / "2026-12-01.md").read_text()
    assert tempfile.gettempdir() not in text and str(Path.home()) not in text
    assert "<temp>/gw-bench" in text


def test_the_stored_run_records_name_no_temporary_folder() -> None:
    bad = [p.name for p in RUNS.glob("*.md") if "/tmp/" in p.read_text() or "pytest-of-" in p.read_text()]
    assert bad == []
