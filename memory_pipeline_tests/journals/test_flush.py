"""Pre-compaction flush (seed 001 §6.4): turns → transcript → the day's journal, once."""

import json
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from mcp import Client

from memory_pipeline.cli import main
from memory_pipeline.journals.extractors import category_of
from memory_pipeline.journals.flush import FlushInputError, FlushTurn, load_flush, parse_turns, write_flush
from memory_pipeline.journals.transcript import parse_transcript

NOW = datetime(2026, 11, 20, 15, 42, tzinfo=UTC)
TURNS = [
    {"role": "user", "content": "Which database should the fleet use for the Dagster instance?"},
    {"role": "assistant", "content": "We decided to use Postgres for the fleet's Dagster instance."},
    {"role": "user", "content": "Lesson learned: never share one SQLite instance between two daemons.\n"
                                "## not a heading"},
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "workspace"
    home.mkdir()
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    return home


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_bad_turns_name_the_row_and_field() -> None:
    with pytest.raises(FlushInputError, match="expected a non-empty JSON list"):
        parse_turns({"role": "user"})
    with pytest.raises(FlushInputError, match=r"row 1: field 'role' must be one of user, assistant"):
        parse_turns([TURNS[0], {"role": "robot", "content": "x"}])
    with pytest.raises(FlushInputError, match=r"row 0: field 'content' must be a non-empty string"):
        parse_turns([{"role": "user", "content": "  "}])


def test_the_same_turns_are_one_transcript_that_parses_back(tmp_path: Path) -> None:
    turns = parse_turns(TURNS)
    first = write_flush(tmp_path, turns, NOW)
    again = write_flush(tmp_path, turns, datetime(2026, 11, 21, 9, 0, tzinfo=UTC))  # a later day: still once
    assert first.written and not again.written and again.path == first.path
    assert len(list(tmp_path.rglob("*.md"))) == 1 and first.day == "2026-11-20"
    parsed = parse_transcript(first.path.read_text(encoding="utf-8"), first.path)
    # the assistant's turns are the agent's in a transcript, so the extractors quote no role name
    assert parsed.session_id == first.session_id and [t.role for t in parsed.turns] == ["user", "agent", "user"]
    assert "## not a heading" in parsed.turns[2].text  # escaped in the file, prose again when read
    other = write_flush(tmp_path, [*turns, FlushTurn("user", "one more")], NOW)
    assert other.written and other.session_id != first.session_id


@pytest.mark.slow  # two journal runs in process and the MCP client (~30 s)
def test_flush_writes_the_journal_once_and_the_mcp_tool_agrees(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    turns_file = home.parent / "turns.json"
    turns_file.write_text(json.dumps(TURNS))
    assert main(["flush", str(turns_file), "--project", "payments-api"]) == 0
    out = capsys.readouterr().out
    assert "flushed 3 turn(s)" in out
    journals = list((home / "knowledge" / "journal").glob("*.md"))
    assert len(journals) == 1
    text = journals[0].read_text(encoding="utf-8")
    assert "Postgres" in text and "SQLite" in text  # the decision and the lesson, by the same extractors
    assert "payments-api" in text and "pre-compaction-flush" not in text  # filed under the session's project
    assert (home / "knowledge" / "memory" / "MEMORY.md").is_file()
    before = tree(home / "knowledge") | tree(home / "raw")
    assert main(["flush", str(turns_file)]) == 0
    assert "already flushed" in capsys.readouterr().out
    assert tree(home / "knowledge") | tree(home / "raw") == before  # nothing written the second time

    from memory_pipeline.mcp.server import build_server

    async def run() -> None:
        async with Client(build_server(home)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"search", "context", "flush"} <= names
            same = await client.call_tool("flush", {"turns": TURNS})
            assert not same.is_error and same.structured_content["written"] is False
            bad = await client.call_tool("flush", {"turns": [{"role": "user", "content": " "}]})
            assert bad.is_error and "row 0: field 'content'" in bad.content[0].text

    anyio.run(run)
    assert tree(home / "knowledge") | tree(home / "raw") == before


def test_a_flush_is_filed_under_the_sessions_project_not_a_project_of_its_own(tmp_path: Path) -> None:
    request = tmp_path / "turns.json"
    request.write_text(json.dumps({"turns": TURNS, "cwd": "/home/jane/src/payments-api"}))
    turns, project = load_flush(str(request))
    assert project == "payments-api" and len(turns) == 3
    done = write_flush(tmp_path / "raw", turns, NOW, project)
    parsed = parse_transcript(done.path.read_text(encoding="utf-8"), done.path)
    assert parsed.frontmatter["project"] == "payments-api" and parsed.frontmatter["flush"] is True
    assert "pre-compaction-flush" not in parsed.tags and category_of(parsed) == "payments-api"
    bare = write_flush(tmp_path / "raw", parse_turns(TURNS[:1]), NOW)  # no project given: none, not a fake one
    assert category_of(parse_transcript(bare.path.read_text(encoding="utf-8"), bare.path)) == "general"
    # a flush an earlier release wrote (tagged, no project) still reads, and is not a project either
    old = done.path.read_text(encoding="utf-8").replace("project: payments-api\nflush: true\n",
                                                        "tags: [pre-compaction-flush]\n")  # fmt: skip
    legacy = parse_transcript(old, done.path)
    assert legacy.tags == ("pre-compaction-flush",) and category_of(legacy) == "general"
    request.write_text(json.dumps({"turns": TURNS, "project": 7}))
    with pytest.raises(FlushInputError, match="field 'project' must be a non-empty string"):
        load_flush(str(request))


def test_the_mcp_flush_files_under_the_project_it_is_given(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_pipeline.journals import cli as journals_cli
    from memory_pipeline.mcp.server import HistoryTurn, _flush_work

    asked: list[str | None] = []

    def flush_session(where: Path, turns: list[FlushTurn], project: str | None = None) -> dict[str, object]:
        asked.append(project)
        return {"transcript": "raw/x.md", "written": True, "journal": "knowledge/journal/2026-11-20.md"}

    monkeypatch.setattr(journals_cli, "flush_session", flush_session)
    turns = [HistoryTurn(role="user", content="We moved the payments queue to Postgres.")]
    for given in ("payments-api", "  ", None):
        assert _flush_work(home, turns, given).written
    assert asked == ["payments-api", None, None]


def test_cli_bad_file_is_one_line(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = home.parent / "bad.json"
    bad.write_text("[{'role': 'user'}]")
    assert main(["flush", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {bad}: invalid JSON at line 1")
    assert not (home / "raw").exists()


def test_schedules_still_target_the_day_and_week_that_just_closed() -> None:
    """Today and the week in progress are partitions (for the flush); the schedules name the closed ones."""
    import dagster as dg

    from memory_pipeline.defs.journals.partitions import daily_partitions, weekly_partitions
    from memory_pipeline.defs.journals.schedules import journal_daily_schedule, journal_weekly_schedule

    at = datetime(2026, 11, 22, 0, 15, tzinfo=UTC)  # a Sunday
    daily = journal_daily_schedule(dg.build_schedule_context(scheduled_execution_time=at))
    assert isinstance(daily, dg.RunRequest) and daily.partition_key == "2026-11-21"
    weekly = journal_weekly_schedule(dg.build_schedule_context(scheduled_execution_time=at.replace(hour=1)))
    assert isinstance(weekly, dg.RunRequest) and weekly.partition_key == "2026-11-15"  # Sun 15 – Sat 21
    with dg.partition_loading_context(effective_dt=at):
        assert daily_partitions.get_last_partition_key() == "2026-11-22"  # the day so far
        assert weekly_partitions.get_last_partition_key() == "2026-11-22"  # the week so far
