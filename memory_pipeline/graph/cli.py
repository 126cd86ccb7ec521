"""`memory-pipeline usage record ID... | usage import FILE`: the agent reports which memories it put in
context, one by one or in bulk (seed 004 §9). No Dagster needed."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memory_pipeline.settings import env_overrides, workspace_home

if TYPE_CHECKING:  # imported lazily at run time, to keep --help fast
    from memory_pipeline.store import MemoryStore


def _store() -> MemoryStore:
    from memory_pipeline.store import MemoryStore

    home = workspace_home()
    if not home.is_dir():
        raise FileNotFoundError(
            f"workspace {home} does not exist: run `memory-pipeline demo` or set MEMORY_PIPELINE_HOME"
        )
    return MemoryStore(home / "memory.duckdb")


def _factor() -> float:
    return float(env_overrides().get("usage_decay", 0.95))


def _fail(exc: Exception) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return 1


def cmd_record(args: argparse.Namespace) -> int:
    from memory_pipeline.graph.usage_store import record_inclusions
    from memory_pipeline.store.records import parse_timestamp

    try:
        at = parse_timestamp(args.at, "--at", "at") if args.at else datetime.now(UTC).replace(tzinfo=None)
        result = record_inclusions(_store(), args.ids, at, args.count, _factor())
    except (ValueError, FileNotFoundError) as exc:  # ImportRejected and RecordError are ValueErrors
        return _fail(exc)
    print(f"recorded {result.events} inclusion(s) of {result.memories} memories on {at.date()}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from memory_pipeline.graph.usage_store import import_usage

    try:
        result = import_usage(_store(), Path(args.path), _factor())
    except (ValueError, FileNotFoundError) as exc:
        return _fail(exc)
    print(
        f"imported {result.events} inclusion event(s) for {result.memories} memories "
        f"({result.duplicates} already recorded, ignored)"
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    # usage decay is seed 004 §9
    usage = sub.add_parser("usage", help="record which memories the agent put in context (usage decay)")
    usub = usage.add_subparsers(dest="usage_command", required=True)
    rec = usub.add_parser("record", help="one inclusion for each memory id")
    rec.add_argument("ids", nargs="+", metavar="ID", help="memory ids (one inclusion each)")
    rec.add_argument("--at", default="", help="ISO time of the inclusion (default: now)")
    rec.add_argument("--count", type=int, default=1, help="inclusions per id (default 1)")
    rec.set_defaults(fn=cmd_record)
    imp = usub.add_parser("import", help="bulk import: .jsonl/.ndjson or .csv with memory_id, at[, count, event_id]")
    imp.add_argument("path", help="the .jsonl/.ndjson or .csv file")
    imp.set_defaults(fn=cmd_import)
