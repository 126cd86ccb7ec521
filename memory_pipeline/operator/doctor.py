"""`memory-pipeline doctor --secrets`: checks of a workspace that no night runs. It says where a secret stored
before today's redaction rules lies (file, table and row, line, commit) and its kind — never the secret."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from memory_pipeline.operator.instance import dagster_home_path
from memory_pipeline.settings import workspace_home

DESCRIPTION = (
    "Check the workspace. --secrets looks for keys, tokens, passwords and private keys with today's redaction "
    "rules everywhere the workspace keeps text: the memory store's tables, raw transcripts, Parquet files, the "
    "knowledge history in git, reports, backups and the run history in DAGSTER_HOME. Each finding is one line "
    "saying where it lies and what kind of secret it is, never the secret itself. Exits 1 when it finds any, "
    "2 when a place could not be read, 0 when the workspace is clean."
)


def register(sub: argparse._SubParsersAction) -> None:
    doctor = sub.add_parser("doctor", help="check the workspace: --secrets finds secrets stored before a rule "
                            "existed", description=DESCRIPTION)  # fmt: skip
    doctor.add_argument("--secrets", action="store_true", required=True,
                        help="scan every place the workspace keeps text for secrets, with today's rules")  # fmt: skip
    doctor.set_defaults(fn=cmd_doctor)


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
    scan = scan_workspace(home, dagster_home_path(home))
    for finding in scan.findings:
        print(finding.line())
    for problem in scan.problems:
        print(f"not read: {problem}", file=sys.stderr)
    print(summary_line(len(scan.findings), Counter(f.area for f in scan.findings), scan.files, scan.rows,
                       scan.commits))  # fmt: skip
    return 1 if scan.findings else 2 if scan.problems else 0
