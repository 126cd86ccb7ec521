"""`transcripts import`: Claude Code, Codex CLI and message logs → transcripts the journal pipeline reads."""

import os
import shutil
import time
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.cli import main
from memory_pipeline.journals.imports.importer import Options, import_paths
from memory_pipeline.journals.imports.model import TOOL_INPUT_CAP, TOOL_RESULT_CAP, ToolUse, tool_line
from memory_pipeline.journals.transcript import Transcript, parse_transcript

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcript_imports"
CC_MAIN = FIXTURES / "claude_code" / "3f2a9c1e-7b4d-4e8a-9c2f-5d6e7f8a9b0c.jsonl"
CC_AGENT = FIXTURES / "claude_code" / "agent-a7d1e2f3.jsonl"
CODEX = FIXTURES / "codex" / "rollout-2026-10-15T14-03-11-0199e0d2-4c1b-7a30-b5e4-2f8d9c6a1e57.jsonl"
STARTED = datetime(2026, 10, 16, 12, 0, tzinfo=UTC)


def transcripts(raw: Path) -> dict[str, Transcript]:
    """session id → parsed transcript, read by the pipeline's own parser."""
    parsed = [parse_transcript(p.read_text(encoding="utf-8"), p) for p in sorted(raw.rglob("*.md"))]
    return {t.session_id: t for t in parsed}


def tree(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))
            if p.is_file()}  # fmt: skip


def test_claude_code_sessions_keep_roles_tools_and_sidechains_and_drop_thinking(tmp_path: Path) -> None:
    report = import_paths([FIXTURES / "claude_code"], tmp_path)
    assert report.errors == [] and len(report.written) == 2
    found = transcripts(tmp_path)
    main_session = found["cc_3f2a9c1e7b4d4e8a9c2f5d6e7f8a9b0c"]
    assert main_session.title == "Webhook retry backoff for the payments API"  # the source's summary line
    assert main_session.started == datetime(2026, 10, 14, 9, 12, 33)  # the first message's time
    assert main_session.frontmatter["source_session"] == "3f2a9c1e-7b4d-4e8a-9c2f-5d6e7f8a9b0c"
    assert main_session.frontmatter["version"] == 1 and main_session.frontmatter["channel"] == "claude-code"
    assert [(t.role, t.kind) for t in main_session.turns] == [
        ("user", None), ("agent", None), ("agent", None), ("user", "sidechain"), ("agent", "sidechain"),
        ("agent", None),
    ]  # fmt: skip
    bash = main_session.turns[1].tools[0]
    assert bash.tool == "Bash" and '"command":"pytest tests/test_webhooks.py -q"' in bash.summary
    assert bash.result is not None and bash.result.endswith(f"… [cut: {TOOL_RESULT_CAP} of 2759 chars]")
    task = main_session.turns[2].tools[0]
    assert task.tool == "Task" and task.result == "Two callers: payments/worker.py:88, payments/admin.py:41"
    text = main_session.text
    assert "payments/retry.py; check the tests first" not in text  # the thinking block
    assert "system-reminder" not in text  # an isMeta line Claude Code injected
    assert "exponential backoff: 1 s, 2 s, 4 s" in main_session.turns[-1].text
    agent = found["cc_3f2a9c1e7b4d4e8a9c2f5d6e7f8a9b0c_a7d1e2f3"]  # a sub-agent's own file
    assert agent.frontmatter["parent_session"] == "cc_3f2a9c1e7b4d4e8a9c2f5d6e7f8a9b0c"
    assert {t.kind for t in agent.turns} == {"sidechain"}
    assert agent.turns[1].tools[0].result == "The provider sends Retry-After on 429 responses."


def test_thinking_is_kept_only_when_asked(tmp_path: Path) -> None:
    import_paths([CC_MAIN], tmp_path, Options(keep_thinking=True))
    [session] = transcripts(tmp_path).values()
    thinking = [t for t in session.turns if t.kind == "thinking"]
    assert [t.text for t in thinking] == ["The retry worker is in payments/retry.py; check the tests first."]


def test_codex_rollouts_keep_the_conversation_and_its_tools(tmp_path: Path) -> None:
    report = import_paths([CODEX], tmp_path)
    assert report.errors == []
    [session] = transcripts(tmp_path).values()
    assert session.session_id == "cx_0199e0d24c1b7a30b5e42f8d9c6a1e57" and session.frontmatter["model"] == "gpt-5-codex"
    assert [t.role for t in session.turns] == ["user", "agent", "agent"]
    # the injected <environment_context> message and the developer instructions are left out
    assert session.turns[0].text == "Why does the invoice total drift by a cent? Fix the rounding."
    shell, patch = session.turns[1].tools
    assert shell.tool == "shell" and shell.result is not None and "invoice.py:57" in shell.result
    assert patch.tool == "apply_patch" and "*** Begin Patch ⏎" in patch.summary
    assert patch.result == "Success. Updated the following files: ⏎ M billing/invoice.py"
    assert session.text.count("Lesson learned: keep money in Decimal") == 1  # event_msg copies left out
    assert "Looking for float arithmetic" not in session.text and "permissions" not in session.text


def test_message_logs_in_both_shapes(tmp_path: Path) -> None:
    report = import_paths([FIXTURES / "messages"], tmp_path)
    [error] = report.errors  # the Anthropic-shaped log has no timestamps: it needs --started
    assert error.startswith(f"{FIXTURES / 'messages' / 'export-chat.jsonl'}:1: no 'timestamp' on the messages")
    report = import_paths([FIXTURES / "messages"], tmp_path, Options(started=STARTED))
    assert report.errors == [] and report.unchanged == 1 and len(report.written) == 1
    found = transcripts(tmp_path)
    openai = found["msg_support4471"]
    assert [t.role for t in openai.turns] == ["system", "user", "agent", "agent"]
    [lookup] = openai.turns[2].tools
    assert (lookup.tool, lookup.result) == ("lookup_policy", "Annual plans: prorated refund within 90 days.")
    [anthropic] = [t for sid, t in found.items() if sid != "msg_support4471"]
    assert anthropic.started == datetime(2026, 10, 16, 12, 0) and "Look at the export log" not in anthropic.text
    assert anthropic.turns[1].tools[0].result == "ERROR disk full on /var/exports"


def test_long_tool_inputs_and_results_are_cut_at_the_cap_with_their_size() -> None:
    output = "\n".join(f"row {i}" for i in range(1000))  # 7889 characters on 1000 lines
    line = tool_line(ToolUse("mcp__db__query", "x" * 1000, None, output))
    body, _, result = line.partition(" → ")
    assert body.endswith(f"… [cut: {TOOL_INPUT_CAP} of 1000 chars]")
    assert result.endswith(f"… [cut: {TOOL_RESULT_CAP} of {len(output)} chars]") and "\n" not in line
    assert len(output) == 7889 and result.startswith("row 0 ⏎ row 1 ⏎")


def test_importing_again_writes_nothing(tmp_path: Path) -> None:
    first = import_paths([FIXTURES], tmp_path, Options(started=STARTED))
    assert len(first.written) == 7 and len(first.errors) == 2  # the two bad files
    before = tree(tmp_path)
    again = import_paths([FIXTURES], tmp_path, Options(started=STARTED))
    assert again.written == [] and again.unchanged == 7
    assert tree(tmp_path) == before  # not even rewritten with the same bytes


def test_a_grown_session_file_is_a_new_version_of_the_same_transcript(tmp_path: Path) -> None:
    lines = CC_MAIN.read_text(encoding="utf-8").splitlines(keepends=True)
    live = tmp_path / "src" / CC_MAIN.name
    live.parent.mkdir()
    raw = tmp_path / "raw"
    # the session so far: up to the Bash call, its result not written yet, the next line half-written
    live.write_text("".join(lines[:5]) + lines[5][:40], encoding="utf-8")
    first = import_paths([live], raw)
    assert first.errors == [] and [w.version for w in first.written] == [1]
    old = parse_transcript(first.written[0].path.read_text(encoding="utf-8"))
    assert old.turns[1].tools[0].result is None  # no result yet
    live.write_text("".join(lines), encoding="utf-8")  # Claude Code appended the rest
    second = import_paths([live], raw)
    assert second.errors == []
    [grown] = second.written
    assert grown.path == first.written[0].path and (grown.version, grown.added) == (2, 4)
    assert len(list(raw.rglob("*.md"))) == 1  # never a second session
    new = parse_transcript(grown.path.read_text(encoding="utf-8"))
    assert new.session_id == old.session_id and new.frontmatter["version"] == 2
    for before, after in zip(old.turns, new.turns, strict=False):  # no lost turn
        assert (before.hhmm, before.role, before.text) == (after.hhmm, after.role, after.text)
    assert new.turns[1].tools[0].result is not None and len(new.turns) == len(old.turns) + 4
    assert import_paths([live], raw).written == []


def test_a_source_rewritten_other_than_by_appending_is_refused(tmp_path: Path) -> None:
    live = tmp_path / "src" / CC_MAIN.name
    live.parent.mkdir()
    shutil.copyfile(CC_MAIN, live)
    raw = tmp_path / "raw"
    [written] = import_paths([live], raw).written
    before = written.path.read_bytes()
    live.write_text(live.read_text(encoding="utf-8").replace("Can you add exponential", "Can you add linear"))
    report = import_paths([live], raw)
    assert report.written == [] and len(report.errors) == 1
    assert report.errors[0].startswith(f"{live}: session 3f2a9c1e-7b4d-4e8a-9c2f-5d6e7f8a9b0c changed other than by "
                                       "growing: turn 1 of")  # fmt: skip
    assert written.path.read_bytes() == before


def test_bad_files_are_one_line_each_and_the_others_still_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "ws"
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    args = ["transcripts", "import", str(FIXTURES / "bad"), str(CODEX), "--no-journals"]
    assert main(args) == 1
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"error: {FIXTURES / 'bad' / 'corrupt.jsonl'}:3: not a JSON line (Unterminated string starting at at column "
        "38); file not imported",
        f"error: {FIXTURES / 'bad' / 'unknown.jsonl'}: unknown format (not a Claude Code session, a Codex rollout or "
        "a message log); give --format claude-code|codex|messages; file not imported",
    ]
    assert "3 file(s): 1 new transcript(s), 0 updated, 0 unchanged; 2 failed" in out
    files = [p.name for p in (home / "raw").rglob("*") if p.is_file()]
    assert len(files) == 1 and files[0].startswith("1403-cx_")  # nothing half-written, no temp file left
    # --format forces the parser: a Claude Code file read as a Codex rollout is refused at its first line
    assert main(["transcripts", "import", str(CC_MAIN), "--format", "codex", "--no-journals"]) == 1
    assert capsys.readouterr().err == (f"error: {CC_MAIN}:1: not a Codex rollout line (expected 'timestamp', 'type', "
                                       "'payload'); file not imported\n")  # fmt: skip


def test_since_skips_older_sessions(tmp_path: Path) -> None:
    report = import_paths([FIXTURES / "claude_code", CODEX], tmp_path, Options(since=date(2026, 10, 15)))
    assert report.before_since == 2
    assert [w.session_id for w in report.written] == ["cx_0199e0d24c1b7a30b5e42f8d9c6a1e57"]


@pytest.mark.slow  # journal runs in process over three days, then one more day (~40 s)
def test_import_rebuilds_the_journals_of_the_affected_days_through_the_journal_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "ws"
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hashing-bow-256")
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    live = tmp_path / "src" / CC_MAIN.name
    live.parent.mkdir()
    lines = CC_MAIN.read_text(encoding="utf-8").splitlines(keepends=True)
    live.write_text("".join(lines[:5]), encoding="utf-8")
    assert main(["transcripts", "import", str(live.parent), str(CODEX), "--in-process"]) == 0
    assert "rebuilding the journals of 2026-10-14..2026-10-15" in capsys.readouterr().out
    journal = home / "knowledge" / "journal" / "2026-10-14.md"
    assert (home / "knowledge" / "journal" / "2026-10-15.md").is_file()
    assert "exponential backoff" not in journal.read_text(encoding="utf-8")
    live.write_text("".join(lines), encoding="utf-8")  # the session went on: the decision was made
    assert main(["transcripts", "import", str(live.parent), "--in-process"]) == 0
    out = capsys.readouterr().out
    assert "updated raw/conversations/2026/10/14/0912-cc_" in out and "version 2" in out
    assert "exponential backoff" in journal.read_text(encoding="utf-8")
    with dg.DagsterInstance.get() as instance:
        daily = [r for r in instance.get_runs() if r.job_name == "journal_daily"]
        ranges = sorted((r.tags["dagster/asset_partition_range_start"], r.tags["dagster/asset_partition_range_end"])
                        for r in daily)  # fmt: skip
        assert ranges == [("2026-10-14", "2026-10-14"), ("2026-10-14", "2026-10-15")]
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in instance.get_runs())


def test_the_sensor_imports_quiet_sessions_skips_live_ones_and_requests_their_days(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_pipeline.defs.journals.agent_transcripts import agent_transcripts_sensor
    from memory_pipeline.resources import MemoryStoreResource

    home, watched = tmp_path / "ws", tmp_path / "sessions"
    watched.mkdir()
    lines = CC_MAIN.read_text(encoding="utf-8").splitlines(keepends=True)
    live = watched / CC_MAIN.name
    live.write_text("".join(lines[:5]), encoding="utf-8")
    shutil.copyfile(CODEX, watched / CODEX.name)
    an_hour_ago = time.time() - 3600
    os.utime(watched / CODEX.name, (an_hour_ago, an_hour_ago))  # quiet for an hour; the Claude Code one is live
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    monkeypatch.delenv("MEMORY_PIPELINE_TRANSCRIPT_QUIET_MINUTES", raising=False)  # the default: 10 minutes
    resources = {"store": MemoryStoreResource(home=str(home))}
    instance = dg.DagsterInstance.ephemeral()

    def tick(cursor: str | None) -> dg.SensorResult:
        with dg.build_sensor_context(instance=instance, resources=resources, cursor=cursor) as context:
            result = agent_transcripts_sensor(context)
        assert isinstance(result, dg.SensorResult)
        return result

    monkeypatch.delenv("MEMORY_PIPELINE_TRANSCRIPT_SOURCES", raising=False)
    assert "is not set" in str(tick(None).skip_reason)
    monkeypatch.setenv("MEMORY_PIPELINE_TRANSCRIPT_SOURCES", str(watched))
    first = tick(None)
    assert [r.partition_key for r in first.run_requests or []] == ["2026-10-15"]  # the quiet Codex session
    assert list(transcripts(home / "raw")) == ["cx_0199e0d24c1b7a30b5e42f8d9c6a1e57"]  # the live one not imported
    still_live = tick(first.cursor)
    assert still_live.run_requests == [] and "1 live session file(s) wait until quiet for 10 min" in str(
        still_live.skip_reason
    )
    os.utime(live, (an_hour_ago, an_hour_ago))  # the session went quiet
    quieted = tick(still_live.cursor)
    assert [r.partition_key for r in quieted.run_requests or []] == ["2026-10-14"]
    quiet = tick(quieted.cursor)
    assert quiet.run_requests == [] and "no new or grown quiet session files" in str(quiet.skip_reason)
    live.write_text("".join(lines), encoding="utf-8")  # it went on, and went quiet again
    os.utime(live, (an_hour_ago + 60, an_hour_ago + 60))
    grown = tick(quiet.cursor)
    assert [r.partition_key for r in grown.run_requests or []] == ["2026-10-14"]
    versions = {t.session_id: t.frontmatter["version"] for t in transcripts(home / "raw").values()}
    assert versions == {"cc_3f2a9c1e7b4d4e8a9c2f5d6e7f8a9b0c": 2, "cx_0199e0d24c1b7a30b5e42f8d9c6a1e57": 1}
    monkeypatch.setenv("MEMORY_PIPELINE_TRANSCRIPT_QUIET_MINUTES", "soon")
    assert "MEMORY_PIPELINE_TRANSCRIPT_QUIET_MINUTES='soon': expected a number of minutes" in str(
        tick(grown.cursor).skip_reason
    )


def test_a_codex_sub_agent_session_and_grouped_message_logs(tmp_path: Path) -> None:
    sub = tmp_path / "src" / CODEX.name
    sub.parent.mkdir()
    sub.write_text(CODEX.read_text(encoding="utf-8").replace('"source": "cli"', '"source": {"subagent": "review"}'))
    log = tmp_path / "src" / "two-sessions.jsonl"
    log.write_text("\n".join([
        '{"session_id": "a-1", "role": "user", "content": "Deploy on Fridays?", "timestamp": 1792147200}',
        '{"session_id": "b-2", "role": "user", "content": "Which region?", "timestamp": "2026-10-16T10:00:00+02:00"}',
        '{"session_id": "a-1", "role": "assistant", "content": "No: we decided to freeze deploys on Fridays."}',
    ]) + "\n")  # fmt: skip
    report = import_paths([tmp_path / "src"], tmp_path / "raw")
    assert report.errors == []
    found = transcripts(tmp_path / "raw")
    codex = found["cx_0199e0d24c1b7a30b5e42f8d9c6a1e57"]
    assert codex.frontmatter["subagent"] == "review" and {t.kind for t in codex.turns} == {"sidechain"}
    assert [t.role for t in found["msg_a1"].turns] == ["user", "agent"]  # a message without a time takes the last
    # epoch seconds and an offset, both read as UTC
    assert found["msg_a1"].started == datetime(2026, 10, 16, 10, 40) and found["msg_b2"].started.hour == 8
