"""Fields a user wants from a session, kept: Claude Code slash commands (a marked system turn, not the user's
words), the tool output Claude Code keeps only in `toolUseResult`, a title the user gave with /rename
(`custom-title`); Codex's git info and aborted turns. And a transcript an older importer wrote is rewritten on
the next import instead of being refused as edited."""

from __future__ import annotations

import json
from pathlib import Path

from memory_pipeline.journals.extractors import EXTRACTORS
from memory_pipeline.journals.imports import claude_code, codex
from memory_pipeline.journals.imports.importer import import_paths
from memory_pipeline.journals.imports.model import render
from memory_pipeline.journals.transcript import Transcript, parse_transcript

SID = "7c1d2e3f-0000-4000-8000-00000000beef"
COMMAND = ("<command-name>/model</command-name>\n            <command-message>model</command-message>\n"
           "            <command-args>opus</command-args>")  # fmt: skip


def _line(kind: str, at: str, content: object, **extra: object) -> str:
    record = {"type": kind, "sessionId": SID, "uuid": f"u-{at}", "timestamp": f"2026-11-21T{at}:00.000Z",
              "cwd": "/home/jane/proj", "version": "2.1.152",
              "message": {"role": "user" if kind == "user" else "assistant", "content": content}, **extra}  # fmt: skip
    return json.dumps(record)


CC = [
    json.dumps({"type": "summary", "summary": "Auto summary of the session", "leafUuid": "u-09:01"}),
    _line("user", "09:00", COMMAND),
    _line("user", "09:00", "<local-command-stdout>Set model to opus (claude-opus-4-5)</local-command-stdout>"),
    _line("user", "09:00", "<local-command-stdout></local-command-stdout>"),  # printed nothing: no turn
    _line("user", "09:01", "Decided: the nightly export runs at 02:00, not midnight."),
    _line("assistant", "09:02", [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                  "input": {"command": "crontab -l"}}]),  # fmt: skip
    _line("user", "09:02", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": ""}],
          toolUseResult={"stdout": "0 0 * * * export.sh", "stderr": "warning: no MAILTO", "interrupted": False}),
    json.dumps({"type": "custom-title", "customTitle": "Nightly export schedule", "sessionId": SID}),
]


def _cc(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "src" / f"{SID}.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _only(raw: Path) -> Transcript:
    [path] = sorted(raw.rglob("*.md"))
    return parse_transcript(path.read_text(encoding="utf-8"), path)


def test_claude_code_slash_commands_tool_output_and_custom_title_are_kept(tmp_path: Path) -> None:
    [session] = claude_code.parse(_cc(tmp_path, CC))
    assert session.title == "Nightly export schedule"  # the user's /rename wins over the auto summary
    entries = [e for e in session.entries if e.text or e.tools]  # what becomes turns
    assert sum(e.text.startswith("[command output]") for e in session.entries) == 1  # the empty one: no turn
    command, output = entries[0], entries[1]
    assert (command.role, command.text) == ("system", "[ran /model opus]")
    assert (output.role, output.text) == ("system", "[command output] Set model to opus (claude-opus-4-5)")
    [bash] = entries[3].tools
    assert bash.result == "0 0 * * * export.sh\nstderr: warning: no MAILTO"  # the block was empty
    transcript = parse_transcript(render(session, session.title, 1, False), tmp_path / "t.md")
    said = " ".join(c.content for ex in EXTRACTORS.values() for c in ex.find(transcript))
    assert "02:00" in said and "command-name" not in transcript.text and "/model" not in said


def test_a_tool_result_block_that_says_more_than_tool_use_result_is_kept() -> None:
    full = "line one\nline two of the real output"
    assert claude_code._fuller(full, {"stdout": "line one", "stderr": ""}) == full
    assert claude_code._fuller("", "Error: exit 1") == ""  # a string toolUseResult is not stdout
    assert claude_code._command("please run <command-name>/x</command-name> for me") is None


def test_codex_git_info_and_aborted_turns(tmp_path: Path) -> None:
    lines = [
        {"type": "session_meta", "payload": {"id": "0199aaaa-1111", "cwd": "/srv/shop", "cli_version": "0.60.1",
         "git": {"commit_hash": "3e1f0a9", "branch": "fix/vat", "repository_url": "git@github.com:acme/shop.git"}}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "Round VAT per line."}]}},
        {"type": "event_msg", "payload": {"type": "turn_aborted", "reason": "interrupted"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "Per invoice, then."}]}},
    ]  # fmt: skip
    path = tmp_path / "rollout-2026-11-21T09-00-00-0199aaaa-1111.jsonl"
    path.write_text("".join(json.dumps({"timestamp": f"2026-11-21T09:0{i}:00Z", **r}) + "\n"
                            for i, r in enumerate(lines)))  # fmt: skip
    [session] = codex.parse(path)
    assert session.extra["git_branch"] == "fix/vat" and session.extra["git_commit"] == "3e1f0a9"
    assert session.extra["git_repository"] == "git@github.com:acme/shop.git"
    assert [(e.role, e.text) for e in session.entries] == [
        ("user", "Round VAT per line."), ("system", "[turn aborted (interrupted)]"), ("user", "Per invoice, then.")]
    transcript = parse_transcript(render(session, session.title, 1, False), tmp_path / "t.md")
    assert transcript.frontmatter["git_commit"] == "3e1f0a9"


def test_an_older_importers_transcript_is_rewritten_not_refused(tmp_path: Path) -> None:
    source = _cc(tmp_path, CC)
    assert import_paths([source], tmp_path / "raw").errors == []
    [path] = sorted((tmp_path / "raw").rglob("*.md"))
    fresh = path.read_text(encoding="utf-8")
    old_mapping = fresh.replace("## 09:00 — system\n[ran /model opus]", "## 09:00 — user\n" + COMMAND.split("\n")[0])
    assert old_mapping != fresh
    path.write_text(old_mapping, encoding="utf-8")  # as this importer's own output, it was edited: refused
    [refused] = import_paths([source], tmp_path / "raw").errors
    assert "changed other than by growing" in refused
    path.write_text(old_mapping.replace("importer: 2\n", ""), encoding="utf-8")  # as the older importer wrote it
    report = import_paths([source], tmp_path / "raw")
    assert report.errors == [] and [w.version for w in report.written] == [2]
    rewritten = _only(tmp_path / "raw")
    assert rewritten.turns[0].role == "system" and rewritten.frontmatter["importer"] == 2
