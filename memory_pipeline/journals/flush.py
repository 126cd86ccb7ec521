"""Pre-compaction flush (seed 001 §6.4): turns about to drop out of an agent's context window are kept.

The turns become a transcript like any other — immutable, under `raw/conversations/` — and the day's journal
and the week's MEMORY.md are rebuilt from the transcripts by the journal pipeline, with the same extractors
(offline or Claude). So a flush is never a second, divergent path: a later `reconstruct` of that day gives the
same journal. Idempotent: the session id is a hash of the turns, so the same turns are the same file, and a
second flush of them writes nothing.

A flush is filed under the project of the session it flushes — the `project` (or `cwd`, its folder's name) the
caller gives — and marked `flush: true` in its frontmatter; it is not a project of its own. Without a project
it has none (grouped as `general`). Transcripts of earlier releases, tagged `pre-compaction-flush` and without a
project, still read, and are grouped as `general` too.

"Flushed before" means the whole flush completed: its record, `<home>/.flushes/<session id>.json`, is written
last — after the transcript, the journal run (store rows, journal, MEMORY.md) and their commit. A flush that
stopped before it (killed, a failing journal step, a commit that did not happen) left only the transcript, and
the same turns again finish what it began instead of saying "already flushed".
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.journals.transcript import Turn, escape_body, format_transcript, transcript_path
from memory_pipeline.redaction import redact_text

ROLES = ("user", "assistant", "system", "tool")
LEGACY_TAG = "pre-compaction-flush"  # what earlier releases tagged a flush with: not a project
SLUG = LEGACY_TAG  # the file name's slug, unchanged (so an earlier flush of the same turns is found)
DONE_DIR = ".flushes"  # under the workspace: one completion record per flushed session


class FlushInputError(UserError):
    """The turns are not a list of {role, content} objects; the message names the row and field."""


@dataclass(frozen=True)
class FlushTurn:
    role: str
    content: str


@dataclass(frozen=True)
class FlushOutcome:
    path: Path
    written: bool  # False: the same turns were flushed before
    session_id: str
    day: str


def parse_turns(data: Any, where: str = "turns") -> list[FlushTurn]:
    """`[{"role": "user", "content": "…"}, …]` (oldest first) → turns; one clear error naming the row."""
    if not isinstance(data, list) or not data:
        raise FlushInputError(f"{where}: expected a non-empty JSON list of {{role, content}} objects")
    out = []
    for i, raw in enumerate(data):
        if not isinstance(raw, dict):
            raise FlushInputError(f"{where}: row {i}: expected an object with 'role' and 'content'")
        role, content = raw.get("role"), raw.get("content")
        if role not in ROLES:
            raise FlushInputError(f"{where}: row {i}: field 'role' must be one of {', '.join(ROLES)}, got {role!r}")
        if not isinstance(content, str) or not content.strip():
            raise FlushInputError(f"{where}: row {i}: field 'content' must be a non-empty string")
        out.append(FlushTurn(role, content.strip()))
    return out


def project_of(data: Any, where: str = "turns") -> str | None:
    """The project a flush request names: `{"project": "payments-api"}`, else `{"cwd": "/src/payments-api"}`
    (the folder's name, as an imported session's project is), else None."""
    if not isinstance(data, dict):
        return None
    for field in ("project", "cwd"):
        value = data.get(field)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise FlushInputError(f"{where}: field '{field}' must be a non-empty string, got {value!r}")
        return value.strip() if field == "project" else (Path(value.strip()).name or None)
    return None


def load_turns(path: str) -> list[FlushTurn]:
    """From a JSON file, or standard input for `-`."""
    return load_flush(path)[0]


def load_flush(path: str) -> tuple[list[FlushTurn], str | None]:
    """The turns and the project (`project_of`) from a JSON file, or standard input for `-`."""
    import sys

    where = "stdin" if path == "-" else path
    if path == "-" and (sys.stdin is None or sys.stdin.closed):  # `flush - <&-`: Python has no stdin at all
        raise FlushInputError("stdin is closed: pipe the turns in (… | memory-pipeline flush -) or give a FILE")
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: stdin closed while being read
        raise FlushInputError(f"{where}: cannot read: {exc.__class__.__name__}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FlushInputError(f"{where}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    project = project_of(data, where)
    if isinstance(data, dict) and "turns" in data:
        data = data["turns"]
    return parse_turns(data, where), project


def session_id_of(turns: Sequence[FlushTurn]) -> str:
    """A hash of the turns' roles and texts: the same turns always map to the same transcript."""
    digest = hashlib.sha256(json.dumps([[t.role, t.content] for t in turns]).encode("utf-8")).hexdigest()
    return f"flush_{digest[:16]}"


def existing(raw_root: Path, session_id: str) -> Path | None:
    """An earlier flush of the same turns, whatever day it landed on."""
    return next(iter(sorted(raw_root.glob(f"*/*/*/*-{session_id}-{SLUG}.md"))), None) if raw_root.is_dir() else None


def _speaker(role: str) -> str:
    """The transcript's name for a turn's speaker: the assistant's turns are the agent's (transcripts say
    `agent`; a role the extractors do not know as a speaker is quoted in what they extract: `assistant: …`)."""
    return "agent" if role == "assistant" else role


def write_flush(
    raw_root: Path, turns: Sequence[FlushTurn], now: datetime | None = None, project: str | None = None
) -> FlushOutcome:
    """The turns as an immutable transcript dated `now` (temp file + rename), filed under `project`; nothing when
    already flushed (the same turns, whatever project was given)."""
    sid = session_id_of(turns)
    found = existing(raw_root, sid)
    if found is not None:
        return FlushOutcome(found, False, sid, "-".join(found.relative_to(raw_root).parts[:3]))
    when = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None, second=0, microsecond=0)
    meta = {
        "session_id": sid,
        "started": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "ended": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "channel": "flush",
        "participants": sorted({_speaker(t.role) for t in turns}),
        **({"project": project} if project else {}),
        "flush": True,
    }
    body = [Turn(hhmm=f"{when:%H:%M}", role=_speaker(t.role), lines=tuple(escape_body(redact_text(t.content))))
            for t in turns]  # a secret never reaches the transcript (MEMORY_PIPELINE_SECRETS)
    text = format_transcript(meta, "Turns flushed before a context compaction", body)
    path = transcript_path(raw_root, when, sid, SLUG)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return FlushOutcome(path, True, sid, f"{when:%Y-%m-%d}")


def done_path(home: Path, session_id: str) -> Path:
    return Path(home) / DONE_DIR / f"{session_id}.json"


def is_done(home: Path, session_id: str) -> bool:
    """True once the flush of `session_id` completed (its record exists); a transcript alone is not enough."""
    return done_path(home, session_id).is_file()


def mark_done(home: Path, outcome: FlushOutcome, journal: str) -> Path:
    """The completion record, written last (temp file + fsync + rename): from now on these turns are flushed."""
    path = done_path(home, outcome.session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"session_id": outcome.session_id, "day": outcome.day, "journal": journal,
              "transcript": outcome.path.relative_to(home).as_posix(),
              "completed": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}  # fmt: skip
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(record, indent=2) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)
    return path
