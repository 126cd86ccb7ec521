"""`memory-pipeline reconstruct` and `memory-pipeline import locomo PATH` (Dagster imported lazily)."""

from __future__ import annotations

import argparse
import sys
from datetime import date
from pathlib import Path

from memory_pipeline.settings import workspace_home


def _date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected YYYY-MM-DD, got {value!r}") from None


def cmd_reconstruct(args: argparse.Namespace) -> int:
    import dagster as dg

    from memory_pipeline.journals.extractors import select
    from memory_pipeline.journals.reconstruct import reconstruct
    from memory_pipeline.operator.instance import dagster_home as _dagster_home
    from memory_pipeline.operator.instance import recover_dead_cli_runs as _recover_dead_cli_runs

    home = workspace_home()
    if not (home / "raw" / "conversations").is_dir():
        print(f"no transcripts in {home / 'raw' / 'conversations'}", file=sys.stderr)
        return 2
    try:
        select(args.extractor)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    _dagster_home(home)
    which = ", ".join(args.extractor) if args.extractor else "all extractors"
    print(f"reconstructing {args.start}..{args.end} ({which}) in {home}")
    with dg.DagsterInstance.get() as instance:
        _recover_dead_cli_runs(instance)
        try:
            result = reconstruct(
                instance, args.start, args.end, args.extractor, multiprocess=not args.in_process,
                weekly=not args.no_weekly,
            )
        except ValueError as exc:
            print(str(exc), file=sys.stderr)
            return 2
    print(f"{len(result.days)} day(s), {len(result.weeks)} week(s) rebuilt; {len(result.failed)} failed")
    for key in result.failed:
        print(f"failed: {key}: {result.errors.get(key, '')}", file=sys.stderr)
    return 1 if result.failed else 0


def import_locomo(path: Path, conversations: list[str] | None = None) -> int:
    from memory_pipeline.journals.locomo import LocomoError, locomo_to_transcripts

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
    rec.add_argument("--from", dest="start", type=_date, required=True, help="first day, YYYY-MM-DD")
    rec.add_argument("--to", dest="end", type=_date, required=True, help="last day, YYYY-MM-DD")
    rec.add_argument("--extractor", action="append", help="only this extractor (repeatable); default all")
    rec.add_argument("--in-process", action="store_true", help="run the steps in this process (default: one each)")
    rec.add_argument("--no-weekly", action="store_true", help="skip the weekly MEMORY.md rollup")
    rec.set_defaults(fn=cmd_reconstruct)


def demo_journals(home: Path, sample_root: Path, in_process: bool = True) -> int:
    """The demo's second half: the sample transcripts into the workspace, then the journal pipeline over them."""
    import shutil

    import dagster as dg

    from memory_pipeline.journals.reconstruct import reconstruct
    from memory_pipeline.journals.sample_transcripts import DAYS, START, write_sample_transcripts

    raw = sample_root / "raw"
    if raw.is_dir():
        shutil.copytree(raw, home / "raw", dirs_exist_ok=True)
    else:
        write_sample_transcripts(home)
    last = START.fromordinal(START.toordinal() + DAYS - 1)
    print(f"journals: sample transcripts {START}..{last} → knowledge/journal, knowledge/memory/MEMORY.md")
    with dg.DagsterInstance.get() as instance:
        result = reconstruct(instance, START, last, multiprocess=not in_process, echo=lambda _line: None)
    print(f"journals: {len(result.days)} day(s), {len(result.weeks)} week(s); {len(result.failed)} failed")
    for key in result.failed:
        print(f"journals: {key} failed: {result.errors.get(key, '')}", file=sys.stderr)
    return 1 if result.failed else 0
