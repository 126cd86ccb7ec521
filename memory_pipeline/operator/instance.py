"""What every CLI command that launches Dagster runs shares: the persistent DAGSTER_HOME beside the workspace,
the tags naming the launching process, recovery of runs whose process died, and opening the store."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_pipeline.settings import REPO_ROOT

if TYPE_CHECKING:
    from memory_pipeline.store import MemoryStore

PID_TAG, HOST_TAG = "memory_pipeline/pid", "memory_pipeline/host"


def dagster_home(home: Path) -> Path:
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


def recover_dead_cli_runs(instance: Any) -> None:
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


def open_store(home: Path) -> MemoryStore:
    """The workspace's store, migrated; exits with one line when there is none."""
    from memory_pipeline.store import MemoryStore

    path = home / "memory.duckdb"
    if not path.exists():
        raise SystemExit(f"no memory store in {home}")
    store = MemoryStore(path)
    store.migrate()
    return store
