"""`memory-pipeline …`: the same Dagster jobs the schedules run, from a shell (domains add their commands)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from memory_pipeline.settings import SettingsError, workspace_home
from memory_pipeline.store.lease import SKIP_MESSAGE

DEMO_MARKER = ".memory_pipeline_demo"
# Domain CLIs: each module has `register(sub: argparse._SubParsersAction) -> None` and imports Dagster lazily.
DOMAIN_CLIS: tuple[str, ...] = (
    "memory_pipeline.graph.cli",
    "memory_pipeline.rollups.cli",
    "memory_pipeline.operator.cli",
    "memory_pipeline.journals.cli",
    "memory_pipeline.compaction.cli",
    "memory_pipeline.search.cli",
)
REPO_ROOT = Path(__file__).resolve().parent.parent


def _dagster_home(home: Path) -> Path:
    """A persistent instance beside the workspace, so run history survives `dagster dev` restarts."""
    if os.environ.get("DAGSTER_HOME"):
        dagster_home = Path(os.environ["DAGSTER_HOME"])
    else:
        dagster_home = home.parent / "dagster_home"
        os.environ["DAGSTER_HOME"] = str(dagster_home)
    dagster_home.mkdir(parents=True, exist_ok=True)
    config = dagster_home / "dagster.yaml"
    template = REPO_ROOT / "dagster.yaml"
    if not config.exists() and template.exists():
        shutil.copyfile(template, config)
    return dagster_home


PID_TAG, HOST_TAG = "memory_pipeline/pid", "memory_pipeline/host"


def _recover_dead_cli_runs(instance: Any) -> None:
    """A CLI run killed mid-way stays STARTED in the instance and keeps its concurrency-pool slot, which
    would block every later run. Runs we launched carry pid/host tags: fail those whose process is gone
    and free their slots (the daemon's run monitoring does this for runs it launched)."""
    import socket

    import dagster as dg

    from memory_pipeline.store.lease import Lease, pid_alive

    host = socket.gethostname()
    unfinished = instance.get_runs(
        filters=dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING], tags={HOST_TAG: host}
        )
    )
    for run in unfinished:
        pid = int(run.tags.get(PID_TAG, "0") or 0)
        if pid and not pid_alive(Lease("", run.run_id, pid, host, None, None)):  # type: ignore[arg-type]
            instance.report_run_failed(run, "process died (killed) — marked failed by memory-pipeline")
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)


def _run_job(home: Path, job_name: str, run_config: dict[str, Any], as_of: str = "") -> Any:
    import socket

    import dagster as dg

    from memory_pipeline.definitions import build_definitions, default_resources

    _dagster_home(home)
    defs = build_definitions(default_resources(str(home), as_of=as_of))
    job = defs.resolve_job_def(job_name)
    config = {"loggers": {"console": {"config": {"log_level": "INFO"}}}, **run_config}
    tags = {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}
    with dg.DagsterInstance.get() as instance:
        _recover_dead_cli_runs(instance)
        from memory_pipeline.operator.progress import progress_for  # a bar on stderr when it is a terminal

        with progress_for(instance, job, config) as (run_id, config):
            return job.execute_in_process(
                instance=instance, run_config=config, raise_on_error=False, tags=tags, run_id=run_id
            )


def _print_report(home: Path, run_id: str) -> dict[str, Any] | None:
    from memory_pipeline.abstraction.report import report_from_dict, summary_lines

    path = home / "reports" / f"compression-{run_id}.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    print("\n".join(summary_lines(report_from_dict(data))))
    print(f"  report               {path}")
    return data


def cmd_run(args: argparse.Namespace) -> int:
    home = workspace_home()
    if not (home / "memory.duckdb").exists():
        print(
            f"no memory store in {home}: run `memory-pipeline demo` or `memory-pipeline import PATH`", file=sys.stderr
        )
        return 2
    if args.dry_run:
        result = _run_job(home, "consolidation_dry_run", {}, args.as_of)
        if not result.success:
            print("dry run failed; see the log above", file=sys.stderr)
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
    if data is None:
        print(f"run {result.run_id} failed before writing its report; see the log above", file=sys.stderr)
        return 1
    if not result.success:
        print("some steps or blocking checks failed; see the log above", file=sys.stderr)
        return 1
    return 1 if data["verdict"] == "FAIL" else 0  # seed 000 §4.7: exit 1 on a FAIL verdict


def cmd_demo(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from memory_pipeline.sample_data import write_sample_jsonl
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
    code = cmd_run(argparse.Namespace(dry_run=False, cluster_id="", as_of=""))
    from memory_pipeline.journals.cli import demo_journals

    return max(code, demo_journals(home, REPO_ROOT / "data" / "sample"))


def cmd_import(args: argparse.Namespace) -> int:
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_path
    from memory_pipeline.store.records import ImportRejected

    if getattr(args, "locomo_path", None) or args.path == "locomo":
        from memory_pipeline.journals.cli import import_locomo

        if args.path != "locomo" or not args.locomo_path:
            print("usage: memory-pipeline import PATH | import locomo PATH", file=sys.stderr)
            return 2
        return import_locomo(Path(args.locomo_path))
    home = workspace_home()
    home.mkdir(parents=True, exist_ok=True)
    try:
        summary = import_path(MemoryStore(home / "memory.duckdb"), Path(args.path))
    except (ImportRejected, FileNotFoundError, ValueError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(f"imported {summary.memories} memories ({summary.embeddings} with vectors) from {summary.source}")
    return 0


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
        last = con.execute(
            "SELECT run_id, finished_at, verdict FROM consolidation_runs ORDER BY finished_at DESC LIMIT 1"
        ).fetchall()
    print(f"workspace     {home}")
    print(f"schema        v{store.schema_version()}")
    print("memories      " + ", ".join(f"{k}={v}" for k, v in lifecycle.items()))
    print(f"summaries     {summaries[0][0]} active")
    print(f"atoms         {atoms[0]} (mean confidence {atoms[1]:.2f})")
    print(f"active tokens {tokens[0][0]}")
    if last:
        print(f"last run      {last[0][0]} at {last[0][1]:%Y-%m-%d %H:%M} UTC: {last[0][2]}")
    else:
        print("last run      none")
    return 0


def _store(home: Path):  # noqa: ANN202 - a MemoryStore; imported lazily to keep --help fast
    from memory_pipeline.store import MemoryStore

    path = home / "memory.duckdb"
    if not path.exists():
        raise SystemExit(f"no memory store in {home}")
    store = MemoryStore(path)
    store.migrate()
    return store


def cmd_rollback(args: argparse.Namespace) -> int:
    from memory_pipeline.store import rollback as rb
    from memory_pipeline.store.lease import LeaseBusy
    from memory_pipeline.store.records import RecordError, parse_timestamp

    store = _store(workspace_home())
    if args.run_id:
        run_ids = [args.run_id]
    else:
        try:
            since = parse_timestamp(args.since, "--since", "since")
        except RecordError as exc:
            print(str(exc), file=sys.stderr)
            return 2
        with store.connect() as con:
            run_ids = rb.runs_since(con, since)
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
    from memory_pipeline.resources import EngineConfig
    from memory_pipeline.store import lease
    from memory_pipeline.store.backup import restore
    from memory_pipeline.store.db import utcnow

    home = workspace_home()
    store = _store(home)
    path = Path(args.backup)
    if not path.is_absolute() and not path.exists():
        path = home / "backups" / path
    try:
        with store.transaction() as con:  # refuse while a run holds the lease; the restore replaces the file
            held = lease.current(con)
            if held is not None and held.expires_at > utcnow() and lease.pid_alive(held):
                raise lease.LeaseBusy(held)
        safety = restore(store, path, home / "backups", EngineConfig.from_env().backups_keep)
    except (FileNotFoundError, lease.LeaseBusy) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(f"restored {path} → {store.path} (the previous store is saved as {safety})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memory-pipeline", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="build the sample workspace and run the nightly consolidation").set_defaults(
        fn=cmd_demo
    )
    run = sub.add_parser("run", help="run the nightly consolidation now")
    run.add_argument("--dry-run", action="store_true", help="scan and cluster only; write nothing")
    run.add_argument("--cluster-id", default="", help="re-run one cluster (ids from --dry-run)")
    run.add_argument("--as-of", default="", help="ISO timestamp to use as 'now' (freshness, TTL)")
    run.set_defaults(fn=cmd_run)
    sub.add_parser("status", help="what the store holds and how the last run went").set_defaults(fn=cmd_status)
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
    imp = sub.add_parser("import", help="import memories from .jsonl, .parquet or a SQLite brain.db")
    imp.add_argument("path", help="the file; or `locomo` followed by a LoCoMo JSON file (→ transcripts)")
    imp.add_argument("locomo_path", nargs="?", default=None, help=argparse.SUPPRESS)
    imp.set_defaults(fn=cmd_import)
    for name in DOMAIN_CLIS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except SettingsError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
