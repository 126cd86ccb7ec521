"""Named crash points for fault-injection tests: MEMORY_PIPELINE_CRASH_AT=<name> SIGKILLs the process there.

Unset (always, in production) it costs one environment lookup."""

import errno
import os
import signal
import time

ENV = "MEMORY_PIPELINE_CRASH_AT"
POINTS = ("after_phase1", "inside_phase2", "writing_report", "inside_import", "flush_after_transcript",
          "flush_before_record",
          "journals_step", "memory_md_step")


def crash_point(name: str) -> None:
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


# Hold points: MEMORY_PIPELINE_HOLD_AT=<name>:<folder> makes the process stop there, create
# <folder>/<name>.reached and wait until <folder>/<name>.release exists (HOLD_LIMIT_S at most, so a test that
# forgets to release never leaves a process hanging; it then writes <folder>/<name>.gave_up). A test uses it to
# keep a call in flight for as long as it needs, and to know for sure that it is in flight, without depending on
# how fast the machine is.
HOLD_ENV = "MEMORY_PIPELINE_HOLD_AT"
HOLD_POINTS = ("mcp_context", "mcp_write", "night_lease_held", "night_phase1")
HOLD_LIMIT_S = 120.0
HOLD_LIMIT_ENV = "MEMORY_PIPELINE_HOLD_LIMIT_S"  # a longer limit for a test that keeps a night parked on purpose


def hold_point(name: str, scope: str = "") -> None:
    """`scope` (e.g. a workspace's folder name) lets `<name>@<scope>:<folder>` hold one agent's night only."""
    spec = os.environ.get(HOLD_ENV, "")
    point, _, folder = spec.partition(":")
    wanted, _, wanted_scope = point.partition("@")
    if wanted != name or not folder or (wanted_scope and wanted_scope != scope):
        return
    from pathlib import Path

    (Path(folder) / f"{name}.reached").touch()
    release = Path(folder) / f"{name}.release"
    deadline = time.monotonic() + float(os.environ.get(HOLD_LIMIT_ENV) or HOLD_LIMIT_S)
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not release.exists():
        (Path(folder) / f"{name}.gave_up").touch()  # the test can tell a release from the limit


# Failure points: MEMORY_PIPELINE_FAIL_AT=<name> makes the write there fail as on a full disk (OSError ENOSPC), so
# a test can check what a command leaves behind when the disk fills up half-way, without filling a disk.
FAIL_ENV = "MEMORY_PIPELINE_FAIL_AT"
FAIL_POINTS = ("agent_add_write", "scrub_replace", "scrub_database", "scrub_git")


def fail_point(name: str) -> None:
    if os.environ.get(FAIL_ENV) == name:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
