"""Source files → transcripts under `raw/conversations/`: detect, parse, write once, update when the source grew.

Idempotent: each session is rendered from its whole source file and compared with its transcript — the same text
writes nothing. Incremental: a session whose transcript exists (found by session id, whatever its day folder)
and whose source grew gets a new version of that transcript at the same path (frontmatter `version` + 1, title
and file name kept), after checking that every turn of the old version is still there (prose may only grow, tool
calls only gain their results); otherwise the file is reported and nothing is written. A file is planned whole
before anything of it is written, and each transcript is written atomically (temp file, fsync, rename), so a bad
file leaves nothing half-written and the other files still import.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from memory_pipeline.journals.commit_messages import KnowledgeChange, template
from memory_pipeline.journals.gitlog import CommitOutcome, commit_knowledge
from memory_pipeline.journals.imports import claude_code, codex, messages
from memory_pipeline.journals.imports.lines import BOM, TOO_DEEP, ReadStats, SourceError, jsonl_records
from memory_pipeline.journals.imports.model import IMPORTER, SourceSession, render
from memory_pipeline.journals.transcript import (
    FILENAME,
    Transcript,
    TranscriptError,
    parse_transcript,
    slugify,
    transcript_path,
)
from memory_pipeline.redaction import redact_text

FORMATS = ("claude-code", "codex", "messages")
SUFFIXES = (".jsonl", ".json")
DETECT_LINES = 50  # JSONL lines looked at to recognise a format (bookkeeping lines may come first)


@dataclass(frozen=True)
class Options:
    format: str = "auto"  # auto | claude-code | codex | messages
    since: date | None = None  # sessions that started before this day are skipped
    started: datetime | None = None  # messages: the session's start when the messages carry no timestamp
    keep_thinking: bool = False


@dataclass(frozen=True)
class Written:
    path: Path
    session_id: str
    day: date  # the transcript's day folder: the journal partition it feeds
    version: int
    turns: int
    added: int  # turns more than the previous version (all of them for a new transcript)

    @property
    def new(self) -> bool:
        return self.version == 1


@dataclass
class ImportReport:
    files: int = 0
    written: list[Written] = field(default_factory=list)
    unchanged: int = 0  # sessions whose transcript already says the same
    before_since: int = 0
    errors: list[str] = field(default_factory=list)  # one line each, naming the file (and line)
    notes: list[str] = field(default_factory=list)  # one line each: an unfinished last line left for later
    skipped: Counter[str] = field(default_factory=Counter)  # unknown event types left out, over all files
    no_session: int = 0  # files of a known format with no message in them (e.g. only summary lines)
    empty: int = 0  # files with nothing in them (0 bytes, or blank lines only)
    warnings: list[str] = field(default_factory=list)  # one line each: imported, but something looks wrong
    done: list[Path] = field(default_factory=list)  # files read (imported, unchanged or refused), in order

    @property
    def days(self) -> list[date]:
        return sorted({w.day for w in self.written})


def source_files(paths: Iterable[Path]) -> tuple[list[Path], list[str]]:
    """Files named, and every *.jsonl / *.json under folders named (recursively, sorted); missing paths as errors."""
    files: list[Path] = []
    errors: list[str] = []
    for p in paths:
        if p.is_file():
            files.append(p)
        elif p.is_dir():
            files += sorted(f for f in p.rglob("*") if f.suffix.lower() in SUFFIXES and f.is_file())
        elif p.exists():  # a named pipe, a device, a socket: never opened (reading a pipe would wait for a writer)
            errors.append(f"{p}: not a regular file or folder ({_kind(p)}); not imported")
        else:
            errors.append(f"{p}: no such file or folder")
    return list(dict.fromkeys(files)), errors


def _kind(path: Path) -> str:
    mode = path.stat().st_mode
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file"


def is_blank(path: Path) -> bool:
    """Nothing in the file: 0 bytes, or only a byte-order mark and white space (a file just created)."""
    size = path.stat().st_size
    if size > 4096:
        return False
    return not path.read_bytes().removeprefix(BOM).strip()


def detect(path: Path) -> str:
    """The format of one file, from its first records; a `SourceError` naming the file when none fits."""
    if path.suffix.lower() == ".json":
        return "messages"  # one JSON value: the message log's reader says so when it is not a message list
    records = jsonl_records(path)
    for seen, (_number, record) in enumerate(records):
        if codex.looks_like(record) or (seen == 0 and codex.looks_like_first_release(record)):
            return "codex"
        if claude_code.looks_like(record):
            return "claude-code"
        if messages.looks_like(record):
            return "messages"
        if seen >= DETECT_LINES:
            break
    records.close()
    raise SourceError(f"{path}: unknown format (not a Claude Code session, a Codex rollout or a message log); "
                      "give --format claude-code|codex|messages")  # fmt: skip


def parse_file(path: Path, options: Options, stats: ReadStats) -> list[SourceSession]:
    fmt = detect(path) if options.format == "auto" else options.format
    if fmt == "claude-code":
        return claude_code.parse(path, stats)
    if fmt == "codex":
        return codex.parse(path, stats)
    if fmt == "messages":
        return messages.parse(path, options.started, stats)
    raise SourceError(f"unknown --format {fmt!r}: use auto, {', '.join(FORMATS)}")


def transcript_index(raw_root: Path) -> dict[str, Path]:
    """session id → transcript path, over every day folder (the first by path wins, as the intake decides)."""
    index: dict[str, Path] = {}
    if raw_root.is_dir():
        for p in sorted(raw_root.glob("*/*/*/*.md")):
            if m := FILENAME.match(p.name):
                index.setdefault(m.group("session_id"), p)
    return index


def _naive_utc(ts: datetime) -> datetime:
    return ts.astimezone(UTC).replace(tzinfo=None)


def _tools_kept(old: Transcript, new: Transcript, i: int) -> bool:
    a_tools, b_tools = old.turns[i].tools, new.turns[i].tools
    if len(b_tools) < len(a_tools):
        return False
    return all((a.tool, a.summary) == (b.tool, b.summary) and a.result in (None, b.result)
               for a, b in zip(a_tools, b_tools, strict=False))  # fmt: skip


def nothing_lost(old: Transcript, new: Transcript) -> int | None:
    """The first turn (1-based) of `old` that `new` loses or rewrites, or None when `new` only adds."""
    for i, ot in enumerate(old.turns):
        nt = new.turns[i] if i < len(new.turns) else None
        if nt is None or (nt.hhmm, nt.role, nt.kind) != (ot.hhmm, ot.role, ot.kind) or not nt.text.startswith(ot.text):
            return i + 1
        if not _tools_kept(old, new, i):
            return i + 1
    return None


def remapped(old: Transcript, new: Transcript) -> bool:
    """An older importer's transcript read again by this one: its turns may be mapped anew (a user line now a
    marked system turn, a tool result now fuller), but every one is still there at its time, so the source did
    not shrink or change."""
    written_by = old.frontmatter.get("importer")
    if isinstance(written_by, int) and not isinstance(written_by, bool) and written_by >= IMPORTER:
        return False
    return len(new.turns) >= len(old.turns) and all(a.at == b.at for a, b in zip(old.turns, new.turns, strict=False))


@dataclass(frozen=True)
class _Plan:
    path: Path
    text: str
    written: Written


MAX_ID = 100  # characters of a stored session id: a longer one is cut and keeps a hash (file names stay short)
FUTURE = timedelta(days=1)  # a session starting later than this from now is imported with a warning


def fit_id(session_id: str) -> str:
    """`session_id` short enough for a file name: a longer one cut, with a hash of the whole so it stays unique."""
    if len(session_id) <= MAX_ID:
        return session_id
    return f"{session_id[: MAX_ID - 17]}_{hashlib.sha256(session_id.encode()).hexdigest()[:16]}"


def _read_old(existing: Path, session: SourceSession) -> tuple[str, Transcript]:
    try:
        old_text = existing.read_text(encoding="utf-8")
        return old_text, parse_transcript(old_text, existing)
    except (OSError, UnicodeDecodeError, TranscriptError) as exc:
        raise SourceError(f"{session.path}: its session's transcript {existing} cannot be read: {exc}") from None


def _other_source(old: Transcript, session: SourceSession) -> bool:
    """The stored transcript with this id is another source session's: their ids differ only in the characters
    a transcript's id cannot hold ("abc" and "a/b/c")."""
    source = old.frontmatter.get("source_session")
    return source is not None and str(source) != session.source_id and old.frontmatter.get("channel") == session.channel


def plan_session(
    session: SourceSession, raw_root: Path, index: Mapping[str, Path], keep_thinking: bool,
    taken: AbstractSet[str] = frozenset(),
) -> _Plan | None:  # fmt: skip
    """What to write for one session (None: its transcript already says this, or more); `SourceError` when it
    cannot be. A session whose id the transcripts already use for another source session — or another session
    of the same file does (`taken`) — gets the id with a short hash of its own source id."""
    session.session_id = fit_id(session.session_id)
    redact_session(session)
    if isinstance(session.extra.get("parent_session"), str):
        session.extra["parent_session"] = fit_id(session.extra["parent_session"])
    existing = index.get(session.session_id)
    old_text, old = _read_old(existing, session) if existing is not None else ("", None)
    if session.session_id in taken or (old is not None and _other_source(old, session)):
        digest = hashlib.sha256(session.source_id.encode()).hexdigest()[:10]
        session.session_id = fit_id(f"{session.session_id[: MAX_ID - 11]}_{digest}")
        existing = index.get(session.session_id)
        old_text, old = _read_old(existing, session) if existing is not None else ("", None)
    if old is None or existing is None:
        text = render(session, session.title, 1, keep_thinking)
        started = datetime.fromisoformat(str(parse_transcript(text).frontmatter["started"]).replace("Z", "+00:00"))
        path = transcript_path(raw_root, _naive_utc(started), session.session_id, slugify(session.title))
        parsed = _parsed(text, path, session)
        return _Plan(path, text, Written(path, session.session_id, started.date(), 1, len(parsed.turns),
                                         len(parsed.turns)))  # fmt: skip
    version = old.frontmatter.get("version")
    version = version if isinstance(version, int) and not isinstance(version, bool) and version > 0 else 1
    if (text := render(session, old.title, version, keep_thinking)) == old_text:
        return None
    new = _parsed(text, existing, session)
    if (lost := nothing_lost(old, new)) is not None and not remapped(old, new):
        if nothing_lost(new, old) is None:  # this file holds an earlier part of the session: nothing to add
            return None
        raise SourceError(
            f"{session.path}: session {session.source_id} changed other than by growing: turn {lost} of {existing} "
            "would be lost or rewritten (a different --keep-thinking, or an edited source?); not updated"
        )
    text = render(session, old.title, version + 1, keep_thinking)
    day = date(*(int(part) for part in existing.relative_to(raw_root).parts[:3]))
    return _Plan(existing, text, Written(existing, session.session_id, day, version + 1, len(new.turns),
                                         len(new.turns) - len(old.turns)))  # fmt: skip


def redact_session(session: SourceSession) -> None:
    """Each secret in the session's prose, tool names, inputs and results, title and frontmatter replaced by a
    marker of its kind (`memory_pipeline.redaction`, MEMORY_PIPELINE_SECRETS) before anything is written: the
    original reaches no transcript, Parquet table or commit."""
    session.title = redact_text(session.title)
    # frontmatter from the source: a git remote can carry a token (https://oauth2:…@gitlab.com/…)
    session.extra = {k: redact_text(v) if isinstance(v, str) else v for k, v in session.extra.items()}
    for entry in session.entries:
        entry.text = redact_text(entry.text)
        for tool in entry.tools:
            tool.name = redact_text(tool.name)
            tool.input = redact_text(tool.input)
            tool.result = redact_text(tool.result) if tool.result is not None else None


def _parsed(text: str, path: Path, session: SourceSession) -> Transcript:
    try:
        return parse_transcript(text, path)
    except TranscriptError as exc:  # the importer wrote something the format rejects: say which session
        raise SourceError(f"{session.path}: session {session.source_id} does not make a valid transcript: "
                          f"{exc.problem}") from None  # fmt: skip


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def import_file(path: Path, raw_root: Path, index: dict[str, Path], options: Options, report: ImportReport) -> None:
    """One source file: every session planned first, then each transcript written; a problem is one error line
    naming the file, and the other files go on whatever it was."""
    try:
        _import_file(path, raw_root, index, options, report)
    except SourceError as exc:
        report.errors.append(f"{exc}; file not imported")
    except UnicodeDecodeError as exc:
        report.errors.append(f"{path}: not UTF-8 (byte {exc.start + 1} of the file); file not imported")
    except RecursionError:
        report.errors.append(f"{path}: {TOO_DEEP}; file not imported")
    except OSError as exc:
        report.errors.append(f"{path}: cannot be read: {exc.strerror or exc}; file not imported")
    except Exception as exc:  # noqa: BLE001 - a file this version cannot read must not stop the folder
        report.errors.append(f"{path}: cannot be imported ({type(exc).__name__}: {exc}); file not imported")


def _import_file(path: Path, raw_root: Path, index: dict[str, Path], options: Options, report: ImportReport) -> None:
    if is_blank(path):
        report.empty += 1
        report.warnings.append(f"{path}: the file is empty; nothing to import")
        return
    stats = ReadStats()
    sessions = parse_file(path, options, stats)
    plans: list[_Plan] = []
    future: list[SourceSession] = []
    soon = datetime.now(UTC) + FUTURE
    for session in sessions:
        if options.since is not None and session.started.astimezone(UTC).date() < options.since:
            report.before_since += 1
            continue
        plan = plan_session(session, raw_root, index, options.keep_thinking, {p.written.session_id for p in plans})
        if plan is None:
            report.unchanged += 1
        else:
            plans.append(plan)
            future += [session] if session.started > soon else []
    report.skipped.update(stats.skipped)
    if stats.unfinished is not None:
        report.notes.append(
            f"{path}:{stats.unfinished}: the last line is unfinished (a session still being written):"
            f" imported the {stats.unfinished - 1} line(s) before it; the rest on the next import"
        )
    if not sessions:
        report.no_session += 1
    for session in future:
        report.warnings.append(f"{path}: session {session.source_id} starts {session.started:%Y-%m-%d %H:%M} "
                               "UTC, in the future (a wrong clock or time zone in the source?); imported on that "
                               "day, whose journal waits until then")  # fmt: skip
    for done, plan in enumerate(plans):
        try:
            write_atomically(plan.path, plan.text)
        except OSError as exc:  # each transcript is whole or absent; the ones before it stay written
            report.errors.append(f"{path}: its transcript {plan.path.name} cannot be written "
                                 f"({exc.strerror or exc}); {done} of its {len(plans)} transcript(s) written")
            return
        index[plan.written.session_id] = plan.path
        report.written.append(plan.written)


def import_paths(
    paths: Sequence[Path], raw_root: Path, options: Options | None = None,
    progress: Callable[[int, int], object] | None = None, stop: Callable[[], bool] | None = None,
) -> ImportReport:  # fmt: skip
    """Import every source file under `paths` into `raw_root` (a workspace's `raw/conversations`), one file at a
    time (memory holds one file's sessions); `progress(done, total)` after each file; when `stop()` says so, the
    files not begun yet are left (`report.done` lists those read)."""
    options = options or Options()
    if options.format != "auto" and options.format not in FORMATS:
        raise SourceError(f"unknown --format {options.format!r}: use auto, {', '.join(FORMATS)}")
    files, errors = source_files(paths)
    report = ImportReport(files=len(files), errors=errors)
    index = transcript_index(raw_root)
    for done, f in enumerate(files, 1):
        if stop is not None and stop():
            break
        import_file(f, raw_root, index, options, report)
        report.done.append(f)
        if progress is not None:
            progress(done, len(files))
    return report


def commit_imported(home: Path, report: ImportReport) -> CommitOutcome:
    """The new and updated transcripts as one `conversation:` commit when git is on (so every version is kept)."""
    files = tuple(sorted(w.path.relative_to(home).as_posix() for w in report.written))
    new = sum(1 for w in report.written if w.new)
    change = KnowledgeChange("conversation", f"import {new} new, {len(files) - new} updated transcript(s)",
                             files=files, sessions=tuple(sorted({w.session_id for w in report.written})))  # fmt: skip
    return commit_knowledge(home, template(change), tag=None, paths=files)
