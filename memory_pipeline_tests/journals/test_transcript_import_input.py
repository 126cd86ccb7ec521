"""`transcripts import` on bad and big input, and `--watch`: one clear line each, nothing half-written, memory
bounded; the watcher imports quiet sessions, leaves live ones and stops on Ctrl-C with one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from memory_pipeline.cli import main
from memory_pipeline.journals.imports.importer import import_paths
from memory_pipeline.journals.imports.lines import LINE_CAP
from memory_pipeline.journals.imports.model import TOOL_RESULT_CAP
from memory_pipeline.journals.transcript import Transcript, parse_transcript
from memory_pipeline_tests.journals.test_transcript_import import CC_MAIN, CODEX, transcripts

SID = "3f2a9c1e-7b4d-4e8a-9c2f-5d6e7f8a9b0c"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "ws"
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    return home


def cc_line(uuid: str, kind: str, content: object, at: str = "2026-10-14T09:20:00.000Z") -> str:
    message = {"role": kind, "content": content, **({"id": f"msg_{uuid}"} if kind == "assistant" else {})}
    record = {"type": kind, "sessionId": SID, "uuid": uuid, "timestamp": at, "isSidechain": False, "message": message}
    return json.dumps(record) + "\n"


def transcripts_of(source: Path, raw: Path) -> dict[str, Transcript]:
    assert import_paths([source], raw).errors == []
    return transcripts(raw)


def md_files(home: Path) -> list[Path]:
    return sorted(p for p in (home / "raw").rglob("*") if p.is_file())


def test_a_truncated_last_line_imports_the_complete_lines_and_says_so(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = CC_MAIN.read_text(encoding="utf-8").splitlines(keepends=True)
    live = tmp_path / "src" / CC_MAIN.name
    live.parent.mkdir()
    live.write_text("".join(lines[:7]) + lines[7][:60], encoding="utf-8")  # line 8 cut mid-way
    assert main(["transcripts", "import", str(live), "--no-journals"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"note: {live}:8: the last line is unfinished (a session still being written): imported the 7 line(s) "
        "before it; the rest on the next import"
    ]
    assert "1 file(s): 1 new transcript(s), 0 updated, 0 unchanged, 1 with an unfinished last line" in out
    [session] = transcripts(workspace / "raw").values()
    complete = tmp_path / "complete" / CC_MAIN.name
    complete.parent.mkdir()
    complete.write_text("".join(lines[:7]), encoding="utf-8")
    [expected] = transcripts_of(complete, tmp_path / "expected").values()
    assert session.turns == expected.turns and len(session.turns) == 3  # user, agent (Bash), agent (Task)


def test_unknown_event_types_are_skipped_and_counted_in_the_summary(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    future = json.dumps({"type": "mystery-event", "sessionId": SID, "timestamp": "2026-10-14T09:20:00Z"}) + "\n"
    block = cc_line("u-0100", "assistant", [{"type": "server_tool_use", "id": "s1"}, {"type": "text", "text": "Done."}])
    (src / CC_MAIN.name).write_text(CC_MAIN.read_text(encoding="utf-8") + future + future + block, encoding="utf-8")
    rollout = CODEX.read_text(encoding="utf-8").splitlines(keepends=True)
    extra = [
        json.dumps({"timestamp": "2026-10-15T14:09:00Z", "type": "future_line", "payload": {}}) + "\n",
        json.dumps({"timestamp": "2026-10-15T14:09:00Z", "type": "response_item", "payload": {"type": "hologram"}})
        + "\n",
    ]
    (src / CODEX.name).write_text("".join(rollout + extra), encoding="utf-8")
    assert main(["transcripts", "import", str(src), "--no-journals"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert (
        "2 file(s): 2 new transcript(s), 0 updated, 0 unchanged; 5 unknown event(s) skipped (mystery-event ×2, "
        "block server_tool_use ×1, future_line ×1, …)" in out
    )
    found = transcripts(workspace / "raw")
    assert found[f"cc_{SID.replace('-', '')}"].turns[-1].text == "Done."  # the rest of that message kept
    assert len(found["cx_0199e0d24c1b7a30b5e42f8d9c6a1e57"].turns) == 3  # as without the unknown lines


def test_files_that_are_not_sessions_are_one_line_each(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "numbers.jsonl").write_text("[1, 2]\n3\n", encoding="utf-8")
    (src / "package.json").write_text('{"name": "web", "version": "1.0.0"}\n', encoding="utf-8")
    summaries = json.dumps({"type": "summary", "summary": "Old chat", "leafUuid": "u-1"}) + "\n"
    (src / "titles.jsonl").write_text(summaries * 2, encoding="utf-8")  # Claude Code writes such files
    assert main(["transcripts", "import", str(src), "--no-journals"]) == 1
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"error: {src / 'numbers.jsonl'}: unknown format (not a Claude Code session, a Codex rollout or a message "
        "log); give --format claude-code|codex|messages; file not imported",
        f"error: {src / 'package.json'}: expected a JSON list of {{role, content}} messages (or "
        '{"messages": [...]}); file not imported',
    ]
    assert "3 file(s): 0 new transcript(s), 0 updated, 0 unchanged, 1 without a session; 2 failed; nothing " in out
    assert md_files(workspace) == []


def test_invalid_utf8_names_the_file_and_line_and_writes_nothing(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    lines = CC_MAIN.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b"backoff", b"back\xffoff", 1)
    (src / CC_MAIN.name).write_bytes(b"".join(lines))
    chat = b'[{"role": "user", "content": "caf\xe9", "timestamp": 1792147200}]'
    (src / "chat.json").write_bytes(chat)
    assert main(["transcripts", "import", str(src), "--no-journals"]) == 1
    out, err = capsys.readouterr()
    byte, chat_byte = lines[1].index(b"\xff") + 1, chat.index(b"\xe9") + 1
    assert err.splitlines() == [
        f"error: {src / CC_MAIN.name}:2: not UTF-8 (byte {byte} of the line); file not imported",
        f"error: {src / 'chat.json'}: not UTF-8 (byte {chat_byte} of the file); file not imported",
    ]
    assert "2 failed; nothing written" in out and md_files(workspace) == []


def test_a_50_mb_tool_output_is_cut_at_the_cap_in_bounded_memory(tmp_path: Path) -> None:
    output = "".join(f"row {i:07d} status=ok latency_ms={i % 997}\n" for i in range(1_400_000))
    result = {"type": "tool_result", "tool_use_id": "toolu_big", "content": output}
    src = tmp_path / "src" / "big.jsonl"
    src.parent.mkdir()
    with src.open("w", encoding="utf-8") as fh:
        fh.write(cc_line("u-1", "user", "Dump the request log, please.", "2026-10-14T09:00:00Z"))
        call = {"type": "tool_use", "id": "toolu_big", "name": "Bash", "input": {"command": "cat requests.log"}}
        fh.write(cc_line("u-2", "assistant", [call], "2026-10-14T09:00:05Z"))
        fh.write(cc_line("u-3", "user", [result], "2026-10-14T09:00:09Z"))
        fh.write(cc_line("u-4", "assistant", "The log shows no errors.", "2026-10-14T09:00:12Z"))
    escaped = len(json.dumps(output)) - 2  # the string's size as the file writes it
    assert escaped > 50 * 2**20 and src.stat().st_size > 50 * 2**20
    del output, result
    tracemalloc.start()
    try:
        report = import_paths([src], tmp_path / "raw")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.errors == [] and len(report.written) == 1
    assert peak < 12 * LINE_CAP  # a few 1 MB chunks, never the 50 MB line or a 50 MB string
    session = parse_transcript(report.written[0].path.read_text(encoding="utf-8"))
    tool = session.turns[1].tools[0]
    assert tool.result is not None and tool.result.startswith("row 0000000 status=ok latency_ms=0 ⏎ row 0000001")
    assert tool.result.endswith(f"… [cut: {TOOL_RESULT_CAP} of {escaped} bytes]")
    assert session.turns[-1].text == "The log shows no errors."


def test_a_folder_of_many_sessions_shows_progress_on_stderr(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for i in range(60):
        log = {"session_id": f"s{i}", "messages": [{"role": "user", "content": f"Question {i}?"},
                                                   {"role": "assistant", "content": f"Answer {i}."}]}  # fmt: skip
        (src / f"chat-{i:03d}.json").write_text(json.dumps(log), encoding="utf-8")
    monkeypatch.setenv("MEMORY_PIPELINE_PROGRESS", "log")
    args = ["transcripts", "import", str(src), "--no-journals", "--started", "2026-10-16T12:00:00Z"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0] == "importing 1/60 files" and err.splitlines()[-1] == "importing 60/60 files"
    assert "60 file(s): 60 new transcript(s)" in out
    monkeypatch.setenv("MEMORY_PIPELINE_PROGRESS", "bar")
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "\r\x1b[Kimporting [########################] 60/60 files\n" in err and "60 unchanged" in out


def test_watch_imports_quiet_sessions_leaves_live_ones_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    """A real `transcripts import --watch` process: it must import the quiet session, wait for the live one, and
    end with one line and exit 0 on SIGINT. Every wait is minutes; the process is always stopped."""
    src = tmp_path / "src"
    src.mkdir()
    quiet, live = src / CODEX.name, src / CC_MAIN.name
    quiet.write_bytes(CODEX.read_bytes())
    an_hour_ago = time.time() - 3600
    os.utime(quiet, (an_hour_ago, an_hour_ago))
    live.write_bytes(CC_MAIN.read_bytes())  # written just now: live for the next 5 minutes
    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(tmp_path / "ws"), "MEMORY_PIPELINE_JOURNAL_GIT": "0"}
    out_path, err_path = tmp_path / "out.txt", tmp_path / "err.txt"
    cmd = [sys.executable, "-m", "memory_pipeline.cli", "transcripts", "import", str(src), "--watch",
           "--interval", "0.2", "--quiet-minutes", "5", "--no-journals"]  # fmt: skip
    wait_s = 300
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
    try:
        deadline = time.monotonic() + wait_s
        while "1 file(s): 1 new transcript(s)" not in out_path.read_text(encoding="utf-8"):
            assert proc.poll() is None, f"exited {proc.returncode}: {err_path.read_text(encoding='utf-8')}"
            assert time.monotonic() < deadline, out_path.read_text(encoding="utf-8")
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=wait_s) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=wait_s)
    lines = out_path.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith(f"watching {src} every 0.2 s; sessions quiet for 5 min are imported")
    assert "1 live session file(s) wait until quiet for 5 min" in lines
    assert lines[-1] == "stopped watching: 1 transcript(s) written"
    assert err_path.read_text(encoding="utf-8") == ""  # no traceback
    assert [p.name[:12] for p in (tmp_path / "ws" / "raw").rglob("*.md")] == ["1403-cx_0199"]
