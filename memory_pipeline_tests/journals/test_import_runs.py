"""The runs an import launches: its days in as few ranged runs as the transcripts allow."""

import json
from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.cli import main
from memory_pipeline.journals.cli.reconstruct import RANGE_END_TAG, RANGE_START_TAG
from memory_pipeline.journals.imports.cli import bridged, runs_of_days


def test_days_apart_are_one_run_when_the_days_between_hold_no_transcripts() -> None:
    days = [date(2026, 10, 13), date(2026, 10, 15), date(2026, 10, 18), date(2026, 10, 21)]
    spans = runs_of_days(days)
    assert len(spans) == 4
    assert bridged(spans, lambda d: d in days) == [(date(2026, 10, 13), date(2026, 10, 21))]


def test_a_day_between_with_transcripts_of_its_own_keeps_the_runs_apart() -> None:
    days = [date(2026, 10, 13), date(2026, 10, 15), date(2026, 10, 18)]
    untouched = date(2026, 10, 17)  # has sessions this import did not change: not extracted again
    assert bridged(runs_of_days(days), lambda d: d in days or d == untouched) == [
        (date(2026, 10, 13), date(2026, 10, 15)),
        (date(2026, 10, 18), date(2026, 10, 18)),
    ]


def session_file(folder: Path, n: int, day: date) -> None:
    """A Claude Code session on `day`: a question, an answer with a decision, a thank-you."""
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/shop", "version": "2.1.3",
            "sessionId": f"{n:08d}-4a5b-4c6d-8e7f-9a0b1c2d3e4f", "gitBranch": "main"}  # fmt: skip
    answer = f"## Queue {n}\n\nDecision: queue {n} runs {2 + n % 3} workers with a 30 s timeout."
    records = [
        {**base, "type": "user", "uuid": "u1", "timestamp": f"{day}T10:00:00.000Z",
         "message": {"role": "user", "content": f"How many workers for queue {n}?"}},
        {**base, "type": "assistant", "uuid": "u2", "parentUuid": "u1", "timestamp": f"{day}T10:02:00.000Z",
         "message": {"id": f"m{n}", "role": "assistant", "content": [{"type": "text", "text": answer}]}},
        {**base, "type": "user", "uuid": "u3", "parentUuid": "u2", "timestamp": f"{day}T10:03:00.000Z",
         "message": {"role": "user", "content": "Thanks, that works."}},
    ]  # fmt: skip
    (folder / f"{base['sessionId']}.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")


@pytest.mark.slow  # one import over three weeks, journals rebuilt in process (~20 s)
def test_an_import_over_many_days_and_weeks_is_one_daily_and_one_weekly_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What keeps a year's import in minutes: however many days and weeks it touches, and with days between
    them that hold no transcript, the instance records one ranged daily run and one ranged weekly run."""
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "ws"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hashing-bow-256")
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    monkeypatch.setenv("MEMORY_PIPELINE_LLM", "offline")
    # three ranges of days over four weeks (Sundays 27 Sep to 18 Oct), the days between them without sessions
    days = [date(2026, 10, 1), date(2026, 10, 2), date(2026, 10, 3), date(2026, 10, 8), date(2026, 10, 20),
            date(2026, 10, 21)]  # fmt: skip
    src = tmp_path / "src"
    src.mkdir()
    for n, day in enumerate(days):
        session_file(src, n, day)
    assert main(["transcripts", "import", str(src), "--in-process"]) == 0
    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs()
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
        spans = sorted((r.job_name, r.tags[RANGE_START_TAG], r.tags[RANGE_END_TAG]) for r in runs)
    assert spans == [("journal_daily", "2026-10-01", "2026-10-21"), ("journal_weekly", "2026-09-27", "2026-10-18")]
    journals = tmp_path / "ws" / "knowledge" / "journal"
    assert sorted(p.stem for p in journals.glob("*.md")) == [str(d) for d in days]
    assert (tmp_path / "ws" / "knowledge" / "memory" / "MEMORY.md").is_file()
