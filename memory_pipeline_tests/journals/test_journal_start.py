"""Journal partitions start at the configured day, else the workspace's first transcript day,
else today — never years before the agent's first conversation."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from memory_pipeline.defs.journals.partitions import START_ENV, journal_start_and_source
from memory_pipeline.journals.transcript import first_day


def transcript(root: Path, day: str) -> None:
    folder = root / "raw" / "conversations" / day.replace("-", "/")
    folder.mkdir(parents=True)
    (folder / "0930-s1-hello.md").write_text("---\nsession_id: s1\n---\n", encoding="utf-8")


def test_first_day_is_the_earliest_day_folder_with_a_transcript(tmp_path: Path) -> None:
    root = tmp_path / "raw" / "conversations"
    assert first_day(root) is None
    (root / "2023" / "01" / "02").mkdir(parents=True)  # an empty day folder does not count
    transcript(tmp_path, "2023-05-08")
    transcript(tmp_path, "2024-01-01")
    assert first_day(root) == date(2023, 5, 8)


def test_start_is_the_setting_else_the_first_transcript_else_today(tmp_path: Path) -> None:
    env = {"MEMORY_PIPELINE_HOME": str(tmp_path)}
    day, source = journal_start_and_source(env)
    assert abs((date.fromisoformat(day) - date.today()).days) <= 1 and source.startswith("today")
    transcript(tmp_path, "2023-05-08")
    assert journal_start_and_source(env) == ("2023-05-08", "the workspace's first transcript day")
    assert journal_start_and_source({**env, START_ENV: "2022-01-01"}) == ("2022-01-01", START_ENV)
