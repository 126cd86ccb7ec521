"""Codex CLI rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`) → one source session each.

Every line is a `RolloutLine`: `{"timestamp", "type", "payload"}` with `type` one of `session_meta`,
`response_item`, `compacted`, `turn_context`, `event_msg` (codex-rs/protocol/src/protocol.rs; references in
docs/transcript-imports.md). Read here: `session_meta` (`id`, `timestamp`, `cwd`, `cli_version`, `git` {commit_hash,
branch, repository_url}, `source` — `{"subagent": …}` for a sub-agent's session), `turn_context` (`model`) and the
`response_item`s (codex-rs/protocol/src/models.rs `ResponseItem`): `message` {role, content: [{type: input_text |
output_text, text}]}, `reasoning` {summary: [{text}]} (thinking), `function_call` {name, arguments, call_id} and
`function_call_output` {call_id, output}, `custom_tool_call` {name, input, call_id} and `custom_tool_call_output`,
`local_shell_call` {call_id, action: {command}}, `web_search_call` {action: {query}}. `event_msg` lines repeat the
messages for the UI and are left out — except in a rollout whose text is only there (Codex Desktop writes
`event_msg` `user_message` / `agent_message` {message} and no `response_item` messages): then they are its turns. An
`event_msg` `turn_aborted` {reason} (the user stopped a turn) is a marked system turn, `[turn aborted
(interrupted)]`, never extracted as anyone's words. Left out too: `developer`/`system` messages and the user
messages Codex injects (`<user_instructions>`, `<environment_context>`). A rollout from the first releases — a bare
SessionMeta `{id, timestamp, instructions}` line, then bare ResponseItems and `{"record_type": "state"}` lines — is
read too, every turn at the session's start (those lines carry no time). A line type or response item not known here
is left out and counted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_pipeline.journals.imports.lines import ReadStats, SourceError, jsonl_records
from memory_pipeline.journals.imports.model import (
    SIDECHAIN,
    THINKING,
    Entry,
    SourceSession,
    ToolUse,
    compact_json,
    safe_id,
    timestamp,
    title_from,
)

PREFIX = "cx_"
LINE_TYPES = ("session_meta", "response_item", "compacted", "turn_context", "event_msg")
ITEMS_READ = ("message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
              "custom_tool_call_output", "local_shell_call", "web_search_call")  # fmt: skip
ITEMS_LEFT_OUT = ("ghost_snapshot", "compaction", "compaction_summary", "additional_tools", "other")
EVENT_MESSAGES = {"user_message": "user", "agent_message": "agent"}  # protocol.rs EventMsg: {type, message}
GIT_FIELDS = {"branch": "git_branch", "commit_hash": "git_commit", "repository_url": "git_repository"}
INJECTED = ("<user_instructions>", "<environment_context>")  # protocol.rs USER_INSTRUCTIONS/ENVIRONMENT_CONTEXT


def looks_like(record: Any) -> bool:
    return isinstance(record, dict) and record.get("type") in LINE_TYPES and "payload" in record


def looks_like_first_release(record: Any) -> bool:
    """The first line of a rollout from Codex's first releases: a bare SessionMeta `{id, timestamp,
    instructions}`, before lines were wrapped as `{timestamp, type, payload}`."""
    return (
        isinstance(record, dict)
        and isinstance(record.get("id"), str)
        and isinstance(record.get("timestamp"), str)
        and not {"type", "role", "payload", "sessionId"} & record.keys()
    )


def _envelope(record: Any) -> bool:
    """A RolloutLine of any type, known or not: `timestamp`, a string `type` and `payload`."""
    return (
        isinstance(record, dict)
        and isinstance(record.get("type"), str)
        and "payload" in record
        and "timestamp" in record
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for item in content:
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            parts.append(item["text"])
        elif isinstance(item, dict) and item.get("type") == "input_image":
            parts.append("[image]")
    return "\n\n".join(p for p in parts if p.strip())


def _output(output: Any) -> tuple[str, bool]:
    """`function_call_output.output`: a string, content items, or (older files) {content, success}."""
    if isinstance(output, dict):
        return _text(output.get("content")) or compact_json(output.get("content", "")), output.get("success") is False
    if isinstance(output, list):
        return _text(output), False
    return ("" if output is None else str(output)), False


def parse(path: Path, stats: ReadStats | None = None) -> list[SourceSession]:
    stats = stats if stats is not None else ReadStats()
    session = SourceSession("codex", "", "", path)
    calls: dict[str, ToolUse] = {}
    side: str | None = None
    events: list[Entry] = []  # the UI's copies of the messages: the text only when no response_item message has it
    messages = False
    first_release: Any = None  # the time of a first-release rollout's meta line: every item's time
    for number, record in jsonl_records(path, stats):
        if not session.source_id and not _envelope(record) and looks_like_first_release(record):
            first_release = timestamp(record["timestamp"])
            if first_release is None:
                raise SourceError(f"{path}:1: field 'timestamp' is not an ISO-8601 time: {record['timestamp']!r}")
            session.source_id = record["id"]
            session.extra["codex_format"] = "first release"
            continue
        if first_release is not None:
            _first_release_line(session, calls, record, first_release, f"{path}:{number}", stats)
            continue
        if not _envelope(record):
            raise SourceError(f"{path}:{number}: not a Codex rollout line (expected 'timestamp', 'type', 'payload')")
        at = timestamp(record.get("timestamp"))
        if at is None:
            shown = record.get("timestamp")
            raise SourceError(f"{path}:{number}: field 'timestamp' is not an ISO-8601 time: {shown!r}")
        kind, payload = record["type"], record["payload"]
        if kind not in LINE_TYPES:
            stats.skip(kind)
            continue
        if not isinstance(payload, dict):
            raise SourceError(f"{path}:{number}: field 'payload' must be an object")
        if kind == "session_meta":
            if not session.source_id:
                if not isinstance(payload.get("id"), str) or not payload["id"]:
                    raise SourceError(f"{path}:{number}: session_meta without 'id'")
                session.source_id = payload["id"]
                side = _meta(session, payload)
            continue
        if kind == "turn_context" and isinstance(payload.get("model"), str):
            session.extra.setdefault("model", payload["model"])
        if kind == "event_msg" and session.source_id and payload.get("type") == "turn_aborted":
            reason = payload.get("reason") if isinstance(payload.get("reason"), str) else ""
            session.entries.append(Entry(at, "system", f"[turn aborted{f' ({reason})' if reason else ''}]"))
            continue
        if kind == "event_msg" and session.source_id and payload.get("type") in EVENT_MESSAGES:
            if isinstance(payload.get("message"), str) and payload["message"].strip():
                role = EVENT_MESSAGES[payload["type"]]
                if role == "agent" or not payload["message"].lstrip().startswith(INJECTED):
                    events.append(Entry(at, role, payload["message"], kind=side))
                    session.entries.append(events[-1])
            continue
        if kind != "response_item":
            continue
        if not session.source_id:
            raise SourceError(f"{path}:{number}: a response_item before the session_meta line")
        if payload.get("type") == "message" and payload.get("role") in ("user", "assistant"):
            messages = True
        if payload.get("type") in ITEMS_READ:
            _item(session, calls, payload, at, side)
        elif payload.get("type") not in ITEMS_LEFT_OUT:
            stats.skip(f"response_item {payload.get('type')}")
    if not session.source_id:
        raise SourceError(f"{path}:1: no session_meta line (not a Codex rollout, or an empty one)")
    if messages:  # a CLI rollout: event messages repeat its response items
        copies = {id(e) for e in events}
        session.entries = [e for e in session.entries if id(e) not in copies]
    session.session_id = PREFIX + safe_id(session.source_id)
    first_user = next((e.text for e in session.entries if e.role == "user" and e.text.strip()), "")
    session.title = title_from(first_user) or session.session_id
    return [session] if session.entries else []


def _first_release_line(session: SourceSession, calls: dict[str, ToolUse], record: Any, at: Any, where: str,
                        stats: ReadStats) -> None:  # fmt: skip
    """A line after a first-release rollout's meta: a bare ResponseItem, or a `{"record_type": "state"}` line."""
    if not isinstance(record, dict):
        raise SourceError(f"{where}: expected a JSON object, got {type(record).__name__}")
    if "record_type" in record:  # the recorder's state snapshots: bookkeeping
        return
    if record.get("type") in ITEMS_READ:
        _item(session, calls, record, at, None)
    elif record.get("type") not in ITEMS_LEFT_OUT:
        stats.skip(f"response_item {record.get('type')}")


def _meta(session: SourceSession, payload: dict[str, Any]) -> str | None:
    if isinstance(payload.get("cwd"), str):
        session.extra["project"] = Path(payload["cwd"]).name
    if isinstance(payload.get("cli_version"), str):
        session.extra["codex_version"] = payload["cli_version"]
    git: dict[str, Any] = payload["git"] if isinstance(payload.get("git"), dict) else {}
    for field, key in GIT_FIELDS.items():  # protocol.rs GitInfo: where the session's code was
        if isinstance(git.get(field), str) and git[field]:
            session.extra[key] = git[field]
    source = payload.get("source")
    if isinstance(source, dict) and "subagent" in source:  # SessionSource::SubAgent(SubAgentSource)
        sub = source["subagent"]
        session.extra["subagent"] = sub if isinstance(sub, str) else compact_json(sub)
        return SIDECHAIN
    return None


def _item(session: SourceSession, calls: dict[str, ToolUse], item: dict[str, Any], at: Any, side: str | None) -> None:
    itype = item.get("type")
    entries = session.entries
    if itype == "message":
        role, text = item.get("role"), _text(item.get("content"))
        if role == "user" and not text.lstrip().startswith(INJECTED):
            entries.append(Entry(at, "user", text, kind=side))
        elif role == "assistant":
            entries.append(Entry(at, "agent", text, kind=side))
    elif itype == "reasoning":
        summary = item.get("summary") if isinstance(item.get("summary"), list) else []
        entries.append(Entry(at, "agent", _text(summary), kind=THINKING))
    elif itype in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
        tool = _call(item)
        if isinstance(tool.call_id, str):
            calls[tool.call_id] = tool
        last = entries[-1] if entries else None
        if last is not None and last.role == "agent" and last.kind == side and last.key == "tools":
            last.tools.append(tool)  # the calls of one agent step are one turn
        else:
            entries.append(Entry(at, "agent", tools=[tool], kind=side, key="tools"))
    elif itype in ("function_call_output", "custom_tool_call_output"):
        result, error = _output(item.get("output"))
        call = calls.get(str(item.get("call_id")))
        if call is None:
            entries.append(Entry(at, "agent", tools=[ToolUse("tool_result", str(item.get("call_id") or ""), None,
                                                             result, error)], kind=side))  # fmt: skip
        else:
            call.result, call.error = result, error


def _call(item: dict[str, Any]) -> ToolUse:
    itype = item["type"]
    call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
    if itype == "function_call":
        return ToolUse(str(item.get("name") or "function"), str(item.get("arguments") or ""), call_id)
    if itype == "custom_tool_call":
        return ToolUse(str(item.get("name") or "custom_tool"), str(item.get("input") or ""), call_id)
    action: dict[str, Any] = item["action"] if isinstance(item.get("action"), dict) else {}
    if itype == "local_shell_call":
        command = action.get("command")
        shown = " ".join(map(str, command)) if isinstance(command, list) else compact_json(command or "")
        return ToolUse("local_shell", shown, call_id)
    return ToolUse("web_search", str(action.get("query") or compact_json(action)), call_id)
