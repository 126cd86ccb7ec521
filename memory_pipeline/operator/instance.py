"""What every CLI command that launches Dagster runs shares: the persistent DAGSTER_HOME beside the workspace,
the tags naming the launching process, recovery of runs whose process died, and opening the store."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_pipeline.operator.recovery import HOST_TAG as HOST_TAG  # re-exported for the CLIs
from memory_pipeline.operator.recovery import PID_TAG as PID_TAG
from memory_pipeline.settings import REPO_ROOT

if TYPE_CHECKING:
    from memory_pipeline.store import MemoryStore

WORKSPACE_YAML = REPO_ROOT / "workspace.yaml"
REPOSITORY = "__repository__"  # the name Dagster gives the repository of a `Definitions` object


def job_origin(job_name: str, workspace_yaml: Path = WORKSPACE_YAML) -> Any:
    """The origin the UI gives a run of `job_name` in the code location `workspace.yaml` loads. A CLI run
    created with it is filed under that location's job: the Jobs page, the timeline and re-execution find it
    (a plain in-process run has no origin and shows on the Runs page only)."""
    from dagster._core.remote_origin import RemoteRepositoryOrigin
    from dagster._core.workspace.load import location_origins_from_yaml_paths

    [location] = location_origins_from_yaml_paths([str(workspace_yaml)])
    return RemoteRepositoryOrigin(code_location_origin=location, repository_name=REPOSITORY).get_job_origin(job_name)


@contextmanager
def filed_under_location(instance: Any) -> Iterator[Any]:
    """While open, every run this process creates on `instance` (`execute_in_process`, `execute_job`) carries the
    origin of its job in the code location (`job_origin`), as a run launched from the UI does."""
    create = instance.create_run_for_job

    def create_with_origin(*args: Any, **kwargs: Any) -> Any:
        job_def = kwargs.get("job_def", args[0] if args else None)
        if kwargs.get("remote_job_origin") is None and job_def is not None:
            kwargs["remote_job_origin"] = job_origin(job_def.name)
        return create(*args, **kwargs)

    instance.create_run_for_job = create_with_origin
    try:
        yield instance
    finally:
        del instance.create_run_for_job  # the class's method again


def home_line(path: Path) -> str:
    """The one line the CLI's run commands and `memory-pipeline ui` print: where the run history they share is."""
    return f"DAGSTER_HOME {path} (run history shared by the CLI and `memory-pipeline ui`)"


@contextmanager
def cli_instance(home: Path, *, announce: bool = True) -> Iterator[Any]:
    """The persistent instance beside `home` (`dagster_home`), its path said on stderr unless `announce` is
    False, with the runs created through it filed under the code location (`filed_under_location`)."""
    import dagster as dg

    path = dagster_home(home)
    if announce:
        say(home_line(path))
    with dg.DagsterInstance.get() as instance, filed_under_location(instance):
        yield instance


def dagster_home(home: Path) -> Path:
    """A persistent instance beside the workspace, so run history survives `dagster dev` restarts."""
    dagster_home = dagster_home_path(home)
    os.environ["DAGSTER_HOME"] = str(dagster_home)  # absolute: the same instance from any directory
    dagster_home.mkdir(parents=True, exist_ok=True)
    sync_config(dagster_home / "dagster.yaml", REPO_ROOT / "dagster.yaml")
    return dagster_home


def dagster_home_path(home: Path) -> Path:
    """Where the run history of `home` lies ($DAGSTER_HOME, else `dagster_home` beside the workspace), without
    creating it."""
    if os.environ.get("DAGSTER_HOME"):
        return Path(os.environ["DAGSTER_HOME"]).expanduser().resolve()
    return home.resolve().parent / "dagster_home"


def sync_config(config: Path, template: Path) -> None:
    """DAGSTER_HOME's dagster.yaml is the repository's: copied on first use, and replaced (saying so, the old one
    kept beside it) when the repository's changed and the copy still starts with its header line. A file of the
    operator's own (another first line) is left as it is."""
    if not template.exists():
        return
    if not config.exists():
        shutil.copyfile(template, config)
        return
    new, old = template.read_text(encoding="utf-8"), config.read_text(encoding="utf-8")
    if new == old or old.partition("\n")[0] != new.partition("\n")[0]:
        return
    shutil.copyfile(config, config.with_name("dagster.yaml.previous"))
    shutil.copyfile(template, config)
    say(f"updated {config} from the repository's dagster.yaml (the previous one is dagster.yaml.previous)")


def recover_dead_cli_runs(instance: Any, home: Path | None = None) -> None:
    """Before a CLI launch: free the store pool's slots of runs that are gone (killed here or on another host,
    or ended), and wait — saying for whom, at most MEMORY_PIPELINE_POOL_WAIT_MINUTES — while a live run holds
    one, instead of letting Dagster wait silently; see memory_pipeline.operator.recovery."""
    from memory_pipeline.operator.recovery import free_stale, wait_for_pool
    from memory_pipeline.settings import pool_wait_seconds, workspace_home
    from memory_pipeline.store.lease import POOL

    path = store_path(home or workspace_home())
    for other in sorted(set(instance.event_log_storage.get_concurrency_keys()) - {POOL}):  # e.g. the tier pool
        free_stale(instance, other, path, lease_ttl(), say)
    wait_for_pool(instance, POOL, path, ttl=lease_ttl(), timeout_s=pool_wait_seconds(), log=say)


def store_path(home: Path | None) -> Path | None:
    return None if home is None else home / "memory.duckdb"


def lease_ttl() -> timedelta:
    from memory_pipeline.settings import env_overrides

    return timedelta(hours=float(env_overrides().get("lease_ttl_hours", 6.0)))


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def open_store(home: Path) -> MemoryStore:
    """The workspace's store, migrated; exits with one line when there is none."""
    from memory_pipeline.store import MemoryStore

    path = home / "memory.duckdb"
    if not path.exists():
        raise SystemExit(f"no memory store in {home}")
    store = MemoryStore(path)
    store.migrate()
    return store
