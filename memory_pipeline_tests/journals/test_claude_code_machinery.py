"""Claude Code's own machinery is not conversation: compaction boundaries and summaries, task notifications,
interruptions, synthetic API errors and a parent agent's prompt to its sub-agent become marked system turns
(kept for the reader, never extracted), and the compaction sub-agent's file is left out. Shapes as Claude Code
2.1 writes them."""

from __future__ import annotations

import json
from pathlib import Path

from memory_pipeline.journals.extractors import EXTRACTORS
from memory_pipeline.journals.imports import claude_code
from memory_pipeline.journals.imports.lines import ReadStats
from memory_pipeline.journals.imports.model import render
from memory_pipeline.journals.transcript import parse_transcript

SID = "5b1c2d3e-0000-4000-8000-00000000abcd"
SUMMARY = "This session is being continued from a previous conversation that ran out of context. " + "x" * 2000


def _line(kind: str, at: str, content: object, **extra: object) -> str:
    record = {"type": kind, "sessionId": SID, "uuid": f"u-{at}", "timestamp": f"2026-11-20T{at}:00.000Z",
              "cwd": "/home/jane/proj", "version": "2.1.152",
              "message": {"role": "user" if kind == "user" else "assistant", "content": content}, **extra}  # fmt: skip
    return json.dumps(record)


MAIN = [
    _line("user", "10:00", "Decided: retry the uploads with exponential backoff, 6 tries."),
    _line("assistant", "10:01", [{"type": "text", "text": "Done: backoff with 6 tries is in upload.py."}]),
    json.dumps({"type": "system", "subtype": "compact_boundary", "sessionId": SID, "timestamp": "2026-11-20T10:05:00Z",
                "content": "Conversation compacted",
                "compactMetadata": {"trigger": "auto", "preTokens": 181725, "postTokens": 12062}}),  # fmt: skip
    _line("user", "10:06", SUMMARY, isCompactSummary=True),
    _line("user", "10:07", "<task-notification><result>SUBAGENT DONE</result></task-notification>"),
    _line("user", "10:08", [{"type": "text", "text": "[Request interrupted by user for tool use]"}]),
    _line("assistant", "10:09", [{"type": "text", "text": "API Error: 529 overloaded"}], isApiErrorMessage=True),
]


def _sessions(path: Path, lines: list[str]) -> tuple[list, ReadStats]:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    stats = ReadStats()
    return claude_code.parse(path, stats), stats


def test_machinery_becomes_marked_system_turns_and_is_not_extracted(tmp_path: Path) -> None:
    [session], _ = _sessions(tmp_path / f"{SID}.jsonl", MAIN)
    roles = [(e.role, e.text[:40]) for e in session.entries]
    assert [r for r, _ in roles[:2]] == ["user", "agent"] and roles[0][1].startswith("Decided: retry")
    system = [e.text for e in session.entries if e.role == "system"]
    assert system[0] == "[conversation compacted (auto, 181725 → 12062 tokens)]"
    assert system[1].startswith("[compaction summary] This session is being continued") and len(system[1]) < 400
    assert system[2].startswith("[task notification]") and system[3] == "[interrupted by the user]"
    assert system[4] == "[API error] API Error: 529 overloaded"
    transcript = parse_transcript(render(session, "t", 1, False), tmp_path / "t.md")
    said = " ".join(c.content for ex in EXTRACTORS.values() for c in ex.find(transcript))
    assert "6 tries" in said or "backoff" in said  # the conversation is still read
    assert not any(w in said for w in ("continued from a previous", "SUBAGENT", "interrupted", "529"))


def test_a_sub_agents_prompt_is_the_parent_agents_and_the_compaction_agent_is_left_out(tmp_path: Path) -> None:
    task = [_line("user", "11:00", "Find every call of parse_date in src/.", isSidechain=True, agentId="a7f3"),
            _line("assistant", "11:01", [{"type": "text", "text": "Three calls, all in src/dates.py."}],
                  isSidechain=True, agentId="a7f3")]  # fmt: skip
    [sub], _ = _sessions(tmp_path / "agent-a7f3.jsonl", task)
    assert sub.entries[0].role == "system" and sub.entries[0].text.startswith("[prompt from the parent agent] Find")
    assert sub.extra["parent_session"].startswith("cc_") and sub.title.startswith("Find every call")
    compact = [_line("user", "12:00", "Your task is to create a detailed summary of the conversation so far.",
                     isSidechain=True, agentId="acompact-1b2c"),
               _line("assistant", "12:01", [{"type": "text", "text": "<summary>…</summary>"}], isSidechain=True,
                     agentId="acompact-1b2c")]  # fmt: skip
    sessions, stats = _sessions(tmp_path / "agent-acompact-1b2c.jsonl", compact)
    assert sessions == [] and "compaction sub-agent" in str(stats.__dict__)
