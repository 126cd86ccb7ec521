"""Git as memory (seed 001 §3.4, §3.6): first learned, a file's changes, point-in-time recall."""

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_pipeline.cli import main
from memory_pipeline.journals import history
from memory_pipeline.journals.cli import flush_session
from memory_pipeline.journals.flush import parse_turns

MONDAY = datetime(2026, 11, 16, 10, 0, tzinfo=UTC)
TUESDAY = datetime(2026, 11, 17, 10, 0, tzinfo=UTC)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "workspace"
    home.mkdir()
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "1")
    return home


@pytest.mark.slow  # two journal days and their weekly rollups through the journal pipeline (~30 s)
def test_history_finds_when_a_phrase_was_learned_and_what_a_file_said(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = flush_session(home, parse_turns([{"role": "user", "content": "We decided to use Postgres for the fleet."}]),
                          MONDAY)  # fmt: skip
    flush_session(home, parse_turns([{"role": "user", "content": "We decided to use Redis as the Celery broker."}]),
                  TUESDAY)  # fmt: skip
    learned = history.first_learned(home, "Redis as the Celery broker")
    assert learned is not None and learned.subject == "extract: journal 2026-11-17"
    assert "knowledge/journal/2026-11-17.md" in learned.files and learned.sessions.startswith("flush_")
    assert history.first_learned(home, "Kubernetes operator") is None
    changes = history.file_history(home, "knowledge/journal/2026-11-16.md")
    assert [c.subject for c in changes] == ["extract: journal 2026-11-16"]
    assert changes[0].sessions == first["session_id"]
    then = history.at(home, "memory/daily/2026-11-16", "knowledge/journal/2026-11-16.md")
    assert "Postgres" in then and "Redis" not in then
    tags = {t for t in os.popen(f"git -C {home} tag --list 'memory/*'").read().split()}
    assert {"memory/daily/2026-11-16", "memory/daily/2026-11-17", "memory/weekly/2026-W47"} <= tags
    week = history.at(home, "memory/weekly/2026-W47", "knowledge/memory/MEMORY.md")
    assert "Redis" in week  # the week's rollup at the time of its last commit
    assert main(["history", "Postgres", "for", "the", "fleet"]) == 0
    assert "first learned" in capsys.readouterr().out
    assert main(["history", "--at", "memory/daily/2099-01-01", "knowledge/journal/x.md"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not in the knowledge history" in err[0]


def test_without_git_history_says_so_and_flush_still_works(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with python but no git
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    assert main(["history", "anything"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: history needs git on PATH (install git); everything else works without it"]
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps([{"role": "user", "content": "hello"}]))
    from memory_pipeline.journals.flush import write_flush

    assert write_flush(home / "raw" / "conversations", parse_turns(json.loads(turns.read_text()))).written
