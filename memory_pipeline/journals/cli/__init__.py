"""`memory-pipeline reconstruct` and `memory-pipeline import locomo PATH` (Dagster imported lazily)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path

from memory_pipeline.settings import workspace_home


def _date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected YYYY-MM-DD, got {value!r}") from None


def _day(value: str) -> date:
    """`--as-of` of a command that works by the day: a date, or an ISO timestamp as `run` takes (its UTC day)."""
    try:
        return date.fromisoformat(value)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a date (2026-11-01) or an ISO timestamp (2026-11-01T03:30:00Z), got {value!r}"
        ) from None
    return (when.astimezone(UTC) if when.tzinfo else when).date()


def cmd_reconstruct(args: argparse.Namespace) -> int:

    from memory_pipeline.journals.cli.reconstruct import reconstruct
    from memory_pipeline.journals.extractors import select
    from memory_pipeline.operator.instance import cli_instance
    from memory_pipeline.operator.instance import recover_dead_cli_runs as _recover_dead_cli_runs

    home = workspace_home()
    if args.adopt is not None or args.prune_branches or args.branch is not None:
        return cmd_branch(args, home)
    if args.start is None or args.end is None:
        print("error: reconstruct needs --from and --to (or --branch NAME, --adopt NAME, --prune-branches)",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.questions is not None:
        print("error: --questions compares a branch with main: give --branch NAME too", file=sys.stderr)
        return 2
    if not (home / "raw" / "conversations").is_dir():
        print(f"no transcripts in {home / 'raw' / 'conversations'}", file=sys.stderr)
        return 2
    try:
        select(args.extractor)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    which = ", ".join(args.extractor) if args.extractor else "all extractors"
    print(f"reconstructing {args.start}..{args.end} ({which}) in {home}")
    with cli_instance(home) as instance:
        _recover_dead_cli_runs(instance, home)
        try:
            result = reconstruct(
                instance, args.start, args.end, args.extractor, multiprocess=not args.in_process,
                weekly=not args.no_weekly,
            )
        except ValueError as exc:
            print(str(exc), file=sys.stderr)
            return 2
    failed = len(result.failed) + len(result.rejected)
    print(f"{len(result.days)} day(s), {len(result.weeks)} week(s) rebuilt; {failed} failed")
    for key in result.failed:
        print(f"failed: {key}: {result.errors.get(key, '')}", file=sys.stderr)
    for line in result.rejected:
        print(f"failed: transcript {line}", file=sys.stderr)
    for line in result.warnings:
        print(f"warning: {line}", file=sys.stderr)
    if not failed:
        tag_main(home, args.extractor)
    return 1 if failed else 0


def _commit_ask() -> Callable[[str], str] | None:
    """The `llm` resource (as the environment configures it) writing commit summaries; None offline."""
    from memory_pipeline.journals.commit_messages import llm_ask
    from memory_pipeline.resources.defaults import default_resources

    return llm_ask(default_resources()["llm"])


def tag_main(home: Path, extractors: list[str] | None) -> None:
    """After a reconstruction on main: `memory/extract/<label>` when the extractor set/versions changed."""
    from memory_pipeline.journals import branches
    from memory_pipeline.journals.cli.reconstruct import extractor_versions
    from memory_pipeline.journals.gitlog import git_enabled

    if not git_enabled() or not (home / ".git").is_dir():
        return  # optional, like the knowledge commits themselves
    try:
        tag = branches.tag_extractors(home, branches.extractor_label(extractor_versions(extractors)))
    except branches.BranchError as exc:
        print(f"note: {exc}", file=sys.stderr)
        return
    if tag:
        print(f"tagged {tag} (extractor change)")


def cmd_branch(args: argparse.Namespace, home: Path) -> int:
    """`reconstruct --branch NAME [--questions FILE]`, `--adopt NAME`, `--prune-branches` (seed 001 §3.3, §10.4)."""
    from memory_pipeline.journals import branches
    from memory_pipeline.journals.cli.reconstruct import reconstruct_branch
    from memory_pipeline.journals.extractors import select

    try:
        if args.prune_branches and args.branch is None and args.adopt is None:
            branches.require_git(home, "reconstruct --prune-branches")
            pruned, kept = branches.prune(home)
            for b in pruned:
                print(f"pruned {branches.PREFIX}{b.name} (last commit {b.last_commit:%Y-%m-%d})")
            for k in kept:
                print(k.line(home))
            print(f"{len(pruned)} extract/* branch(es) older than 7 days pruned; {len(branches.branches(home))} kept"
                  + (f" ({len(kept)} of them old, with uncommitted changes)" if kept else ""))  # fmt: skip
            return 0
        if args.adopt is not None:
            return _adopt(home, branches.check_name(args.adopt))
        name = branches.check_name(args.branch)
        branches.require_git(home)
        select(args.extractor)
        span = (args.start, args.end) if args.start and args.end else branches.transcript_days(home)
        if span is None:
            raise branches.BranchError(f"no transcripts in {home / 'raw' / 'conversations'}")
        start, end = args.start or span[0], args.end or span[1]
        which = ", ".join(args.extractor) if args.extractor else "all extractors"
        where = branches.branch_dir(home, name)
        print(f"reconstructing {start}..{end} ({which}) on {branches.PREFIX}{name} in {where}")
        run = reconstruct_branch(home, name, start, end, args.extractor, multiprocess=not args.in_process,
                                 weekly=not args.no_weekly, ask=_commit_ask())  # fmt: skip
    except (branches.BranchError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failed = len(run.result.failed) + len(run.result.rejected)
    print(f"{len(run.result.days)} day(s), {len(run.result.weeks)} week(s) rebuilt on {branches.PREFIX}{name}; "
          f"{failed} failed; commit {run.commit[:10]} (message by {run.written_by})")  # fmt: skip
    for key in run.result.failed:
        print(f"failed: {key}: {run.result.errors.get(key, '')}", file=sys.stderr)
    print(f"git diff --stat {branches.main_branch(home)} {branches.PREFIX}{name} -- knowledge archive:")
    print(run.diff_stat.rstrip() or " (no difference)")
    print(_retention(home, run.where, args.questions))
    print(f"adopt it: memory-pipeline reconstruct --adopt {name}")
    return 1 if failed else 0


def _retention(home: Path, where: Path, questions: Path | None) -> str:
    if questions is None:
        return "retention comparison skipped: no --questions FILE (LoCoMo format)"
    from memory_pipeline.evaluation.retention import RetentionError, compare

    try:
        return compare(home, where, questions).line()
    except RetentionError as exc:
        return str(exc)


def _adopt(home: Path, name: str) -> int:
    """Merge extract/NAME (its files become main's), tag an extractor change, delete the merged branch."""
    from memory_pipeline.journals import branches
    from memory_pipeline.journals.commit_messages import KnowledgeChange, compose

    branches.require_git(home, "reconstruct --adopt")
    if not branches.exists(home, name):
        raise branches.BranchError(f"no branch {branches.PREFIX}{name} to adopt")
    facts = branches.trailers(home, f"{branches.PREFIX}{name}")
    files = branches.changed_files(home, name)
    label, span = facts.get("Extractors", ""), facts.get("Range", "")
    change = KnowledgeChange(
        "extract", f"adopt {branches.PREFIX}{name}" + (f" ({label})" if label else ""), files=tuple(files),
        detail=f"Merged the A/B reconstruction {branches.PREFIX}{name}" + (f" of {span}" if span else "") + ".",
        trailers=tuple((k, v) for k, v in (("Extractors", label), ("Range", span)) if v),
        diff_stat=branches.diff_stat(home, name),
    )  # fmt: skip
    composed = compose(change, _commit_ask())
    commit = branches.adopt(home, name, composed.message)
    print(f"adopted {branches.PREFIX}{name}: merge {commit[:10]}, {len(files)} file(s) changed "
          f"(message by {composed.written_by})")  # fmt: skip
    tag = branches.tag_extractors(home, label) if label else None
    if tag:
        print(f"tagged {tag} (extractor change)")
    if changes := branches.remove(home, name):
        print(f"kept {branches.PREFIX}{name} and its worktree {branches.branch_dir(home, name)} (merged): it has "
              f"uncommitted or untracked changes ({', '.join(changes[:5])}); delete it with "
              "`memory-pipeline reconstruct --prune-branches` once they are dealt with")  # fmt: skip
    else:
        print(f"deleted {branches.PREFIX}{name} and its worktree (merged)")
    if span:
        start, _, end = span.partition("..")
        print(f"note: memory.duckdb is unchanged (main's extractor memories): a later main reconstruct of {span} "
              f"writes journals from them again; `memory-pipeline reconstruct --from {start} --to {end}` with "
              "the branch's extractors refreshes theirs (other extractors' memories stay)")  # fmt: skip
    return 0


def flush_session(
    home: Path, turns: list, now: datetime | None = None, project: str | None = None
) -> dict[str, object]:
    """Seed 001 §6.4: the turns as a transcript, then that day's journal and the week's MEMORY.md rebuilt by
    the journal pipeline (in this process), their commit, and last the flush's record (`flush.mark_done`). The
    same turns again: nothing is written or run — unless the first flush stopped before its record, which this
    one then finishes (`resumed`). A failure is one line in `error` (nothing recorded, so a retry finishes it);
    a running git holding .git/index.lock raises GitLockError before anything is written."""

    from memory_pipeline.faults import crash_point
    from memory_pipeline.journals.cli.reconstruct import reconstruct
    from memory_pipeline.journals.commit_messages import KnowledgeChange, template
    from memory_pipeline.journals.flush import existing, is_done, mark_done, session_id_of, write_flush
    from memory_pipeline.journals.gitlog import check_index_lock, commit_knowledge
    from memory_pipeline.operator.instance import cli_instance
    from memory_pipeline.operator.instance import recover_dead_cli_runs as _recover_dead_cli_runs

    raw = home / "raw" / "conversations"
    sid = session_id_of(turns)
    found = existing(raw, sid)
    if found is not None and is_done(home, sid):
        return {"transcript": str(found.relative_to(home)), "written": False, "session_id": sid,
                "day": "-".join(found.relative_to(raw).parts[:3]),
                "note": "these turns were flushed before: nothing written"}  # fmt: skip
    notes = [n for n in [check_index_lock(home)] if n]
    outcome = write_flush(raw, turns, now, project)
    crash_point("flush_after_transcript")
    rel = outcome.path.relative_to(home).as_posix()
    out: dict[str, object] = {"transcript": rel, "written": True, "resumed": not outcome.written,
                              "session_id": outcome.session_id, "day": outcome.day, "notes": notes}  # fmt: skip
    if not outcome.written:
        out["note"] = "an earlier flush of these turns stopped before it completed: finished it now"
    day = date.fromisoformat(outcome.day)
    # CRITICAL: a failing step is the one line below, not its trace
    with cli_instance(home, announce=False) as instance:
        _recover_dead_cli_runs(instance, home)  # a flush killed mid-run left its store pool slot claimed
        result = reconstruct(instance, day, day, multiprocess=False, echo=lambda _l: None, quiet_level="CRITICAL")
    if result.failed or result.rejected:
        why = (list(result.errors.values()) + result.rejected + ["the journal run failed"])[0]
        out["error"] = (f"flush: the journal step for {day} failed: {' '.join(why.split())}; the transcript {rel} "
                        "is kept: fix that and flush the same turns again to finish")  # fmt: skip
        return out
    journal = home / "knowledge" / "journal" / f"{day}.md"
    journal_rel = journal.relative_to(home).as_posix() if journal.exists() else ""
    memory_rel = "knowledge/memory/MEMORY.md"
    mine = (rel, *([journal_rel] if journal_rel else []), memory_rel)
    change = KnowledgeChange("extract", f"flush {outcome.session_id} ({day})", files=mine, sessions=(sid,))
    commit = commit_knowledge(home, template(change), tag=None, paths=mine)  # whatever the journal run left
    notes += commit.notes
    out.update(journal=journal_rel, failed=0, memory_md=memory_rel)
    if commit.error:
        out["error"] = (f"flush: {day}'s journal is written but not committed: {commit.error}; flush the same "
                        "turns again once git works")  # fmt: skip
        return out
    crash_point("flush_before_record")
    mark_done(home, outcome, journal_rel)
    return out


def cmd_flush(args: argparse.Namespace) -> int:
    from memory_pipeline.journals.flush import FlushInputError, load_flush
    from memory_pipeline.journals.gitlog import GitLockError

    home = workspace_home()
    try:
        turns, project = load_flush(args.file)
        out = flush_session(home, turns, project=args.project or project)
    except (FlushInputError, GitLockError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    notes = out.get("notes")
    for note in notes if isinstance(notes, list) else []:
        print(note, file=sys.stderr)
    if "error" in out:
        print(f"error: {out['error']}", file=sys.stderr)
        return 1
    if not out["written"]:
        print(f"already flushed: {out['transcript']} (same turns); nothing written")
        return 0
    verb = "finished the interrupted flush of" if out["resumed"] else "flushed"
    print(f"{verb} {len(turns)} turn(s) → {out['transcript']}; journal {out['journal'] or '(no durable item)'}; "
          f"{out['memory_md']} rebuilt for the week")  # fmt: skip
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    """`history PHRASE` | `history --file PATH` | `history --at TAG PATH` (seed 001 §3.6)."""
    from memory_pipeline.journals import history

    home = workspace_home()
    try:
        if args.at:
            if len(args.words) != 1:
                print("error: history --at TAG needs exactly one PATH", file=sys.stderr)
                return 2
            sys.stdout.write(history.at(home, args.at, args.words[0]))
            return 0
        if args.file:
            for c in history.file_history(home, args.file):
                print(f"{c.date}  {c.commit[:10]}  {c.subject}" + (f"  (sessions: {c.sessions})" if c.sessions else ""))
            return 0
        first = history.first_learned(home, " ".join(args.words))
    except history.HistoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if first is None:
        print("never learned: no commit added that phrase")
        return 1
    print(f"first learned {first.date} in {first.commit[:10]} ({first.subject}): {', '.join(first.files)}"
          + (f"; sessions: {first.sessions}" if first.sessions else ""))  # fmt: skip
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    """Seed 001 §8.5: knowledge files scoring below the floor and older than 30 days move to archive/."""
    from memory_pipeline.journals.decay import prune

    home = workspace_home()
    today = args.as_of or date.today()
    if not args.dry_run and (code := _git_ready(home)) is not None:
        return code
    scored, moved, commit = prune(home, today, args.dry_run, warn=lambda m: print(f"warning: {m}", file=sys.stderr))
    for s in scored:
        if s.evict:
            verb = "would archive" if args.dry_run else "archived"
            print(f"{verb} {s.path}  score {s.score:.4f}  {s.days_old} days  {s.references} reference(s)")
    evicted = sum(1 for s in scored if s.evict)
    for note in commit.notes:
        print(note, file=sys.stderr)
    if args.dry_run:
        print(f"dry run: {evicted} of {len(scored)} knowledge file(s) would move to archive/; nothing moved")
    elif commit.error:
        print(f"error: {len(moved)} knowledge file(s) moved to archive/ but not committed: {commit.error}",
              file=sys.stderr)  # fmt: skip
        return 1
    else:
        print(f"{len(moved)} of {len(scored)} knowledge file(s) moved to archive/ (still searchable, tier archive)")
    return 0


def _git_ready(home: Path) -> int | None:
    """Before a command that commits: a stale .git/index.lock is removed (one note line); one a running git
    holds is one error line and exit code 2, before anything is written. None: go on."""
    from memory_pipeline.journals.gitlog import GitLockError, check_index_lock

    try:
        note = check_index_lock(home)
    except GitLockError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if note:
        print(note, file=sys.stderr)
    return None


def _last_closed_month(today: date) -> str:
    first = today.replace(day=1)
    return (first.fromordinal(first.toordinal() - 1)).strftime("%Y-%m")


def cmd_monthly(args: argparse.Namespace) -> int:
    """Seed 001 §8.4: the month's distillation through the asset's own helper (`run_monthly`)."""
    from zoneinfo import ZoneInfo

    from memory_pipeline.journals.monthly import parse_month, run_report_path

    try:
        parse_month(args.month or "2000-01")  # a bad month is one line before anything else loads
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    home = workspace_home()
    # the partitions' calendar (defs.journals.partitions.journal_timezone, without importing Dagster yet)
    tz = os.environ.get("MEMORY_PIPELINE_JOURNAL_TZ") or "UTC"
    try:
        today = datetime.now(ZoneInfo(tz)).date()
    except (ValueError, KeyError):  # ZoneInfoNotFoundError is a KeyError
        print(f"error: MEMORY_PIPELINE_JOURNAL_TZ={tz!r} is not a time zone", file=sys.stderr)
        return 2
    month = args.month or _last_closed_month(today)
    first, _ = parse_month(month)
    if first > today:
        print(f"error: {month} has not started yet (today is {today})", file=sys.stderr)
        return 2
    if not (home / "knowledge").is_dir():
        print(f"error: no knowledge folder in {home} (set MEMORY_PIPELINE_HOME to a workspace)", file=sys.stderr)
        return 2
    from memory_pipeline.defs.journals.monthly import run_monthly
    from memory_pipeline.resources import EngineConfig, LLMResource

    # the code location's `llm` resource (resources.defaults), with the key's value rather than a dg.EnvVar
    llm = LLMResource(api_key=os.environ.get("ANTHROPIC_API_KEY") or None,
                      mode=os.environ.get("MEMORY_PIPELINE_LLM", "auto"))  # fmt: skip
    try:
        llm.uses_anthropic()
        engine = EngineConfig.from_env()
    except ValueError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    if not args.dry_run and (code := _git_ready(home)) is not None:
        return code
    plan, report = run_monthly(home, month, today, args.dry_run, llm,
                               warn=lambda m: print(f"warning: {m}", file=sys.stderr),
                               reports_dir=home / "reports", max_cost_usd=engine.max_cost_usd,
                               rate_limit_per_min=engine.rate_limit_per_min)  # fmt: skip
    verb = "would " if args.dry_run else ""
    for rel in plan.journals:
        print(f"{verb}archive {rel}")
    for f in report["files"]:
        print(f"{verb}merge {f['path']}: {f['bullets_before']} → {f['bullets_after']} bullets ({f['mode']})")
    if report["memory_md"]:
        print(f"{verb}trim knowledge/memory/MEMORY.md: {plan.memory_lines_before} → {plan.memory_lines_after} lines")
    m = plan.metadata()
    summary = (f"{month}: {m['journals_archived']} journal(s) archived, {m['bullets_merged']} bullet(s) merged in "
               f"{m['files_changed']} of {m['files_reviewed']} file(s), MEMORY.md {m['memory_md_lines_before']} → "
               f"{m['memory_md_lines_after']} lines")  # fmt: skip
    if args.dry_run:
        print(f"dry run: {summary}; nothing written")
        return 0
    for note in report["notes"]:
        print(note, file=sys.stderr)
    run_rel = run_report_path(home, month, report["run"]).relative_to(home)
    if report["commit_error"]:
        print(f"error: {month}: files changed but not committed: {report['commit_error']} (report {run_rel})",
              file=sys.stderr)  # fmt: skip
        return 1
    month_rel = f"; the month's: reports/monthly/{month}.json" if report["month_report"] else ""
    print(f"{summary}; moved lines in archive/monthly/{month}/; report {run_rel}{month_rel}")
    return 0


def import_locomo(path: Path, conversations: list[str] | None = None) -> int:
    from memory_pipeline.evaluation.locomo_transcripts import LocomoError, locomo_to_transcripts

    home = workspace_home()
    home.mkdir(parents=True, exist_ok=True)
    try:
        written = locomo_to_transcripts(path, home / "raw" / "conversations", conversations)
    except (LocomoError, FileNotFoundError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    days = sorted({p.parent for p in written})
    print(f"{len(written)} LoCoMo session transcript(s) on {len(days)} day(s) under {home / 'raw' / 'conversations'}")
    if written:
        first, last = (p.relative_to(home / "raw" / "conversations").parent for p in (min(written), max(written)))
        print(f"run them: memory-pipeline reconstruct --from {str(first).replace('/', '-')} "
              f"--to {str(last).replace('/', '-')}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    rec = sub.add_parser(
        "reconstruct",
        help="replay transcripts through the extractors for a date range (a backfill of the journal pipeline)",
    )
    rec.add_argument("--from", dest="start", type=_date, help="first day, YYYY-MM-DD (with --branch: default the "
                     "first transcript's)")  # fmt: skip
    rec.add_argument("--to", dest="end", type=_date, help="last day, YYYY-MM-DD (with --branch: default the last)")
    rec.add_argument("--extractor", action="append", help="only this extractor (repeatable); default all")
    rec.add_argument("--in-process", action="store_true", help="run the steps in this process (default: one each)")
    rec.add_argument("--no-weekly", action="store_true", help="skip the weekly MEMORY.md rollup")
    mode = rec.add_mutually_exclusive_group()  # one of: replay on a branch, adopt one, prune old ones
    mode.add_argument("--branch", metavar="NAME", help="A/B: replay into the knowledge repository's branch "
                     "extract/NAME (its own worktree and store), report the diff against main")  # fmt: skip
    rec.add_argument("--questions", type=Path, metavar="FILE",
                     help="with --branch: LoCoMo-format questions; compare answer support on main and the branch")
    mode.add_argument("--adopt", metavar="NAME", help="merge extract/NAME into the workspace's branch, then delete it")
    mode.add_argument("--prune-branches", action="store_true", help="delete extract/* branches older than 7 days")
    rec.set_defaults(fn=cmd_reconstruct)
    fl = sub.add_parser(
        "flush",
        help="before a context compaction: keep the turns about to drop out (journal + MEMORY.md)",  # seed 001 §6.4
    )
    fl.add_argument("file", help='JSON list of {"role": "user|assistant|…", "content": "…"}, oldest first, or '
                    '{"turns": [...], "project" or "cwd": …}; - = stdin')
    fl.add_argument("--project", metavar="NAME", help="the project of the session being flushed (its journal "
                    "entries are filed under it); default: the file's project or cwd, else none")
    fl.set_defaults(fn=cmd_flush)
    hi = sub.add_parser(
        "history", help="git as memory: when a phrase was first learned, a file's changes, a file at a tag"
    )
    hi.add_argument("words", nargs="*", help="the phrase (or, with --at, the PATH)")
    hi.add_argument("--file", help="workspace-relative path: what changed, when, from which sessions")
    hi.add_argument("--at", metavar="TAG", help="point-in-time recall: print PATH as it was at TAG (or commit)")
    hi.set_defaults(fn=cmd_history)
    pr = sub.add_parser("prune", help="move knowledge files nobody reads any more to archive/")
    pr.add_argument("--dry-run", action="store_true", help="list the candidates and their scores; move nothing")
    pr.add_argument("--as-of", type=_day, metavar="WHEN",
                    help="score as of this day: a date (2026-11-01) or an ISO timestamp (2026-11-01T03:30:00Z, its "
                    "UTC day) (default today)")  # fmt: skip
    pr.set_defaults(fn=cmd_prune)
    mo = sub.add_parser(
        "monthly", help="monthly distillation: archive old journals, merge repeats, cap MEMORY.md"  # seed 001 §8.4
    )
    mo.add_argument("--month", help="YYYY-MM (default: the last closed month)")
    mo.add_argument("--dry-run", action="store_true", help="list the plan; write nothing")
    mo.set_defaults(fn=cmd_monthly)
    from memory_pipeline.journals.imports.cli import register as register_transcripts

    register_transcripts(sub)  # `transcripts import PATH…`


def install_demo_transcripts(home: Path, sample_root: Path) -> None:
    """The sample transcripts into the workspace (idempotent). The demo does this before anything loads the code
    location, whose journal partitions start at the workspace's first transcript day."""
    import shutil

    from memory_pipeline.journals.sample_transcripts import write_sample_transcripts

    raw = sample_root / "raw"
    if raw.is_dir():
        shutil.copytree(raw, home / "raw", dirs_exist_ok=True)
    else:
        write_sample_transcripts(home)


def demo_journals(home: Path, sample_root: Path, in_process: bool = True) -> int:
    """The demo's second half: the sample transcripts into the workspace, then the journal pipeline over them."""
    from memory_pipeline.journals.cli.reconstruct import reconstruct
    from memory_pipeline.journals.sample_transcripts import DAYS, START
    from memory_pipeline.operator.instance import cli_instance

    install_demo_transcripts(home, sample_root)
    last = START.fromordinal(START.toordinal() + DAYS - 1)
    print(f"journals: sample transcripts {START}..{last} → knowledge/journal, knowledge/memory/MEMORY.md")
    with cli_instance(home, announce=False) as instance:
        result = reconstruct(
            instance, START, last, multiprocess=not in_process, echo=lambda _line: None, quiet_level="WARNING"
        )
    failed = len(result.failed) + len(result.rejected)
    print(f"journals: {len(result.days)} day(s), {len(result.weeks)} week(s); {failed} failed")
    for key in result.failed:
        print(f"journals: {key} failed: {result.errors.get(key, '')}", file=sys.stderr)
    for line in result.rejected:
        print(f"journals: transcript failed: {line}", file=sys.stderr)
    return 1 if failed else 0
