"""Conversation transcripts (seed 001 §2.1): parse every field, write the canonical form, reject with path:line.

A transcript is immutable input: nothing here writes to `raw/`. `format_transcript(parse_transcript(x)) == x`
for every transcript written by `format_transcript` (the generator's and the LoCoMo importer's), so the parser
provably keeps every field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from memory_pipeline.store.workspace_files import NotRegularFile, read_regular_text

ROLES = ("user", "agent", "system")
FILENAME = re.compile(r"^(?P<hhmm>\d{4})-(?P<session_id>[A-Za-z0-9_]+)-(?P<slug>[a-z0-9][a-z0-9-]*)\.md$")
_HEADING = re.compile(
    r"^## (?:(?P<date>\d{4}-\d{2}-\d{2}) )?(?P<hh>\d{2}):(?P<mm>\d{2}) — "
    r"(?P<role>[^\[\]]+?)(?: \[(?P<kind>[a-z_]+)\])?$"
)
_TOOL = re.compile(r"^> \[tool:(?P<name>[A-Za-z0-9_.\-]+)\](?: (?P<rest>.*))?$")
_KNOWLEDGE = re.compile(r"^> \[knowledge:(?P<action>[a-z_]+)\] (?P<path>\S+)(?: — (?P<summary>.*))?$")
_ATTACHMENT = re.compile(r"^> \[attachment:(?P<path>[^\]\s]+)\](?: (?P<caption>.*))?$")
_REF = re.compile(r"^<!-- dia_id: (?P<ref>\S+) -->$")
_MARKERS = ("> [tool:", "> [knowledge:", "> [attachment:")


class TranscriptError(ValueError):
    """A transcript breaks the format; the message is `path:line: problem`."""

    def __init__(self, path: str, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


class _KeepStringsLoader(yaml.SafeLoader):
    """SafeLoader that leaves timestamps as the strings written (so the frontmatter round-trips)."""


_KeepStringsLoader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True)
class ToolCall:
    tool: str
    summary: str
    result: str | None


@dataclass(frozen=True)
class KnowledgeOp:
    action: str
    path: str
    summary: str | None


@dataclass(frozen=True)
class Attachment:
    path: str
    caption: str | None


@dataclass(frozen=True)
class Turn:
    """One `## HH:MM — role` block (`## YYYY-MM-DD HH:MM — role` on a later day than the session's start, so a
    reader of a session that ran past midnight sees the day). `lines` are the body verbatim; the rest is derived
    from them."""

    hhmm: str
    role: str
    lines: tuple[str, ...]
    kind: str | None = None  # `[memory]` → "memory"
    day: str | None = None  # YYYY-MM-DD when the heading names its day (a turn after the start day)
    at: datetime | None = None  # naive UTC, from the session's start date and offset
    line: int = 0
    text: str = ""
    tools: tuple[ToolCall, ...] = ()
    knowledge: tuple[KnowledgeOp, ...] = ()
    attachments: tuple[Attachment, ...] = ()
    ref: str | None = None  # e.g. a LoCoMo dia_id

    @property
    def memory(self) -> bool:
        return self.kind == "memory"


@dataclass(frozen=True)
class Transcript:
    path: str
    session_id: str
    started: datetime  # naive UTC
    ended: datetime  # naive UTC: `ended`, else the last turn
    title: str
    slug: str
    frontmatter: dict[str, Any]
    turns: tuple[Turn, ...]
    participants: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    salience: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The turns' prose, one `role: text` line block per turn (markers and comments left out)."""
        return "\n".join(f"{t.role}: {t.text}" for t in self.turns if t.text)


def _timestamp(value: Any, path: str, line: int, name: str) -> datetime:
    text = str(value).strip() if value is not None else ""
    try:
        ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise TranscriptError(path, line, f"frontmatter field '{name}': not an ISO-8601 timestamp: {value!r}") from None
    return ts


def _naive_utc(ts: datetime) -> datetime:
    return ts.astimezone(UTC).replace(tzinfo=None) if ts.tzinfo is not None else ts


def _string_list(value: Any, path: str, line: int, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str | int | float) for v in value):
        raise TranscriptError(path, line, f"frontmatter field '{name}': expected a list of strings, got {value!r}")
    return tuple(str(v) for v in value)


def _parse_body(lines: Sequence[str], path: str, first_line: int) -> dict[str, Any]:
    tools: list[ToolCall] = []
    knowledge: list[KnowledgeOp] = []
    attachments: list[Attachment] = []
    prose: list[str] = []
    ref = None
    for offset, raw in enumerate(lines):
        number = first_line + offset
        if raw.startswith(_MARKERS):
            if m := _TOOL.match(raw):
                summary, _, result = (m.group("rest") or "").partition(" → ")
                tools.append(ToolCall(m.group("name"), summary.strip(), result.strip() or None))
            elif m := _KNOWLEDGE.match(raw):
                knowledge.append(KnowledgeOp(m.group("action"), m.group("path"), m.group("summary")))
            elif m := _ATTACHMENT.match(raw):
                attachments.append(Attachment(m.group("path"), m.group("caption")))
            else:
                kind = raw[3 : raw.index(":")]
                raise TranscriptError(path, number, f"malformed [{kind}:…] line: {raw!r}")
        elif m := _REF.match(raw):
            ref = m.group("ref")
        else:
            prose.append(raw)
    text = "\n".join(prose).strip()
    return {
        "text": text,
        "tools": tuple(tools),
        "knowledge": tuple(knowledge),
        "attachments": tuple(attachments),
        "ref": ref,
    }


def parse_transcript(text: str, path: str | Path = "<transcript>") -> Transcript:
    """Parse one transcript; raises TranscriptError naming the path and line of the first problem."""
    where = str(path)
    lines = text.split("\n")
    if not lines or lines[0] != "---":
        raise TranscriptError(where, 1, "missing YAML frontmatter (first line must be '---')")
    try:
        close = lines.index("---", 1)
    except ValueError:
        raise TranscriptError(where, 1, "frontmatter is never closed by a '---' line") from None
    try:
        meta = yaml.load("\n".join(lines[1:close]), Loader=_KeepStringsLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = (mark.line + 2) if mark is not None else 2
        raise TranscriptError(where, line, f"invalid YAML frontmatter: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(meta, dict):
        raise TranscriptError(where, 2, "frontmatter must be a mapping of fields")
    fm_line = {str(k): i + 2 for i, raw in enumerate(lines[1:close]) for k in [raw.split(":", 1)[0]] if raw[:1] != " "}
    for required in ("session_id", "started"):
        if meta.get(required) in (None, ""):
            raise TranscriptError(where, 2, f"frontmatter field '{required}' is required")
    session_id = str(meta["session_id"])
    started = _timestamp(meta["started"], where, fm_line.get("started", 2), "started")
    ended = _timestamp(meta["ended"], where, fm_line.get("ended", 2), "ended") if meta.get("ended") else None
    if ended is not None and _naive_utc(ended) < _naive_utc(started):
        raise TranscriptError(where, fm_line.get("ended", 2), f"'ended' {meta['ended']} is before 'started'")
    name = Path(where).name
    slug = ""
    if m := FILENAME.match(name):
        slug = m.group("slug")
        if m.group("session_id") != session_id:
            raise TranscriptError(
                where, fm_line.get("session_id", 2), f"session_id {session_id!r} differs from the file name's"
            )
    participants = _string_list(meta.get("participants"), where, fm_line.get("participants", 2), "participants")
    tags = _string_list(meta.get("tags"), where, fm_line.get("tags", 2), "tags")
    salience = meta.get("salience")
    if salience is not None and (isinstance(salience, bool) or not isinstance(salience, int | float)):
        raise TranscriptError(where, fm_line.get("salience", 2), f"'salience' must be a number, got {salience!r}")
    roles = set(ROLES) | set(participants)

    title = ""
    index = close + 1
    headings = [i for i in range(index, len(lines)) if lines[i].startswith("## ")]
    preamble_end = headings[0] if headings else len(lines)
    for i in range(index, preamble_end):
        raw = lines[i]
        if raw.startswith("# ") and not title:
            title = raw[2:].strip()
        elif raw.strip():
            raise TranscriptError(where, i + 1, f"text before the first turn: {raw!r}")
    if not headings:
        raise TranscriptError(where, len(lines), "no turns (expected '## HH:MM — role' headings)")

    tz = started.tzinfo
    day = started.date()
    previous = started.hour * 60 + started.minute
    turns: list[Turn] = []
    for n, start in enumerate(headings):
        heading = lines[start]
        m = _HEADING.match(heading)
        if not m:
            raise TranscriptError(where, start + 1, f"bad turn heading (expected '## HH:MM — role'): {heading!r}")
        hh, mm, role = int(m.group("hh")), int(m.group("mm")), m.group("role")
        if hh > 23 or mm > 59:
            raise TranscriptError(where, start + 1, f"bad time {m.group('hh')}:{m.group('mm')} in turn heading")
        if role not in roles:
            raise TranscriptError(
                where, start + 1, f"unknown role {role!r} (expected user, agent, system or a listed participant)"
            )
        minute = hh * 60 + mm
        if m.group("date"):  # a turn on a later day names it: a session over more than a day reads right
            try:
                dated = date.fromisoformat(m.group("date"))
            except ValueError:
                raise TranscriptError(where, start + 1, f"bad date {m.group('date')} in turn heading") from None
            if dated < started.date():
                raise TranscriptError(where, start + 1, f"turn dated {dated}, before the session's start")
            day = dated
        elif minute < previous:
            day += timedelta(days=1)  # the session ran past midnight (a transcript whose headings carry no date)
        previous = minute
        at = _naive_utc(datetime(day.year, day.month, day.day, hh, mm, tzinfo=tz))
        stop = headings[n + 1] if n + 1 < len(headings) else len(lines)
        body = list(lines[start + 1 : stop])
        while body and not body[-1].strip():
            body.pop()
        turns.append(
            Turn(
                hhmm=f"{hh:02d}:{mm:02d}",
                role=role,
                kind=m.group("kind"),
                lines=tuple(body),
                day=m.group("date"),
                at=at,
                line=start + 1,
                **_parse_body(body, where, start + 2),
            )
        )
    if not participants:
        participants = tuple(dict.fromkeys(t.role for t in turns if t.role != "system"))
    last = turns[-1].at or _naive_utc(started)
    return Transcript(
        path=where,
        session_id=session_id,
        started=_naive_utc(started),
        ended=_naive_utc(ended) if ended is not None else max(last, _naive_utc(started)),
        title=title or str(meta.get("topic") or slug or session_id),
        slug=slug,
        frontmatter=meta,
        turns=tuple(turns),
        participants=participants,
        tags=tags,
        salience=float(salience) if salience is not None else None,
    )


class _SeedDumper(yaml.SafeDumper):
    """Writes YAML like the seed's example: timestamps unquoted, scalar lists in flow style, indented lists."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:  # noqa: ARG002
        super().increase_indent(flow, False)


_SeedDumper.yaml_implicit_resolvers = _KeepStringsLoader.yaml_implicit_resolvers


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = all(not isinstance(v, dict | list) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_SeedDumper.add_representer(list, _represent_list)


def dump_frontmatter(meta: Mapping[str, Any]) -> str:
    """YAML the way the seed writes it: fields in order, no wrapping."""
    return yaml.dump(
        dict(meta), Dumper=_SeedDumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=10_000
    )


def format_transcript(meta: Mapping[str, Any], title: str, turns: Sequence[Turn]) -> str:
    """The canonical text: frontmatter, `# title`, then each turn's heading and body separated by a blank line."""
    parts = ["---\n", dump_frontmatter(meta), "---\n\n"]
    if title:
        parts.append(f"# {title}\n\n")
    blocks = []
    for t in turns:
        suffix = f" [{t.kind}]" if t.kind else ""
        when = f"{t.day} {t.hhmm}" if t.day else t.hhmm
        blocks.append("\n".join([f"## {when} — {t.role}{suffix}", *t.lines]) + "\n")
    parts.append("\n".join(blocks))
    return "".join(parts)


BODY_ESCAPE = ("#", ">", "<!--", "---")  # a body line starting so would read as markup: escaped with "\\"


def escape_body(text: str) -> list[str]:
    """A turn's prose as body lines that parse back as prose (headings, quotes, comments escaped)."""
    lines = (raw.rstrip() for raw in text.split("\n"))
    return ["\\" + line if line.lstrip().startswith(BODY_ESCAPE) else line for line in lines]


def render(transcript: Transcript) -> str:
    return format_transcript(transcript.frontmatter, transcript.title, transcript.turns)


def transcript_path(raw_root: Path, started: datetime, session_id: str, slug: str) -> Path:
    """`raw/conversations/YYYY/MM/DD/HHMM-<session_id>-<slug>.md` (DESIGN §3) under `raw_root`."""
    if not FILENAME.match(f"{started:%H%M}-{session_id}-{slug}.md"):
        raise ValueError(f"session id {session_id!r} or slug {slug!r} cannot form a transcript file name")
    return raw_root / f"{started:%Y/%m/%d}" / f"{started:%H%M}-{session_id}-{slug}.md"


def slugify(text: str, limit: int = 48) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if len(slug) > limit:
        cut = slug[: limit + 1]
        slug = cut[: cut.rfind("-")] if "-" in cut else slug[:limit]
    return slug.strip("-") or "session"


def day_folder(raw_root: Path, day: date) -> Path:
    return raw_root / f"{day:%Y/%m/%d}"


def first_day(raw_root: Path) -> date | None:
    """The earliest YYYY/MM/DD folder under `raw_root` that holds a transcript (`*.md`), or None."""

    def numbered(folder: Path, width: int) -> list[Path]:
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir() if p.is_dir() and len(p.name) == width and p.name.isdigit())

    for year in numbered(raw_root, 4):
        for month in numbered(year, 2):
            for day in numbered(month, 2):
                if any(day.glob("*.md")):
                    try:
                        return date(int(year.name), int(month.name), int(day.name))
                    except ValueError:
                        continue
    return None


@dataclass(frozen=True)
class Rejected:
    path: str
    line: int
    problem: str


def read_day(raw_root: Path, day: date, workspace: Path | None = None) -> tuple[list[Transcript], list[Rejected]]:
    """Every transcript in the day's folder, sorted by file name; a broken one is reported, not fatal.
    Paths are relative to `workspace` when given (the `sessions.path` column)."""
    folder = day_folder(raw_root, day)
    parsed: list[Transcript] = []
    rejected: list[Rejected] = []
    if not folder.is_dir():
        return parsed, rejected
    for file in sorted(folder.glob("*.md")):
        shown = str(file.relative_to(workspace)) if workspace is not None else str(file)
        try:
            text = read_regular_text(file, root=workspace or raw_root, errors="strict")
            parsed.append(parse_transcript(text, shown))
        except TranscriptError as exc:
            rejected.append(Rejected(exc.path, exc.line, exc.problem))
        except NotRegularFile as exc:  # a named pipe; a symlink out of the workspace (to /etc/passwd)
            rejected.append(Rejected(shown, 1, f"{exc.problem}: not read"))
        except UnicodeDecodeError as exc:
            rejected.append(Rejected(shown, 1, f"not UTF-8: {exc}"))
    seen: dict[str, str] = {}
    unique: list[Transcript] = []
    for t in parsed:
        if t.session_id in seen:
            rejected.append(Rejected(t.path, 2, f"session_id {t.session_id!r} already used by {seen[t.session_id]}"))
            continue
        seen[t.session_id] = t.path
        unique.append(t)
    return unique, rejected
