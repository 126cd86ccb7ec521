"""`memory-pipeline transcripts import PATH…`: agents' session files → transcripts → the journals of their days.

The transcripts are written by `importer` (no Dagster); then, as `reconstruct` does, the affected days are one
`journal_daily` run per run of consecutive days and the weeks they touch one `journal_weekly` run — the jobs the
schedules launch, recorded in the workspace's Dagster instance and visible in the UI. The affected days are the
days written and every day whose journal is older than its transcripts (`defs.journals.freshness`), so what a
killed or `--no-journals` import left is made up; a week whose MEMORY.md is older than its journals is rolled up.

`--watch` is the `agent_transcripts_sensor` for people who run no daemon: every `--interval` seconds the folders
are scanned (`watch.scan`), the session files that are new or grew and have been quiet for `--quiet-minutes` are
imported as above. Ctrl-C sets a flag instead of raising: the file being read is finished, the files not begun
and the journal rebuild are left (the `reconstruct` command is printed), and the command ends with one line.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path
from types import FrameType

from memory_pipeline.errors import UserError
from memory_pipeline.journals.imports.importer import FORMATS, ImportReport, Options, commit_imported, import_paths
from memory_pipeline.journals.imports.lines import SourceError
from memory_pipeline.journals.imports.model import TOOL_RESULT_CAP, timestamp
from memory_pipeline.journals.imports.watch import (
    QUIET_ENV,
    SOURCES_ENV,
    configured_sources,
    quiet_minutes,
    remember,
    scan,
)
from memory_pipeline.settings import workspace_home

PROGRESS_FROM = 20  # files: fewer import too fast to need a progress line


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


def _minutes(value: str) -> float:
    try:
        minutes = float(value)
    except ValueError:
        minutes = -1.0
    if not minutes >= 0 or minutes == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of minutes ≥ 0, got {value!r}")
    return minutes


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0.1 <= seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds ≥ 0.1, got {value!r}")
    return seconds


def runs_of_days(days: list[date]) -> list[tuple[date, date]]:
    """Consecutive days as (first, last) ranges: one journal run each."""
    out: list[tuple[date, date]] = []
    for day in sorted(set(days)):
        if out and day - out[-1][1] == timedelta(days=1):
            out[-1] = (out[-1][0], day)
        else:
            out.append((day, day))
    return out


def bridged(spans: list[tuple[date, date]], has_transcripts: Callable[[date], bool]) -> list[tuple[date, date]]:
    """Ranges joined across gaps whose days hold no transcript: such a day costs a run nothing (no session, no
    journal), while each run more costs seconds. A gap day with transcripts keeps its ranges apart: rebuilding it
    would extract its sessions again (with Claude, at a price)."""
    out: list[tuple[date, date]] = []
    for start, end in spans:
        gap = [out[-1][1] + timedelta(days=i) for i in range(1, (start - out[-1][1]).days)] if out else []
        if out and not any(has_transcripts(d) for d in gap):
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def summary(report: ImportReport) -> str:
    new = sum(1 for w in report.written if w.new)
    updated = len(report.written) - new
    line = f"{report.files} file(s): {new} new transcript(s), {updated} updated, {report.unchanged} unchanged"
    if report.before_since:
        line += f", {report.before_since} before --since"
    if report.no_session:
        line += f", {report.no_session} without a session"
    if report.empty:
        line += f", {report.empty} empty"
    if report.notes:
        line += f", {len(report.notes)} with an unfinished last line"
    if report.skipped:
        top = ", ".join(f"{kind} ×{n}" for kind, n in report.skipped.most_common(3))
        more = ", …" if len(report.skipped) > 3 else ""
        line += f"; {report.skipped.total()} unknown event(s) skipped ({top}{more})"
    if report.errors:
        line += f"; {len(report.errors)} failed"
    return line + ("" if report.written else "; nothing written")


def progress_printer(stream: object = None) -> Callable[[int, int], None]:
    """`progress(done, total)` on stderr for PROGRESS_FROM files or more: a bar redrawn in place on a terminal
    (or MEMORY_PIPELINE_PROGRESS=bar), else an `importing i/n files` line every few seconds and at the end."""
    from memory_pipeline.operator.progress import ThrottledProgress, wants_bar

    err = sys.stderr
    if wants_bar(err):

        def bar(done: int, total: int) -> None:
            if total >= PROGRESS_FROM and (done == total or done % 25 == 0):
                filled = 24 * done // total
                err.write(f"\r\x1b[Kimporting [{'#' * filled}{'-' * (24 - filled)}] {done}/{total} files")
                err.write("\n" if done == total else "")
                err.flush()

        return bar
    throttled: list[ThrottledProgress] = []

    def log(done: int, total: int) -> None:
        if total < PROGRESS_FROM:
            return
        if not throttled:
            throttled.append(ThrottledProgress(lambda s: print(s, file=err, flush=True), "importing", total))
        throttled[0].update(done, "files")

    return log


BACKGROUND_LOG = Path("reports") / "background-imports.log"


def cmd_import(args: argparse.Namespace) -> int:
    home = workspace_home()
    options = Options(args.format, args.since, args.started, args.keep_thinking)
    if args.watch:
        return watch(args, home, options)
    if not args.paths:
        print(f"error: give a PATH to import (or --watch, which reads the folders in {SOURCES_ENV})", file=sys.stderr)
        return 2
    if args.background:
        return in_background(home, args)
    try:
        report = import_paths(args.paths, home / "raw" / "conversations", options, progress=progress_printer())
    except SourceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 1 if show_and_rebuild(home, report, args) else 0


def in_background(home: Path, args: argparse.Namespace) -> int:
    """Hand the import to a process of its own session and return at once: a host's hook has a time budget
    (Claude Code gives SessionEnd hooks 1.5 s) that a journal rebuild does not fit, and a hook cancelled midway
    left the day's journal for the next import to rebuild. The child's output is appended to BACKGROUND_LOG."""
    import os
    import subprocess
    from datetime import UTC, datetime

    missing = [p for p in args.paths if not p.exists()]
    if missing:  # said here, where the hook's output is read, not only in the log
        print(f"error: {missing[0]}: no such file or folder; nothing imported", file=sys.stderr)
        return 2
    argv = ["transcripts", "import", *(str(p.resolve()) for p in args.paths), "--format", args.format]
    argv += ["--since", args.since.isoformat()] if args.since else []
    argv += ["--started", args.started.isoformat()] if args.started else []
    argv += [flag for flag, on in (("--keep-thinking", args.keep_thinking), ("--no-journals", args.no_journals),
                                   ("--in-process", args.in_process)) if on]  # fmt: skip
    log = home / BACKGROUND_LOG
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as out:
        out.write(f"== {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC: memory-pipeline {' '.join(argv)}\n")
        out.flush()
        child = subprocess.Popen([sys.executable, "-m", "memory_pipeline.cli", *argv], stdin=subprocess.DEVNULL,
                                 stdout=out, stderr=out, start_new_session=True,
                                 env={**os.environ, "MEMORY_PIPELINE_HOME": str(home)})  # fmt: skip
    print(f"importing in the background (pid {child.pid}) into workspace {home}; its output: {BACKGROUND_LOG}")
    return 0


def show_and_rebuild(home: Path, report: ImportReport, args: argparse.Namespace, journals: bool = True) -> bool:
    """Print what was written, the errors and notes and the summary line; commit and rebuild the journals of the
    affected days (or print the `reconstruct` command when `journals` is off), then bring the search index up to
    date. True when something failed."""
    for w in report.written:
        rel = w.path.relative_to(home)
        more = f", version {w.version}, +{w.added} turn(s)" if not w.new else ""
        print(f"{'new' if w.new else 'updated'} {rel} ({w.turns} turn(s){more})")
    for line in report.errors:
        print(f"error: {line}", file=sys.stderr)
    for line in report.notes:
        print(f"note: {line}", file=sys.stderr)
    for line in report.warnings:
        print(f"warning: {line}", file=sys.stderr)
    print(summary(report), flush=True)
    failed = bool(report.errors)
    if report.written and _commit(home, report):
        return True
    failed = _journals(home, report.days, args, journals) or failed
    if report.written:  # the first search after an import answers at its usual speed, not after an index build
        from memory_pipeline.search import refresh_index

        print(refresh_index(home), flush=True)
    return failed


def watch(args: argparse.Namespace, home: Path, options: Options) -> int:
    sources: list[Path] = list(args.paths) or configured_sources()
    if not sources:
        print(f"error: nothing to watch: give the folders as PATH or set {SOURCES_ENV}", file=sys.stderr)
        return 2
    try:
        quiet = args.quiet_minutes if args.quiet_minutes is not None else quiet_minutes()
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def interrupted(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGINT, interrupted)
    shown = ", ".join(str(s) for s in sources)
    print(f"watching {shown} every {args.interval:g} s; sessions quiet for {quiet:g} min are imported; "
          "Ctrl-C stops", flush=True)  # fmt: skip
    seen: dict[str, list[int]] = {}
    written, live_before = 0, -1
    missing_shown: set[str] = set()
    try:
        while not stop.is_set():
            found = scan(sources, seen, time.time_ns(), quiet * 60)
            for line in found.missing:
                if line not in missing_shown:  # once, not every look
                    print(f"error: {line}", file=sys.stderr)
            missing_shown = set(found.missing)
            if len(found.live) != live_before and found.live:
                print(f"{len(found.live)} live session file(s) wait until quiet for {quiet:g} min", flush=True)
            live_before = len(found.live)
            if found.ready:
                try:
                    report = import_paths(found.ready, home / "raw" / "conversations", options,
                                          progress=progress_printer(), stop=stop.is_set)  # fmt: skip
                except SourceError as exc:
                    print(f"error: {exc}", file=sys.stderr)
                    return 2
                seen = remember(seen, found, report.done)
                written += len(report.written)
                show_and_rebuild(home, report, args, journals=not stop.is_set())
            else:
                seen = remember(seen, found, [])
            stop.wait(args.interval)
    finally:
        signal.signal(signal.SIGINT, previous)
    print(f"stopped watching: {written} transcript(s) written", flush=True)
    return 0


def _commit(home: Path, report: ImportReport) -> bool:
    outcome = commit_imported(home, report)
    for note in outcome.notes:
        print(note, file=sys.stderr)
    if outcome.error:
        print(f"error: the transcripts are written but not committed: {outcome.error}", file=sys.stderr)
    return bool(outcome.error)


def _journals(home: Path, days: list[date], args: argparse.Namespace, rebuild: bool = True) -> bool:
    """Rebuild through the journal jobs (one ranged run per run of consecutive days) the journals of `days` (the
    days this import wrote) and of every other day whose journal is older than its transcripts (an earlier
    import killed while rebuilding, or run with --no-journals); then roll up the weeks whose MEMORY.md is older
    than their journals and that those runs did not roll up."""
    if args.no_journals or not rebuild:
        why = "--no-journals" if args.no_journals else "stopped"
        for start, end in runs_of_days(days):
            print(f"journals not rebuilt ({why}): memory-pipeline reconstruct --from {start} --to {end}")
        return False
    from memory_pipeline.defs.journals.freshness import stale_journal_days, weeks_behind
    from memory_pipeline.defs.journals.partitions import daily_partitions, weekly_partitions
    from memory_pipeline.journals.cli.reconstruct import reconstruct
    from memory_pipeline.journals.freshness import week_start
    from memory_pipeline.journals.transcript import day_folder
    from memory_pipeline.operator.instance import cli_instance, dagster_home, home_line, recover_dead_cli_runs, say

    failed = 0
    with cli_instance(home, announce=False) as instance:  # said below, once there is a run to launch
        valid = set(daily_partitions.get_partition_keys(dynamic_partitions_store=instance))
        raw = home / "raw" / "conversations"
        behind = sorted(set(stale_journal_days(instance, raw, valid)) - set(days))
        spans = runs_of_days([*days, *behind])
        covered = {week_start(start + timedelta(days=i)) for start, end in spans for i in range((end - start).days + 1)}
        valid_weeks = set(weekly_partitions.get_partition_keys(dynamic_partitions_store=instance))
        weeks = [w for w in weeks_behind(instance, valid_weeks) if w not in covered]
        if not spans and not weeks:
            return False
        say(home_line(dagster_home(home)))
        recover_dead_cli_runs(instance, home)
        if spans:
            shown = ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in spans)
            more = f" ({len(behind)} day(s) whose journal is older than its transcripts)" if behind else ""
            print(f"rebuilding the journals of {shown}{more}", flush=True)
        if weeks:
            print(f"rolling up MEMORY.md for the week(s) of {', '.join(map(str, weeks))} (older than their "
                  "journals)", flush=True)  # fmt: skip
        # the days first, one run per range (ranges joined across days without transcripts), then every week
        # they touch and every week behind in one weekly run: not a daily and a weekly run per day
        days_to_run = bridged(spans, lambda d: any(day_folder(raw, d).glob("*.md")))
        runs = [(start, end, True, False) for start, end in days_to_run]
        week_firsts = sorted({*covered, *weeks})
        if week_firsts:
            runs.append((week_firsts[0], week_firsts[-1] + timedelta(days=6), False, True))
        for start, end, daily, weekly in runs:
            result = reconstruct(instance, start, end, multiprocess=not args.in_process, daily=daily, weekly=weekly,
                                 quiet_level="WARNING")  # Dagster's INFO and DEBUG lines with --verbose only
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
        help="import session files or folders (recursive) as transcripts and rebuild the journals of their days "
        "(and of any day whose journal is older than its transcripts)",
        description="Each source session becomes one transcript under raw/conversations/; importing again writes "
        "nothing, a session file that grew updates its transcript as a new version. Tool results longer than "
        f"{TOOL_RESULT_CAP} characters are cut, noting their size; thinking is left out unless --keep-thinking.",
    )
    imp.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help=f"a session file, or a folder of them (with --watch, default: the folders in {SOURCES_ENV})",
    )
    imp.add_argument("--watch", action="store_true",
                     help="keep watching the folders: import each session once it has been quiet for "
                     "--quiet-minutes, rebuild the journals of its day; Ctrl-C stops")  # fmt: skip
    imp.add_argument("--quiet-minutes", type=_minutes, metavar="N",
                     help=f"--watch: minutes a session file must go unwritten before it is imported (default: "
                     f"{QUIET_ENV}, else 10)")  # fmt: skip
    imp.add_argument("--interval", type=_seconds, default=60.0, metavar="SECONDS",
                     help="--watch: seconds between looks at the folders (default 60)")  # fmt: skip
    imp.add_argument("--format", choices=("auto", *FORMATS), default="auto",
                     help="the files' format (default: detected per file)")  # fmt: skip
    imp.add_argument("--since", type=_date, metavar="DATE", help="skip sessions that started before DATE (YYYY-MM-DD)")
    imp.add_argument("--started", type=_started, metavar="TIME",
                     help="messages: the session's start when the messages carry no timestamp (ISO-8601, UTC "
                     "unless it says otherwise)")  # fmt: skip
    imp.add_argument("--keep-thinking", action="store_true", help="keep thinking/reasoning as [thinking] turns")
    imp.add_argument("--no-journals", action="store_true",
                     help="write the transcripts only (the next import without it rebuilds their days' journals)")
    imp.add_argument("--in-process", action="store_true", help="run the journal steps in this process")
    imp.add_argument("--background", action="store_true",
                     help="return at once and import in a process of its own (for a host's hook with a time "
                     f"budget); its output is appended to {BACKGROUND_LOG} in the workspace")  # fmt: skip
    imp.set_defaults(fn=cmd_import)
