"""`memory-pipeline doctor --secrets`: checks of a workspace that no night runs. It says where a secret stored
before today's redaction rules lies (file, table and row, line, commit) and its kind — never the secret."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memory_pipeline.operator.instance import dagster_home_path
from memory_pipeline.settings import workspace_home

if TYPE_CHECKING:
    from memory_pipeline.operator.secrets_scan import Scan
    from memory_pipeline.operator.secrets_scrub import Derived

DESCRIPTION = (
    "Check the workspace. --secrets looks for keys, tokens, passwords and private keys with today's redaction "
    "rules everywhere the workspace keeps text: the memory store's tables, raw transcripts, Parquet files, the "
    "knowledge history in git, reports, backups and the run history in DAGSTER_HOME. Each finding is one line "
    "saying where it lies and what kind of secret it is, never the secret itself. Exits 1 when it finds any, "
    "2 when a place could not be read, 0 when the workspace is clean. With --scrub it rewrites each secret in place "
    "with the marker of its kind (the store, files, Parquet files and every commit of the knowledge history), "
    "keeps no copy of the old text, and scans again: it exits 0 only when that scan is clean."
)
SCRUB_HINT = (
    "to rewrite them in place, stop nights and run `memory-pipeline doctor --secrets --scrub`: each secret becomes "
    "the marker of its kind everywhere above, git history included (its commit ids change), and no copy of the old "
    "text is kept, so rotate each credential first"
)


def register(sub: argparse._SubParsersAction, derived: Callable[[], Sequence[Derived]] = tuple) -> None:
    """`derived`: the folders built from the rest of the workspace (the search index) and how to rebuild each,
    from the CLI that may reach them."""
    doctor = sub.add_parser("doctor", help="check the workspace: --secrets finds secrets stored before a rule "
                            "existed", description=DESCRIPTION)  # fmt: skip
    doctor.add_argument("--secrets", action="store_true", required=True,
                        help="scan every place the workspace keeps text for secrets, with today's rules")  # fmt: skip
    doctor.add_argument("--scrub", action="store_true",
                        help="rewrite every secret found in place, git history included, then scan again; "
                        "refused while a night holds the memory store")  # fmt: skip
    doctor.set_defaults(fn=cmd_doctor, derived=derived)


def summary_line(findings: int, areas: Counter[str], files: int, rows: int, commits: int) -> str:
    read = f"read {files} files, {rows} rows, {commits} commits"
    if not findings:
        return f"no secrets found ({read})"
    where = ", ".join(f"{area} {n}" for area, n in sorted(areas.items()))
    return f"{findings} secret{'s' if findings != 1 else ''} found: {where} ({read})"


def cmd_doctor(args: argparse.Namespace) -> int:
    from memory_pipeline.operator.secrets_scan import scan_workspace

    home = workspace_home()
    if not home.is_dir():
        print(f"error: no workspace at {home}: set MEMORY_PIPELINE_HOME to a workspace folder", file=sys.stderr)
        return 2
    if args.scrub:
        return _scrub(home, args.derived())
    scan = scan_workspace(home, dagster_home_path(home))
    code = _report(scan)
    if scan.findings:
        print(SCRUB_HINT)
    return code


def _report(scan: Scan) -> int:
    """Each finding and each place not read, the summary line, and the exit code they make."""
    for finding in scan.findings:
        print(finding.line())
    for problem in scan.problems:
        print(f"not read: {problem}", file=sys.stderr)
    print(summary_line(len(scan.findings), Counter(f.area for f in scan.findings), scan.files, scan.rows,
                       scan.commits))  # fmt: skip
    return 1 if scan.findings else 2 if scan.problems else 0


def _scrub(home: Path, derived: Sequence[Derived]) -> int:
    import os

    from memory_pipeline.operator.secrets_scrub import StoreBusy, scrub_workspace

    try:
        done = scrub_workspace(home, dagster_home_path(home), f"doctor-scrub-{os.getpid()}", derived)
    except StoreBusy as busy:
        print(f"error: cannot scrub now: {busy}", file=sys.stderr)
        return 1
    for place, n in sorted(done.scrubbed.items()):
        print(f"scrubbed {place}: {n} secret{'s' if n != 1 else ''}")
    for what in done.rebuilt:
        print(f"rebuilt {what} from the scrubbed workspace")
    for line in done.failed:
        print(f"not scrubbed: {line}", file=sys.stderr)
    for line in done.unsafe:
        print(f"not scrubbed: {line}", file=sys.stderr)
    print("scanned again:")
    return _report(done.after)
