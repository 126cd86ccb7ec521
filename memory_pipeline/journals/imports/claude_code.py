"""Claude Code session files (`~/.claude/projects/<project>/<session id>.jsonl`) → source sessions.

Each line is one JSON object tagged by `type` (see docs/transcript-imports.md for the references). Read here: `user`
and `assistant` lines — `sessionId`, `uuid`, `timestamp`, `isSidechain`, `isMeta`, `agentId`, `cwd`, `gitBranch`,
`version` and `message` (an Anthropic Messages API message: `role`, `id`, `model`, `content` as a string or blocks
`text`, `thinking`, `tool_use` {id, name, input}, `tool_result` {tool_use_id, content, is_error}) — `summary` lines
(`summary`: the session's title) and `custom-title` lines (`customTitle`: the title the user gave the session,
before the summary). A user tool-result line's `toolUseResult` {stdout, stderr} is the tool's result when its
`tool_result` block says less (Claude Code may leave the block empty). The bookkeeping line types (`BOOKKEEPING`:
`system`, `file-history-snapshot`, `queue-operation`, …) are left out, as are `isMeta` user lines (notices Claude
Code injects, not the user's words); a line type or content block not known here is left out and counted. Lines are
grouped by `sessionId`; a sub-agent's own file (every message line `isSidechain` with an `agentId`) is a session of
its own, `<parent>_<agentId>`, naming its parent; sidechain lines in a main file stay in that session as
`[sidechain]` turns.

Claude Code's own machinery is not conversation, and is kept as marked `system` turns — in the transcript, so a
reader sees where a session was compacted or interrupted, but never extracted as the user's or the agent's words:
the compaction boundary (`system` line, `subtype: compact_boundary`) and the summary Claude Code writes after it
(`isCompactSummary`, cut to its first lines: it restates the turns above it), task notifications
(`<task-notification>` user text), interruptions (`[Request interrupted by user…]`), synthetic API errors
(`isApiErrorMessage`, model `<synthetic>`), slash commands the user ran (`<command-name>/foo</command-name>` user
text: `[ran /foo args]`) and their local output (`<local-command-stdout>`), and in a sub-agent's file the prompt its
parent agent wrote (a "user" line there is the parent, not the person). The compaction sub-agent's own file
(`agent-acompact-*`, agent id `acompact…`) is left out whole: its "user" is Claude Code's compaction prompt and its
answer is the summary the main file already holds. Shapes as Claude Code 2.1 writes them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from memory_pipeline.journals.imports.lines import ReadStats, SourceError, jsonl_records
from memory_pipeline.journals.imports.model import (
    SIDECHAIN,
    THINKING,
    Entry,
    SourceSession,
    ToolUse,
    cap,
    compact_json,
    safe_id,
    timestamp,
    title_from,
)

PREFIX = "cc_"
MESSAGE_TYPES = ("user", "assistant")
# bookkeeping lines Claude Code writes (see the module doc): left out, not counted as unknown
BOOKKEEPING = ("system", "file-history-snapshot", "queue-operation", "progress", "summary")
BLOCKS_LEFT_OUT = ("redacted_thinking",)
MACHINERY_CAP = 300  # characters of a compaction summary or notification kept on its system turn
_INTERRUPTED = "[Request interrupted by user"
_COMMAND_TAG = re.compile(r"<command-(?P<tag>name|message|args)>(?P<value>.*?)</command-(?P=tag)>", re.DOTALL)
_COMMAND_STDOUT = re.compile(r"^<local-command-(?:stdout|stderr)>(?P<out>.*?)</local-command-(?:stdout|stderr)>$",
                             re.DOTALL)  # fmt: skip


def looks_like(record: Any) -> bool:
    """A Claude Code line: a `user`/`assistant` line with `sessionId` and `message`, or a `summary` line."""
    if not isinstance(record, dict):
        return False
    kind = record.get("type")
    if kind in MESSAGE_TYPES:
        return "sessionId" in record and isinstance(record.get("message"), dict)
    return kind == "summary" and "leafUuid" in record


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text") or ""))
            elif isinstance(block, dict):
                parts.append(f"[{block.get('type', 'block')}]")
        return "\n".join(parts)
    return "" if content is None else compact_json(content)


class _Session:
    def __init__(self, source_id: str, path: Path) -> None:
        self.out = SourceSession("claude-code", source_id, "", path)
        self.calls: dict[str, ToolUse] = {}
        self.sidechain_only = True
        self.agent_id: str | None = None


def parse(path: Path, stats: ReadStats | None = None) -> list[SourceSession]:
    stats = stats if stats is not None else ReadStats()
    sessions: dict[str, _Session] = {}
    summaries: list[str] = []
    custom_titles: dict[str, str] = {}  # session id → the last title the user gave it
    for number, record in jsonl_records(path, stats):
        if not isinstance(record, dict):
            raise SourceError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
        kind = record.get("type")
        if kind == "summary" and isinstance(record.get("summary"), str):
            summaries.append(record["summary"])
            continue
        if kind == "custom-title":
            if isinstance(record.get("customTitle"), str) and record["customTitle"].strip():
                custom_titles[str(record.get("sessionId"))] = record["customTitle"]
            continue
        if kind == "system" and record.get("subtype") == "compact_boundary":
            _boundary(sessions, record, path)
            continue
        if kind not in MESSAGE_TYPES:
            if kind not in BOOKKEEPING:
                stats.skip(kind)
            continue
        sid, message = record.get("sessionId"), record.get("message")
        if not isinstance(sid, str) or not sid or not isinstance(message, dict):
            raise SourceError(f"{path}:{number}: a '{kind}' line without 'sessionId' or 'message'")
        at = timestamp(record.get("timestamp"))
        if at is None:
            shown = record.get("timestamp")
            raise SourceError(f"{path}:{number}: field 'timestamp' is not an ISO-8601 time: {shown!r}")
        state = sessions.setdefault(sid, _Session(sid, path))
        side = record.get("isSidechain") is True
        state.sidechain_only &= side
        if side and isinstance(record.get("agentId"), str):
            state.agent_id = state.agent_id or record["agentId"]
        extra = state.out.extra
        if isinstance(record.get("cwd"), str) and "project" not in extra:
            extra["project"] = Path(record["cwd"]).name
        if isinstance(record.get("gitBranch"), str) and record["gitBranch"] and "git_branch" not in extra:
            extra["git_branch"] = record["gitBranch"]
        if isinstance(message.get("model"), str) and "model" not in extra:
            extra["model"] = message["model"]
        if isinstance(record.get("version"), str) and "claude_code_version" not in extra:
            extra["claude_code_version"] = record["version"]
        if kind == "user" and record.get("isMeta") is True:
            continue
        before = len(state.out.entries)
        _add(state, kind, message, at, SIDECHAIN if side else None, f"{path}:{number}", stats,
             record.get("toolUseResult"))
        for entry in state.out.entries[before:]:
            _mark_machinery(entry, record, message)
    out = []
    for sid, state in sessions.items():
        session = state.out
        session.session_id = PREFIX + safe_id(sid)
        first_user = next((e.text for e in session.entries if e.role == "user" and e.text.strip()), "")
        if state.sidechain_only and state.agent_id:  # a sub-agent's own file
            if state.agent_id.startswith("acompact") or path.name.startswith("agent-acompact"):
                stats.skip("compaction sub-agent")  # Claude Code summarising the session: not a conversation
                continue
            session.session_id += "_" + safe_id(state.agent_id)
            session.source_id = f"{sid}/{state.agent_id}"
            session.extra["parent_session"] = PREFIX + safe_id(sid)
            for e in session.entries:  # its "user" is the parent agent's prompt (and tool results)
                if e.role == "user" and e.text.strip():
                    e.role, e.text = "system", f"[prompt from the parent agent] {e.text}"
        named = custom_titles.get(sid) or (summaries[0] if summaries else first_user)
        session.title = title_from(named) or session.session_id
        if session.entries:
            out.append(session)
    return out


def _add(state: _Session, kind: str, message: dict[str, Any], at: Any, side: str | None, where: str,
         stats: ReadStats, use_result: Any = None) -> None:  # fmt: skip
    content = message.get("content")
    role = "user" if kind == "user" else "agent"
    key = message.get("id") if isinstance(message.get("id"), str) else None
    if isinstance(content, str):
        state.out.entries.append(Entry(at, role, content, kind=side, key=key))
        return
    if not isinstance(content, list):
        raise SourceError(f"{where}: field 'message.content' must be a string or a list of blocks")
    entry = Entry(at, role, kind=side, key=key)
    texts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text":
            texts.append(str(block.get("text") or ""))
        elif btype == "thinking" and isinstance(block.get("thinking"), str):
            state.out.entries.append(Entry(at, "agent", block["thinking"], kind=THINKING, key=key))
        elif btype == "tool_use":
            tool = ToolUse(str(block.get("name") or "tool"), compact_json(block.get("input", "")), block.get("id"))
            entry.tools.append(tool)
            if isinstance(tool.call_id, str):
                state.calls[tool.call_id] = tool
        elif btype == "tool_result":
            call = state.calls.get(str(block.get("tool_use_id")))
            result = _fuller(_result_text(block.get("content")), use_result)
            if call is None:  # its call is not in this file: keep the result on a marker of its own
                entry.tools.append(ToolUse("tool_result", str(block.get("tool_use_id") or ""), None, result))
            else:
                call.result, call.error = result, block.get("is_error") is True
        elif btype in ("image", "document"):
            texts.append(f"[{btype}]")
        elif btype not in BLOCKS_LEFT_OUT:
            stats.skip(f"block {btype}")
    entry.text = "\n\n".join(t for t in texts if t.strip())
    state.out.entries.append(entry)


def _fuller(result: str, use_result: Any) -> str:
    """The tool's result: the `tool_result` block's text, or the line's `toolUseResult` stdout and stderr when
    those say more (a Bash result whose block is empty); `tool_line` cuts it at `TOOL_RESULT_CAP`."""
    if not isinstance(use_result, dict):
        return result
    out, err = use_result.get("stdout"), use_result.get("stderr")
    parts = [out.strip() if isinstance(out, str) else "", f"stderr: {err.strip()}" if isinstance(err, str)
             and err.strip() else ""]  # fmt: skip
    shown = "\n".join(p for p in parts if p)
    return shown if len(shown) > len(result.strip()) else result


def _command(text: str) -> str | None:
    """`[ran /foo args]` for a slash command's user line (`<command-name>/foo</command-name>…` and nothing else);
    None for any other text."""
    tags = {m["tag"]: m["value"].strip() for m in _COMMAND_TAG.finditer(text)}
    if not tags.get("name") or _COMMAND_TAG.sub("", text).strip():
        return None
    name = tags["name"] if tags["name"].startswith("/") else "/" + tags["name"]
    return f"[ran {name}{' ' + tags['args'] if tags.get('args') else ''}]"


def _boundary(sessions: dict[str, _Session], record: dict[str, Any], path: Path) -> None:
    """A compaction boundary: a system turn saying when and how much, in its session (if it names one)."""
    sid, at = record.get("sessionId"), timestamp(record.get("timestamp"))
    if not isinstance(sid, str) or not sid or at is None:
        return
    meta: dict[str, Any] = record["compactMetadata"] if isinstance(record.get("compactMetadata"), dict) else {}
    trigger = meta.get("trigger") or "compaction"
    tokens = f", {meta['preTokens']} → {meta['postTokens']} tokens" if {"preTokens", "postTokens"} <= set(meta) else ""
    sessions.setdefault(sid, _Session(sid, path)).out.entries.append(
        Entry(at, "system", f"[conversation compacted ({trigger}{tokens})]")
    )


def _mark_machinery(entry: Entry, record: dict[str, Any], message: dict[str, Any]) -> None:
    """Claude Code's own lines (see the module doc) become marked system turns."""
    text = entry.text.strip()
    if record.get("isCompactSummary") is True:
        entry.role, entry.text = "system", f"[compaction summary] {cap(text, MACHINERY_CAP)}"
    elif entry.role == "user" and text.startswith("<task-notification>"):
        entry.role, entry.text = "system", f"[task notification] {cap(text, MACHINERY_CAP)}"
    elif entry.role == "user" and text.startswith(_INTERRUPTED):
        entry.role, entry.text = "system", "[interrupted by the user]"
    elif entry.role == "user" and (command := _command(text)) is not None:
        entry.role, entry.text = "system", cap(command, MACHINERY_CAP)
    elif entry.role == "user" and (output := _COMMAND_STDOUT.match(text)) is not None:
        shown = cap(output["out"].strip(), MACHINERY_CAP)  # a command that printed nothing: no turn at all
        entry.role, entry.text = "system", f"[command output] {shown}" if shown else ""
    elif entry.role == "agent" and (record.get("isApiErrorMessage") is True or message.get("model") == "<synthetic>"):
        entry.role, entry.text = "system", f"[API error] {cap(text, MACHINERY_CAP)}"
