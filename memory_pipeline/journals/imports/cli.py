"""`memory-pipeline transcripts import PATH…`: agents' session files → transcripts → the journals of their days.

The transcripts are written by `importer` (no Dagster); then, as `reconstruct` does, the affected days are one
`journal_daily` run per run of consecutive days and the weeks they touch one `journal_weekly` run — the jobs the
schedules launch, recorded in the workspace's Dagster instance and visible in the UI.
"""

from __future__ import annotations

import argparse
import sys
from datetime import date, datetime, timedelta
from pathlib import Path

from memory_pipeline.journals.imports.importer import FORMATS, ImportReport, Options, commit_imported, import_paths
from memory_pipeline.journals.imports.model import TOOL_RESULT_CAP, SourceError, timestamp
from memory_pipeline.settings import workspace_home


def _date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected YYYY-MM-DD, got {value!r}") from None


def _started(value: str) -> datetime:
    ts = timestamp(value)
    if ts is None:
        raise argparse.ArgumentTypeError(f"expected an ISO-8601 time such as 2026-10-16T12:00:00Z, got {value!r}")
    return ts


def runs_of_days(days: list[date]) -> list[tuple[date, date]]:
    """Consecutive days as (first, last) ranges: one journal run each."""
    out: list[tuple[date, date]] = []
    for day in sorted(set(days)):
        if out and day - out[-1][1] == timedelta(days=1):
            out[-1] = (out[-1][0], day)
        else:
            out.append((day, day))
    return out


def summary(report: ImportReport) -> str:
    new = sum(1 for w in report.written if w.new)
    updated = len(report.written) - new
    line = f"{report.files} file(s): {new} new transcript(s), {updated} updated, {report.unchanged} unchanged"
    if report.before_since:
        line += f", {report.before_since} before --since"
    if report.errors:
        line += f"; {len(report.errors)} failed"
    return line + ("" if report.written else "; nothing written")


def cmd_import(args: argparse.Namespace) -> int:
    home = workspace_home()
    raw_root = home / "raw" / "conversations"
    options = Options(args.format, args.since, args.started, args.keep_thinking)
    try:
        report = import_paths(args.paths, raw_root, options)
    except SourceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for w in report.written:
        rel = w.path.relative_to(home)
        more = f", version {w.version}, +{w.added} turn(s)" if not w.new else ""
        print(f"{'new' if w.new else 'updated'} {rel} ({w.turns} turn(s){more})")
    for line in report.errors:
        print(f"error: {line}", file=sys.stderr)
    print(summary(report))
    failed = bool(report.errors)
    if report.written:
        failed |= _commit(home, report) or _journals(home, report.days, args)
    return 1 if failed else 0


def _commit(home: Path, report: ImportReport) -> bool:
    outcome = commit_imported(home, report)
    for note in outcome.notes:
        print(note, file=sys.stderr)
    if outcome.error:
        print(f"error: the transcripts are written but not committed: {outcome.error}", file=sys.stderr)
    return bool(outcome.error)


def _journals(home: Path, days: list[date], args: argparse.Namespace) -> bool:
    """Rebuild the journals of `days` through the journal jobs (one ranged run per run of consecutive days)."""
    spans = runs_of_days(days)
    shown = ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in spans)
    if args.no_journals:
        for start, end in spans:
            print(f"journals not rebuilt (--no-journals): memory-pipeline reconstruct --from {start} --to {end}")
        return False
    from memory_pipeline.journals.reconstruct import reconstruct
    from memory_pipeline.operator.instance import cli_instance, recover_dead_cli_runs

    print(f"rebuilding the journals of {shown}")
    failed = 0
    with cli_instance(home) as instance:
        recover_dead_cli_runs(instance, home)
        for start, end in spans:
            result = reconstruct(instance, start, end, multiprocess=not args.in_process)
            failed += len(result.failed) + len(result.rejected)
            for key in result.failed:
                print(f"failed: {key}: {result.errors.get(key, '')}", file=sys.stderr)
            for line in result.rejected:
                print(f"failed: transcript {line}", file=sys.stderr)
            for line in result.warnings:
                print(f"warning: {line}", file=sys.stderr)
    return failed > 0


def register(sub: argparse._SubParsersAction) -> None:
    tr = sub.add_parser("transcripts", help="agents' session files (Claude Code, Codex CLI, message logs) as "
                        "transcripts")  # fmt: skip
    commands = tr.add_subparsers(dest="transcripts_command", required=True, metavar="import")
    imp = commands.add_parser(
        "import",
        help="import session files or folders (recursive) as transcripts and rebuild the journals of their days",
        description="Each source session becomes one transcript under raw/conversations/; importing again writes "
        "nothing, a session file that grew updates its transcript as a new version. Tool results longer than "
        f"{TOOL_RESULT_CAP} characters are cut, noting their size; thinking is left out unless --keep-thinking.",
    )
    imp.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="a session file, or a folder of them")
    imp.add_argument("--format", choices=("auto", *FORMATS), default="auto",
                     help="the files' format (default: detected per file)")  # fmt: skip
    imp.add_argument("--since", type=_date, metavar="DATE", help="skip sessions that started before DATE (YYYY-MM-DD)")
    imp.add_argument("--started", type=_started, metavar="TIME",
                     help="messages: the session's start when the messages carry no timestamp (ISO-8601, UTC "
                     "unless it says otherwise)")  # fmt: skip
    imp.add_argument("--keep-thinking", action="store_true", help="keep thinking/reasoning as [thinking] turns")
    imp.add_argument("--no-journals", action="store_true", help="write the transcripts only")
    imp.add_argument("--in-process", action="store_true", help="run the journal steps in this process")
    imp.set_defaults(fn=cmd_import)
