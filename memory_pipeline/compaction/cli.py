"""`memory-pipeline compact [--approve] [--dry-run] [--as-of ISO]` — the tiered_compaction job, from a shell."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compact",
        help="tiered compaction of memory/: evaluate the triggers, act only when one is met",
    )
    p.add_argument(
        "--approve",
        action="store_true",
        help="explicit APPROVED: Tier C (semantic above 1020/1200 tokens), first run, cooldown, duplicate titles",
    )
    p.add_argument("--dry-run", action="store_true", help="evaluate and report what would happen; change nothing")
    p.add_argument("--as-of", default="", metavar="WHEN",
                   help="'now' for file ages and the cooldown: an ISO timestamp (2026-11-01T03:30:00Z) or a date "
                   "(2026-11-01, its midnight UTC); default the current time")  # fmt: skip
    p.set_defaults(fn=cmd_compact)


def cmd_compact(args: argparse.Namespace) -> int:
    import os
    import socket

    import dagster as dg

    from memory_pipeline.definitions import defs_with
    from memory_pipeline.defs.compaction.partitions import partition_for
    from memory_pipeline.operator.instance import HOST_TAG, PID_TAG, cli_instance
    from memory_pipeline.operator.instance import recover_dead_cli_runs as _recover_dead_cli_runs
    from memory_pipeline.resources import EngineConfig
    from memory_pipeline.resources.defaults import default_resources
    from memory_pipeline.settings import check_as_of, workspace_home

    check_as_of(args.as_of)  # a bad clock is one line, not a traceback
    home = workspace_home()
    if not home.is_dir():
        print(f"workspace {home} does not exist: set MEMORY_PIPELINE_HOME", file=sys.stderr)
        return 2
    defs = defs_with(default_resources(str(home), as_of=args.as_of))
    job = defs.resolve_job_def("tiered_compaction")
    config = {"approved": args.approve, "dry_run": args.dry_run, "as_of": args.as_of, "trigger": "cli"}
    run_config = {
        "loggers": {"console": {"config": {"log_level": "WARNING"}}},
        "ops": {"tier_volumes": {"config": config}},
    }
    tags = {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname(), "memory_pipeline/compaction_requested_by": "cli"}
    with cli_instance(home) as instance:
        _recover_dead_cli_runs(instance)
        result = job.execute_in_process(
            instance=instance,
            run_config=run_config,
            partition_key=partition_for(EngineConfig.from_env(as_of=args.as_of).now()),
            raise_on_error=False,
            tags=tags,
        )
    text = home / "reports" / f"compaction-{result.run_id}.md"
    if text.exists():
        print(text.read_text(encoding="utf-8"), end="")
        print(f"report: {text.with_suffix('.json')}")
    failed = [e for e in result.get_asset_check_evaluations() if not e.passed]
    for e in failed:
        print(f"check {e.check_name} failed ({e.severity.value})", file=sys.stderr)
    if not result.success or not text.exists():
        print(f"compaction run {result.run_id} failed; see the log above", file=sys.stderr)
        return 1
    return 1 if any(e.severity == dg.AssetCheckSeverity.ERROR for e in failed) else 0
