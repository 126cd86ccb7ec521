"""The sleep cycle for an AI agent's memory, from a shell: the nightly consolidation, journals, search and context
(the same Dagster jobs the schedules run). `memory-pipeline COMMAND --help` says more about a command."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import uuid
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_pipeline.errors import UserError
from memory_pipeline.operator.instance import (
    HOST_TAG,
    PID_TAG,
    cli_instance,
    dagster_home,
    lease_ttl,
    open_store,
    recover_dead_cli_runs,
    say,
    store_path,
)
from memory_pipeline.settings import AS_OF_HELP, REPO_ROOT, VERBOSE_ENV, SettingsError, check_as_of, workspace_home
from memory_pipeline.store.lease import SKIP_MESSAGE
from memory_pipeline.terminal import visible_stdout

if TYPE_CHECKING:  # imported lazily at run time, to keep --help fast
    from memory_pipeline.store.importers import Validator

DEMO_MARKER = ".memory_pipeline_demo"
# Domain CLIs: each module has `register(sub: argparse._SubParsersAction) -> None` and imports Dagster lazily.
DOMAIN_CLIS: tuple[str, ...] = (
    "memory_pipeline.graph.cli",
    "memory_pipeline.rollups.cli",
    "memory_pipeline.operator.cli",
    "memory_pipeline.journals.cli",
    "memory_pipeline.compaction.cli",
    "memory_pipeline.context.cli",
    "memory_pipeline.embedding.cli",
    "memory_pipeline.search.cli",
    "memory_pipeline.fleet.processes.cli",
    "memory_pipeline.fleet.cli",
    "memory_pipeline.writes.cli",
)


# Shared with the domains' CLIs, which import them from memory_pipeline.operator.instance (never from here).
_dagster_home = dagster_home
_recover_dead_cli_runs = recover_dead_cli_runs
_store_path, _lease_ttl, _say = store_path, lease_ttl, say


def _run_job(home: Path, job_name: str, run_config: dict[str, Any], as_of: str = "") -> Any:
    import socket

    from memory_pipeline.definitions import defs_with
    from memory_pipeline.resources.defaults import default_resources
    from memory_pipeline.settings import console_loggers

    defs = defs_with(default_resources(str(home), as_of=as_of))
    job = defs.resolve_job_def(job_name)
    config = {"loggers": console_loggers(), **run_config}
    tags = {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}
    with cli_instance(home) as instance:
        _recover_dead_cli_runs(instance, home)  # never wait silently for a slot, nor for ever
        from memory_pipeline.operator.progress import progress_for  # a bar on stderr when it is a terminal

        with progress_for(instance, job, config) as (run_id, config):
            return _execute_watched(instance, home, job, config, tags, run_id or str(uuid.uuid4()))


def _execute_watched(instance: Any, home: Path, job: Any, config: dict, tags: dict, run_id: str) -> Any:
    """`job.execute_in_process`, with a PoolWatch in case a holder of the store's slot appeared after
    `_recover_dead_cli_runs` looked (Dagster would wait for it silently, for ever)."""
    from memory_pipeline.operator.recovery import PoolWaitAbort, PoolWaitTimeout, PoolWatch
    from memory_pipeline.resources.store import POOL
    from memory_pipeline.settings import pool_wait_seconds

    watch = PoolWatch(
        instance, POOL, run_id, _store_path(home), ttl=_lease_ttl(), timeout_s=pool_wait_seconds(), log=_say
    )
    from memory_pipeline.operator.run_failures import short_failures
    from memory_pipeline.settings import verbose

    try:
        with watch, (short_failures() if not verbose() else nullcontext()):
            result = job.execute_in_process(
                instance=instance, run_config=config, raise_on_error=False, tags=tags, run_id=run_id
            )
    except PoolWaitAbort:
        result = None
    if watch.timed_out:
        run = instance.get_run_by_id(run_id)
        if run is not None and not run.is_finished:
            instance.report_run_failed(run, watch.timed_out)
        instance.event_log_storage.free_concurrency_slots_for_run(run_id)
        raise PoolWaitTimeout(watch.timed_out)
    return result


def _failure_line(result: Any) -> str:
    """The first failed step's own message, on one line (the full error is in the log and the instance); a
    blocking check's own description when one stopped the night."""
    from memory_pipeline.operator.run_failures import blocked_line

    if (blocked := blocked_line(result)) is not None:
        return blocked
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE":
            data = event.step_failure_data
            user = getattr(data, "user_failure_data", None)
            text = (user.description if user is not None and user.description else None) or (
                data.error.message if data is not None and data.error is not None else ""
            )
            first = (text or "").strip().splitlines()
            return f"step {event.step_key} failed: {first[0] if first else 'see the log above'}"
    for event in result.all_events:
        if event.event_type_value == "ASSET_CHECK_EVALUATION" and not event.event_specific_data.passed:
            return f"blocking check {event.event_specific_data.check_name} failed; see the log above"
    return "see the log above"


def _print_report(home: Path, run_id: str) -> dict[str, Any] | None:
    from memory_pipeline.abstraction.report import report_from_dict, summary_lines

    path = home / "reports" / f"compression-{run_id}.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    print("\n".join(summary_lines(report_from_dict(data))))
    print(f"  report               {path}")
    return data


def _print_retention(home: Path, run_id: str) -> None:
    from memory_pipeline.abstraction import retention

    figures = retention.load(home / "reports", run_id)
    if figures is not None:
        print(figures.line() + (" — below the floor: nothing archived" if figures.blocked else ""))


def cmd_run(args: argparse.Namespace) -> int:
    check_as_of(args.as_of)  # before anything starts: a bad clock is one line, not a failed run
    home = workspace_home()
    if not (home / "memory.duckdb").exists():
        print(
            f"no memory store in {home}: run `memory-pipeline demo` or `memory-pipeline import PATH`", file=sys.stderr
        )
        return 2
    _store(home)  # a damaged store is one clear line here, not a failed Dagster step
    print(f"workspace {home}", file=sys.stderr, flush=True)  # stdout stays the report (scripts parse it)
    if not args.dry_run:
        from memory_pipeline.store.outputs import check_outputs

        check_outputs(home)  # every place the run writes, before its first write (raises a one-line UserError)
    if args.dry_run:
        result = _run_job(home, "consolidation_dry_run", {}, args.as_of)
        if not result.success:
            print(f"error: dry run failed: {_failure_line(result)}", file=sys.stderr)
            return 1
        found = result.output_for_node("clusters")
        print(f"DRY RUN: {len(found)} clusters (nothing written)")
        for c in found:
            skip = f"  [skip: {c.skip_reason}]" if c.skip_reason else ""
            sim = f"sim={c.avg_similarity:.3f}"
            print(f"  {c.cluster_id}  {c.member_count:3d} members  {sim}  {c.dominant_category}{skip}")
        return 0
    run_config: dict[str, Any] = {}
    if args.cluster_id:
        run_config["ops"] = {"distillations": {"config": {"cluster_id": args.cluster_id}}}
    result = _run_job(home, "nightly_consolidation", run_config, args.as_of)
    if result.success and not result.asset_materializations_for_node("exact_duplicates"):
        print(SKIP_MESSAGE)  # another run holds the store's lease (seed 000 §4.7: a skip, not an error)
        return 0
    data = _print_report(home, result.run_id)
    _print_retention(home, result.run_id)
    if data is None:
        print(f"error: run {result.run_id} failed before writing its report: {_failure_line(result)}", file=sys.stderr)
        return 1
    if not result.success:
        print(f"error: run {result.run_id}: {_failure_line(result)}", file=sys.stderr)
        return 1
    refresh_index(home)
    return 1 if data["verdict"] == "FAIL" else 0


def refresh_index(home: Path) -> None:
    """Search reads what a command wrote from an index that is current, not from a scan of the delta."""
    from memory_pipeline.search import refresh_index as bring_up_to_date

    print(bring_up_to_date(home), file=sys.stderr, flush=True)  # seed 000 §4.7: exit 1 on a FAIL verdict


def cmd_demo(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from memory_pipeline.sample_data import earlier_night, write_sample_jsonl
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_jsonl

    home = workspace_home()
    if home.exists() and any(home.iterdir()) and not (home / DEMO_MARKER).exists():
        print(f"{home} holds a workspace that is not the demo's; set MEMORY_PIPELINE_HOME elsewhere", file=sys.stderr)
        return 2
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    (home / DEMO_MARKER).write_text("built by `memory-pipeline demo`; safe to delete\n", encoding="utf-8")
    sample = REPO_ROOT / "data" / "sample" / "memories.jsonl"
    if not sample.parent.exists():
        sample = home / "sample-memories.jsonl"
    write_sample_jsonl(sample, datetime.now(UTC))
    summary = import_jsonl(MemoryStore(home / "memory.duckdb"), sample)
    print(f"sample workspace: {summary.memories} memories from {sample} into {home / 'memory.duckdb'}")
    done, archived = earlier_night(json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines())
    shipped = f"{done} summar{'y' if done == 1 else 'ies'} of an earlier night and the {archived} memories it archived"
    print(f"  among them {shipped}: `status` counts them with the night's own")
    from memory_pipeline.context.sample import install_sample_knowledge

    added = install_sample_knowledge(home)  # topics/, knowledge/identity, projects, people (seed 001 §2.2)
    print(f"sample knowledge: {len(added)} topic and knowledge files under {home}")
    from memory_pipeline.journals.cli import install_demo_transcripts

    install_demo_transcripts(home, REPO_ROOT / "data" / "sample")  # before the journal partitions are defined
    code = cmd_run(argparse.Namespace(dry_run=False, cluster_id="", as_of=""))
    from memory_pipeline.journals.cli import demo_journals

    code = max(code, demo_journals(home, REPO_ROOT / "data" / "sample"))  # the journal pipeline over them
    refresh_index(home)  # the journals, MEMORY.md and the Cores it wrote
    return code


def _import_validator() -> Validator:  # imported lazily to keep --help fast
    """The nightly run's own blocking invariants, so an import cannot bring in a state every later night fails."""
    from memory_pipeline.abstraction.violations import blocking_violations
    from memory_pipeline.resources import EngineConfig

    floor = EngineConfig.from_env().critical_floor
    return lambda con: blocking_violations(con, floor)


def cmd_import(args: argparse.Namespace) -> int:
    if getattr(args, "locomo_path", None) or args.path == "locomo":
        from memory_pipeline.journals.cli import import_locomo

        if args.path != "locomo" or not args.locomo_path:
            print("usage: memory-pipeline import PATH | import locomo PATH", file=sys.stderr)
            return 2
        return import_locomo(Path(args.locomo_path))
    home = workspace_home()
    home.mkdir(parents=True, exist_ok=True)
    line, imported = import_into(home, Path(args.path), skip_existing=args.skip_existing)
    print(line)
    if imported:
        refresh_index(home)
    return 0


def import_into(home: Path, path: Path, skip_existing: bool = False) -> tuple[str, int]:
    """Import a .jsonl/.ndjson, .parquet or SQLite file into the workspace's store, validated as the night
    validates: the line to print and how many memories came in. A rejected file raises a UserError and writes
    nothing."""
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_path

    summary = import_path(MemoryStore(home / "memory.duckdb"), path, skip_existing=skip_existing,
                          validate=_import_validator())  # fmt: skip
    skipped = f"; skipped {summary.skipped} already stored with identical content" if summary.skipped else ""
    empty = " (the file holds no records)" if not summary.memories and not summary.skipped else ""
    line = (f"imported {summary.memories} memories ({summary.embeddings} with vectors) from {summary.source}"
            f"{skipped}{empty}")  # fmt: skip
    return line, summary.memories


def cmd_status(args: argparse.Namespace) -> int:
    from memory_pipeline.store import MemoryStore

    home = workspace_home()
    path = home / "memory.duckdb"
    if not path.exists():
        print(f"no memory store in {home}", file=sys.stderr)
        return 2
    store = MemoryStore(path)
    store.migrate()
    with store.connect() as con:
        lifecycle = dict(con.execute("SELECT lifecycle, count(*) FROM memories GROUP BY 1 ORDER BY 1").fetchall())
        summaries = con.execute(
            "SELECT count(*) FROM memories WHERE kind = 'summary' AND lifecycle = 'active'"
        ).fetchall()
        atoms = con.execute("SELECT count(*), coalesce(avg(confidence), 0) FROM atoms").fetchall()[0]
        tokens = con.execute("SELECT coalesce(sum(token_count), 0) FROM memories WHERE lifecycle = 'active'").fetchall()
        finished = con.execute(
            "SELECT run_id, finished_at, verdict, report FROM consolidation_runs WHERE finished_at IS NOT NULL "
            "ORDER BY finished_at DESC LIMIT 1"
        ).fetchall()
        unfinished = con.execute(
            "SELECT run_id, started_at FROM consolidation_runs WHERE finished_at IS NULL "
            "AND started_at >= coalesce((SELECT max(finished_at) FROM consolidation_runs), TIMESTAMP '1970-01-01') "
            "ORDER BY started_at DESC LIMIT 1"
        ).fetchall()
    print(f"workspace     {home}")
    print(f"schema        v{store.schema_version()}")
    print("memories      " + (", ".join(f"{k}={v}" for k, v in lifecycle.items()) or "none"))
    print(f"summaries     {summaries[0][0]} active")
    print(f"atoms         {atoms[0]} (mean confidence {atoms[1]:.2f})")
    print(f"active tokens {tokens[0][0]}")
    for line in last_run_lines(finished, unfinished):
        print(line)
    from memory_pipeline.abstraction import grade, retention

    print(grade.status_line(json.loads(finished[0][3]) if finished and finished[0][3] else None))
    for line in retention.status_lines(retention.recent(home / "reports", 3)):
        print(line)
    return 0


def last_run_lines(finished: list[tuple], unfinished: list[tuple]) -> list[str]:
    """`status`'s run lines: the last finished run, and a later run that has not finished (running, or killed)."""
    lines = []
    if finished:
        run_id, at, verdict = finished[0][:3]
        lines.append(f"last run      {run_id} at {at:%Y-%m-%d %H:%M} UTC: {verdict or 'no verdict'}")
    else:
        lines.append("last run      none finished yet")
    if unfinished:
        run_id, started = unfinished[0]
        lines.append(
            f"unfinished    {run_id} started {started:%Y-%m-%d %H:%M} UTC: still running, or killed "
            "(the next run reconciles what it left)"
        )
    return lines


_store = open_store


def cmd_rollback(args: argparse.Namespace) -> int:
    from memory_pipeline.store import rollback as rb
    from memory_pipeline.store.lease import LeaseBusy
    from memory_pipeline.store.records import RecordError, parse_timestamp

    if args.since:
        try:
            since = parse_timestamp(args.since, "--since", "since")
        except RecordError:
            raise UserError(f"--since {args.since!r}: {AS_OF_HELP}") from None
    store = _store(workspace_home())
    if args.run_id:
        run_ids = [args.run_id]
    else:
        with store.connect() as con:
            run_ids = rb.runs_since(con, since)
        if not run_ids:
            print(f"nothing to roll back: no consolidation run started at or after {since:%Y-%m-%d %H:%M:%S} UTC")
            return 0
    try:
        rollback_id, plan = rb.rollback(store, run_ids, dry_run=args.dry_run)
    except (LeaseBusy, rb.RollbackRefused) as busy:
        print(f"cannot roll back now: {busy}", file=sys.stderr)
        return 1
    print("DRY RUN — nothing changed" if args.dry_run else f"rolled back ({rollback_id})")
    print("\n".join("  " + line for line in plan.describe()))
    if plan.empty:
        print("  nothing to roll back (already rolled back, or no such run)")
    return 0


def cmd_backups(args: argparse.Namespace) -> int:
    from memory_pipeline.store.backup import list_backups

    backups = list_backups(workspace_home() / "backups")
    if not backups:
        print("no backups yet (one is taken before every run's first write)")
    for b in backups:
        print(f"{b.created_at:%Y-%m-%d %H:%M:%S}  {b.size_bytes / 1e6:8.1f} MB  {b.path}")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    """Works on a damaged (or missing) store too: that is when a restore is needed most."""
    import duckdb

    from memory_pipeline.resources import EngineConfig
    from memory_pipeline.store import MemoryStore, lease
    from memory_pipeline.store.backup import restore
    from memory_pipeline.store.db import StoreError, StoreLocked, utcnow

    home = workspace_home()
    store = MemoryStore(home / "memory.duckdb")
    path = Path(args.backup)
    if not path.is_absolute() and not path.exists():
        path = home / "backups" / path
    try:
        if store.path.exists():
            with store.connect() as con:  # refuse while a run holds the lease; the restore replaces the file
                tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
                held = lease.current(con) if "leases" in tables else None
                beat = lease.read_beat(store.path, held.holder) if held is not None else None
                if held is not None and held.expires_at > utcnow() and lease.holder_alive(held, beat):
                    raise lease.LeaseBusy(held)
    except StoreLocked:
        raise
    except (StoreError, duckdb.Error):
        pass  # damaged: no run can be using it; restore saves its bytes before replacing it
    except lease.LeaseBusy as exc:
        print(f"error: cannot restore now: {exc}", file=sys.stderr)
        return 1
    safety = restore(store, path, home / "backups", EngineConfig.from_env().backups_keep)
    saved = f"the previous store is saved as {safety}" if safety else "there was no store before"
    print(f"restored {path} → {store.path} ({saved})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from memory_pipeline.settings import package_version

    parser = argparse.ArgumentParser(prog="memory-pipeline", description=__doc__)
    parser.add_argument(
        "--verbose", action="store_true", help="show Dagster's DEBUG log and library warnings (anywhere on the line)"
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "demo", help="build the sample workspace and run the nightly consolidation",
        description="Build a sample workspace in MEMORY_PIPELINE_HOME (sample memories, topic and knowledge files, "
        "session transcripts), run the nightly consolidation and the journal pipeline on it, and print the run "
        "report. It replaces an earlier demo workspace, and refuses a folder that holds anything else.",
    ).set_defaults(fn=cmd_demo)  # fmt: skip
    run = sub.add_parser(
        "run", help="run the nightly consolidation now",
        description="Run the nightly consolidation now on MEMORY_PIPELINE_HOME: cluster similar memories, write one "
        "summary per cluster, archive the sources, and print the run report. Exits 1 on a FAIL verdict; a night "
        "with nothing new to consolidate is a PASS.",
    )  # fmt: skip
    run.add_argument("--dry-run", action="store_true", help="scan and cluster only; write nothing")
    run.add_argument("--cluster-id", default="", help="re-run one cluster (ids from --dry-run)")
    run.add_argument("--as-of", default="", metavar="WHEN",
                     help="'now' for freshness and the fingerprint TTL: an ISO timestamp (2026-11-01T03:30:00Z) or "
                     "a date (2026-11-01, its midnight UTC); default the current time")  # fmt: skip
    run.set_defaults(fn=cmd_run)
    sub.add_parser(
        "status", help="what the store holds and how the last run went",
        description="Show the workspace, the store's schema version, its memories by lifecycle, active summaries, "
        "atoms and active tokens, the last finished consolidation with its verdict, and a later one that has not "
        "finished (still running, or killed).",
    ).set_defaults(fn=cmd_status)  # fmt: skip
    rollback = sub.add_parser("rollback", help="undo consolidation runs (nothing is deleted)")
    which = rollback.add_mutually_exclusive_group(required=True)
    which.add_argument("--run-id", help="one run")
    which.add_argument("--since", help="every run started at or after this ISO timestamp")
    rollback.add_argument("--dry-run", action="store_true", help="show what would change")
    rollback.set_defaults(fn=cmd_rollback)
    sub.add_parser("backups", help="list store snapshots (newest first)").set_defaults(fn=cmd_backups)
    restore = sub.add_parser("restore", help="put a snapshot back in place of the store")
    restore.add_argument("backup", help="path or file name from `memory-pipeline backups`")
    restore.set_defaults(fn=cmd_restore)
    imp = sub.add_parser(
        "import",
        help="import memories from .jsonl, .parquet or a SQLite brain.db",
        description="Import memories from a .jsonl/.ndjson, .parquet or SQLite (brain.db; .db/.sqlite/.sqlite3) "
        "file into the store.",
        epilog=(Path(__file__).parent / "store" / "import_format.md").read_text(encoding="utf-8"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    imp.add_argument("path", help="the file; or `locomo` followed by a LoCoMo JSON file (→ transcripts)")
    imp.add_argument("locomo_path", nargs="?", default=None, help=argparse.SUPPRESS)
    imp.add_argument(
        "--skip-existing",
        action="store_true",
        help="skip ids already stored with the same content and created_at (counted); a stored id whose content "
        "differs is still an error naming it",
    )
    imp.set_defaults(fn=cmd_import)
    for name in DOMAIN_CLIS:
        importlib.import_module(name).register(sub)
    _describe_from_help(parser)
    return parser


def _describe_from_help(parser: argparse.ArgumentParser) -> None:
    """A command's own --help opens with its description; one registered with only a `help=` line gets that
    line, so no `memory-pipeline COMMAND --help` starts with bare usage."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help for a in action._choices_actions}
        for name, sub in action.choices.items():
            line = helps.get(name)
            if not sub.description and isinstance(line, str) and line:
                sub.description = line[0].upper() + line[1:] + ("" if line.endswith(".") else ".")
            _describe_from_help(sub)


def _take_verbose(argv: list[str]) -> list[str]:
    """`--verbose` is global and may come anywhere before `--`; the environment carries it to run workers."""
    cut = argv.index("--") if "--" in argv else len(argv)
    if "--verbose" in argv[:cut]:
        os.environ[VERBOSE_ENV] = "1"
        argv = [a for a in argv[:cut] if a != "--verbose"] + argv[cut:]
    return argv


LIBRARY_NOTICES = ("BetaWarning", "PreviewWarning", "SupersessionWarning", "ExperimentalWarning")


def _quiet_library_warnings() -> None:
    """Dagster's beta/preview notices are for developers of this project, not for its users (see --verbose).
    Matched by class name and module when shown, so that a command which never touches Dagster (`search`,
    `agents list`) does not pay for importing it."""
    import warnings

    from memory_pipeline.settings import verbose

    if verbose():
        return
    show = warnings.showwarning

    def show_unless_notice(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if category.__name__ in LIBRARY_NOTICES and category.__module__.split(".")[0].startswith("dagster"):
            return
        show(message, category, *args, **kwargs)

    warnings.showwarning = show_unless_notice


# Arguments that are text, not file names: bytes that are not UTF-8 in them (Python keeps them as lone surrogates)
# could not be searched, printed or stored, so they are refused with one line naming the argument.
TEXT_ARGUMENTS = ("query", "message", "agent_output", "words")


def _not_utf8(args: argparse.Namespace) -> str:
    """'' when every text argument is UTF-8; else the one-line error."""
    for name in TEXT_ARGUMENTS:
        value = getattr(args, name, None)
        for text in value if isinstance(value, list) else [value]:
            if not isinstance(text, str):
                continue
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                char = ord(text[exc.start])
                byte = f"byte 0x{char - 0xDC00:02x}" if 0xDC80 <= char <= 0xDCFF else f"U+{char:04X}"
                return (f"the {name.replace('_', ' ')} argument is not valid UTF-8 text ({byte} at character "
                        f"{exc.start + 1}); pass it as UTF-8")  # fmt: skip
    return ""


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(_take_verbose(list(sys.argv[1:] if argv is None else argv)))
    if problem := _not_utf8(args):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        from memory_pipeline.operator.environment import check_environment

        check_environment()  # every setting, before any command starts: one line naming a malformed one
        _quiet_library_warnings()
        with visible_stdout():  # stored text's escape sequences are shown, not run by the terminal
            return int(args.fn(args))
    except BrokenPipeError:  # `status | head -1`: the reader left; say nothing more, as other commands do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush at exit must not fail again
        return 141
    except SettingsError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    except UserError as exc:  # the one place a user-fixable problem becomes a line instead of a traceback
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:
        if not type(exc).__module__.startswith(("duckdb", "_duckdb")):
            raise
        from memory_pipeline.store.db import RESTORE_HINT, first_line

        store = workspace_home() / "memory.duckdb"
        print(f"error: the memory store {store} failed: {first_line(exc)}; {RESTORE_HINT}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
