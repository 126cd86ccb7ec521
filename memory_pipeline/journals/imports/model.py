"""What every source format is parsed into, and how a parsed session becomes transcript text.

A source session is a list of `Entry`s in file order: one per message of the source (user, agent or system),
each with its prose and the tool calls it made; a tool's result, which the sources write as a later message, is
attached to its call by the call id. `render` turns a session into the transcript format of `journals.transcript`:
`## HH:MM — role` turns (UTC), `> [tool:NAME] input → result` lines, sub-agent turns as `[sidechain]` turns,
thinking as `[thinking]` turns only when asked for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_pipeline.journals.imports.lines import CUT_NOTE, SourceError
from memory_pipeline.journals.transcript import Turn, escape_body, format_transcript

TOOL_INPUT_CAP = 300  # characters of a tool call's input kept on its marker line
TOOL_RESULT_CAP = 2000  # characters of a tool's result kept; a longer one is cut and its size noted
TITLE_CAP = 80
# what this code maps a source to; raised when a mapping changes (a slash command now a system turn, not the
# user's), so the next import rewrites a transcript an older importer wrote instead of refusing it as edited
IMPORTER = 2
SIDECHAIN = "sidechain"
THINKING = "thinking"
_TOOL_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")


@dataclass
class ToolUse:
    name: str
    input: str  # one line: the call's arguments as the source wrote them (compact JSON or text)
    call_id: str | None = None
    result: str | None = None
    error: bool = False


@dataclass
class Entry:
    at: datetime  # aware
    role: str  # user | agent | system
    text: str = ""
    tools: list[ToolUse] = field(default_factory=list)
    kind: str | None = None  # None | "sidechain" | "thinking"
    key: str | None = None  # the source's message id: consecutive entries with the same key are one turn


@dataclass
class SourceSession:
    channel: str  # claude-code | codex | messages
    source_id: str  # the session id as the source writes it
    session_id: str  # the transcript's: [A-Za-z0-9_]+
    path: Path
    entries: list[Entry] = field(default_factory=list)
    title: str = ""  # the source's summary, else the first user message
    extra: dict[str, Any] = field(default_factory=dict)  # frontmatter fields from the source (project, model, …)

    @property
    def started(self) -> datetime:
        return min(e.at for e in self.entries)


def one_line(text: str) -> str:
    """A multi-line value on one marker line: line breaks shown as ⏎."""
    return " ⏎ ".join(part.rstrip() for part in text.strip().splitlines() if part.strip())


def cap(text: str, limit: int) -> str:
    """`text` cut at `limit` characters (before its line breaks become ⏎), noting its size: `… [cut: 2000 of 18234
    chars]`; a string already cut while its huge line was read keeps that size: `… [cut: 2000 of 52428800 bytes]`."""
    if (read_cut := CUT_NOTE.search(text)) is not None and read_cut.start() > limit:
        return f"{text[:limit].rstrip()} … [cut: {limit} of {read_cut['size']} bytes]"
    if len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()} … [cut: {limit} of {len(text)} chars]"


def tool_line(tool: ToolUse) -> str:
    name = _TOOL_NAME.sub("_", tool.name).strip("_") or "tool"
    summary = one_line(cap(tool.input, TOOL_INPUT_CAP)).replace(" → ", " -> ")  # the first ` → ` ends the input
    line = f"> [tool:{name}]" + (f" {summary}" if summary else "")
    if tool.result is not None:
        result = one_line(cap(tool.result.strip(), TOOL_RESULT_CAP)) or "(empty)"
        line += f" → {'error: ' if tool.error else ''}{result}"
    return line


def compact_json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def timestamp(value: Any) -> datetime | None:
    """An ISO-8601 string (`Z` or an offset; naive is UTC) or epoch seconds → aware UTC; None if neither."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value / 1000 if value > 1e11 else value, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    try:
        ts = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def title_from(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    first = re.sub(r"\s+", " ", first)
    return first if len(first) <= TITLE_CAP else first[: TITLE_CAP - 1].rstrip() + "…"


def safe_id(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "", text)


def merged(entries: list[Entry], keep_thinking: bool) -> list[Entry]:
    """Consecutive entries of one source message (same key, role and kind) as one; thinking left out unless kept;
    entries with neither prose nor tools dropped."""
    out: list[Entry] = []
    for e in entries:
        if e.kind == THINKING and not keep_thinking:
            continue
        if not e.text.strip() and not e.tools:
            continue
        last = out[-1] if out else None
        if last is not None and e.key and last.key == e.key and (last.role, last.kind) == (e.role, e.kind):
            last.text = "\n\n".join(t for t in (last.text, e.text) if t.strip())
            last.tools.extend(e.tools)
            continue
        out.append(Entry(e.at, e.role, e.text, list(e.tools), e.kind, e.key))
    return out


def _stamp(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def render(
    session: SourceSession, title: str, version: int, keep_thinking: bool, extra: Mapping[str, Any] | None = None
) -> str:
    """The session as transcript text (frontmatter, `# title`, turns); `version` counts the imports that changed it."""
    entries = merged(session.entries, keep_thinking)
    for before, e in zip(entries, entries[1:], strict=False):  # the parser reads an earlier HH:MM as the next day
        e.at = max(e.at, before.at)
    if not entries:
        raise SourceError(f"{session.path}: session {session.source_id}: no messages with text or tool calls")
    started = min(e.at for e in entries)
    ended = max(e.at for e in entries)
    roles = [r for r in dict.fromkeys(e.role for e in entries) if r != "system"]
    meta: dict[str, Any] = {
        "session_id": session.session_id,
        "started": _stamp(started),
        "ended": _stamp(ended),
        "channel": session.channel,
        "participants": roles or ["system"],
        "source_session": session.source_id,
        "source_file": session.path.name,
        **session.extra,
        **(extra or {}),
        "version": version,
        "importer": IMPORTER,
    }
    turns = []
    first_day = started.astimezone(UTC).date()
    for e in entries:
        body = (escape_body(e.text.strip()) if e.text.strip() else []) + [tool_line(t) for t in e.tools]
        at = e.at.astimezone(UTC)
        day = f"{at:%Y-%m-%d}" if at.date() != first_day else None  # after midnight: the heading names its day
        turns.append(Turn(hhmm=f"{at:%H:%M}", role=e.role, kind=e.kind, lines=tuple(body), day=day))
    text = format_transcript(meta, title, turns)
    return text.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate (a cut \\ud83d pair) as ?
