"""Plain message logs → source sessions: a JSON list (or `{"messages": [...]}`) or JSONL of `{role, content}`.

Both API shapes are read. Anthropic Messages API: `content` a string or blocks `text`, `thinking`, `tool_use`
{id, name, input}, `tool_result` {tool_use_id, content, is_error}. OpenAI Chat Completions: `content` a string,
null or parts {type: text, text}; `tool_calls` [{id, function: {name, arguments}}] on an assistant message and
`role: tool` messages with `tool_call_id`. Roles: user → user, assistant → agent, system/developer → system,
tool → the result of its call; any other role (and content block) is left out and counted. Times: each message's
`timestamp` (ISO-8601 or epoch seconds; a message without one takes the one before it), else `started` (the
object's field or `--started`). Sessions: messages with a `session_id` field are grouped by it; else the object's
`session_id`; else one session per file, its id a hash of the file name, the first message and the start (so a
log that grows stays one session).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_pipeline.journals.imports.lines import TOO_DEEP, ReadStats, SourceError, jsonl_records
from memory_pipeline.journals.imports.model import (
    THINKING,
    Entry,
    SourceSession,
    ToolUse,
    compact_json,
    safe_id,
    timestamp,
    title_from,
)

PREFIX = "msg_"
KNOWN_PARTS = ("text", "input_text", "output_text", "image", "image_url", "input_image", "redacted_thinking")
ROLES = {"user": "user", "assistant": "agent", "system": "system", "developer": "system", "tool": "tool"}


def looks_like(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and isinstance(record.get("role"), str)
        and ("content" in record or "tool_calls" in record)
    )


def load(path: Path, stats: ReadStats | None = None) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """(where, message) pairs — where is `path:LINE` in JSONL, `path: message N` in JSON — and the wrapper's fields.
    A JSONL log is streamed; a JSON document is read whole (it is one value)."""
    if path.suffix.lower() == ".jsonl":
        return [(f"{path}:{n}", m) for n, m in jsonl_records(path, stats)], {}
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))  # a byte-order mark is not part of the JSON
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path}:{exc.lineno}: not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise SourceError(f"{path}: {TOO_DEEP}") from None
    wrapper: dict[str, Any] = {}
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        wrapper, data = data, data["messages"]
    if not isinstance(data, list):
        raise SourceError(f'{path}: expected a JSON list of {{role, content}} messages (or {{"messages": [...]}})')
    return [(f"{path}: message {i}", m) for i, m in enumerate(data)], wrapper


def parse(path: Path, started: datetime | None = None, stats: ReadStats | None = None) -> list[SourceSession]:
    stats = stats if stats is not None else ReadStats()
    rows, wrapper = load(path, stats)
    start = timestamp(wrapper.get("started")) or started
    groups: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for where, m in rows:
        if not looks_like(m):
            raise SourceError(f"{where}: expected an object with 'role' and 'content'")
        if m["role"] not in ROLES:  # an unknown event type: left out and counted
            stats.skip(f"role {m['role']}")
            continue
        sid = m.get("session_id", wrapper.get("session_id"))
        groups.setdefault(str(sid) if sid is not None else "", []).append((where, m))
    out = []
    for sid, messages in groups.items():
        session = _session(path, sid, messages, start, stats)
        session.title = title_from(str(wrapper.get("title") or "")) or next(
            (title_from(e.text) for e in session.entries if e.role == "user" and e.text.strip()), session.session_id
        )
        if session.entries:
            out.append(session)
    return out


def _session(path: Path, sid: str, messages: list[tuple[str, dict[str, Any]]], start: datetime | None,
             stats: ReadStats) -> SourceSession:  # fmt: skip
    at = start
    entries: list[Entry] = []
    calls: dict[str, ToolUse] = {}
    for where, m in messages:
        if "timestamp" in m:
            at = timestamp(m["timestamp"])
            if at is None:
                raise SourceError(f"{where}: field 'timestamp' is not an ISO-8601 time or epoch seconds")
        if at is None:
            raise SourceError(f"{where}: no 'timestamp' on the messages; give the session's start with --started")
        role = ROLES[m["role"]]
        if role == "tool":
            result = _text(m.get("content"))
            call = calls.get(str(m.get("tool_call_id")))
            if call is None:
                entries.append(Entry(at, "agent", tools=[ToolUse("tool_result", str(m.get("tool_call_id") or ""),
                                                                 None, result)]))  # fmt: skip
            else:
                call.result = result
            continue
        entries += _entries(where, m, role, at, calls, stats)
    first = json.dumps(messages[0][1], sort_keys=True, ensure_ascii=False) if messages else ""
    stamp = min((e.at for e in entries), default=start)
    if sid:
        session_id = PREFIX + safe_id(sid)
    else:
        digest = hashlib.sha256(f"{path.name}\n{first}\n{stamp}".encode()).hexdigest()[:16]
        session_id, sid = PREFIX + digest, digest
    return SourceSession("messages", sid, session_id, path, entries)


def _text(content: Any) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        return "\n\n".join(t for t in (_part(p) for p in content) if t.strip())
    return compact_json(content)


def _part(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return ""
    if part.get("type") in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
        return part["text"]
    if part.get("type") == "tool_result":
        return _text(part.get("content"))
    if part.get("type") in ("image", "image_url", "input_image"):
        return "[image]"
    return ""


def _entries(where: str, m: dict[str, Any], role: str, at: datetime, calls: dict[str, ToolUse],
             stats: ReadStats) -> list[Entry]:  # fmt: skip
    content = m.get("content")
    entry = Entry(at, role)
    out = [entry]
    if isinstance(content, str) or content is None:
        entry.text = content or ""
    elif isinstance(content, list):
        texts = []
        for block in content:
            btype = block.get("type") if isinstance(block, dict) else None
            if btype == "thinking" and isinstance(block, dict):
                out.insert(len(out) - 1, Entry(at, "agent", str(block.get("thinking") or ""), kind=THINKING))
            elif btype == "tool_use" and isinstance(block, dict):
                tool = ToolUse(str(block.get("name") or "tool"), compact_json(block.get("input", "")), block.get("id"))
                entry.tools.append(tool)
                if isinstance(tool.call_id, str):
                    calls[tool.call_id] = tool
            elif btype == "tool_result" and isinstance(block, dict):
                call = calls.get(str(block.get("tool_use_id")))
                result = _text(block.get("content"))
                if call is None:
                    entry.tools.append(ToolUse("tool_result", str(block.get("tool_use_id") or ""), None, result))
                else:
                    call.result, call.error = result, block.get("is_error") is True
            else:
                if isinstance(block, dict) and block.get("type") not in KNOWN_PARTS:
                    stats.skip(f"block {block.get('type')}")
                texts.append(_part(block))
        entry.text = "\n\n".join(t for t in texts if t.strip())
    else:
        raise SourceError(f"{where}: field 'content' must be a string, null or a list of blocks")
    for call in m.get("tool_calls") or []:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict):
            raise SourceError(f"{where}: each of 'tool_calls' needs a 'function' with 'name' and 'arguments'")
        tool = ToolUse(str(fn.get("name") or "function"), compact_json(fn.get("arguments", "")), call.get("id"))
        entry.tools.append(tool)
        if isinstance(tool.call_id, str):
            calls[tool.call_id] = tool
    return out
