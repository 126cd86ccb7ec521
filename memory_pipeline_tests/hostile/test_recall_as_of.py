"""`recall --as-of` before the workspace's first session says so (and when that session began), not that the
workspace has no sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_pipeline.cli import main
from memory_pipeline_tests.rollups.corpus import life_sessions
from memory_pipeline_tests.rollups.helpers import insert_sessions


def test_recall_as_of_before_every_session_says_when_they_begin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "ws"
    store = insert_sessions(home, life_sessions()[:3])
    with store.connect() as con:
        (first,) = con.execute("SELECT min(started_at) FROM sessions").fetchone()
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hashing-bow-256")
    day = f"{first.year - 1}-01-01"
    assert main(["recall", "What did I cook?", "--as-of", day]) == 1
    out = capsys.readouterr().out
    assert f"nothing to recall as of {day} 23:59 UTC" in out and f"begin {first:%Y-%m-%d}" in out
    assert "no sessions" not in out
