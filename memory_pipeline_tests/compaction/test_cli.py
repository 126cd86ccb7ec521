"""`memory-pipeline compact`: dry run by default on a first run, then --approve executes."""

from pathlib import Path

import pytest

from memory_pipeline.cli import main
from memory_pipeline_tests.compaction.conftest import NOW, WORKING_NOTE, names, note


@pytest.mark.slow  # a persistent DAGSTER_HOME instance: ~15 s per run on a loaded machine
def test_compact_cli_first_run_then_approved(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    note(home, "working", "deploy-day.md", WORKING_NOTE, age_days=8)
    assert main(["compact", "--as-of", NOW.isoformat()]) == 0
    out = capsys.readouterr().out
    assert out.startswith("DRY RUN") and "first run on this workspace" in out and "Would compact: deploy-day.md" in out
    assert names(home, "working") == ["deploy-day.md"]
    assert main(["compact", "--approve", "--as-of", NOW.isoformat()]) == 0
    out = capsys.readouterr().out
    assert "📦 Working→Episodic: 1 files compacted" in out and "📁 Archived: 1 files moved" in out
    assert names(home, "archive") == ["deploy-day-archived-2026-11-01.md"]
