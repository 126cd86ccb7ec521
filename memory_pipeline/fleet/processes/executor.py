"""The fleet job's executor: dagster-celery's `celery_executor` on a Redis broker when one is configured, the
in-process executor otherwise (a single machine with no broker behaves as today).

The workers read the same variables through deploy/fleet/celery.yaml (`memory-pipeline fleet worker`), so the
runs and the workers agree on the broker without a second place to write it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_pipeline.settings import REPO_ROOT

if TYPE_CHECKING:  # Dagster is imported by the functions that build executors: the CLI reads only the names
    import dagster as dg

BROKER_ENV = "MEMORY_PIPELINE_CELERY_BROKER"  # redis://host:6379/0
PG_URL_ENV = "MEMORY_PIPELINE_PG_URL"
MAX_RUNS_ENV = "MEMORY_PIPELINE_MAX_CONCURRENT_RUNS"
# `steps` (default): the run worker sends each step to the workers (celery_executor). `runs`: each night is one
# Celery task (CeleryRunLauncher, deploy/fleet/dagster-runs-on-workers.yaml), its steps in-process there.
MODE_ENV = "MEMORY_PIPELINE_CELERY_MODE"
FLEET_ROOT_ENV = "MEMORY_PIPELINE_FLEET_ROOT"
DEPLOY_DIR = REPO_ROOT / "deploy" / "fleet"
INSTANCE_YAML = DEPLOY_DIR / "dagster.yaml"
RUNS_ON_WORKERS_YAML = DEPLOY_DIR / "dagster-runs-on-workers.yaml"
CELERY_YAML = DEPLOY_DIR / "celery.yaml"


def celery_settings(path: Path = CELERY_YAML) -> dict[str, Any]:
    """The Celery settings (`config_source`) of deploy/fleet/celery.yaml: no prefetch, late acknowledgement,
    a step's time limit, the broker's visibility timeout — what the workers run with, read from the same file."""
    import yaml

    raw = yaml.safe_load(path.read_text()) or {}
    return dict(raw.get("execution", {}).get("config", {}).get("config_source") or {})


def celery_config(broker: str) -> dict[str, Any]:
    """What deploy/fleet/celery.yaml resolves to: the broker, the results through the same Redis, its settings."""
    return {"broker": broker, "backend": broker, "config_source": celery_settings()}


def fleet_executor(environ: Mapping[str, str] | None = None) -> dg.ExecutorDefinition:
    """`celery_executor` when MEMORY_PIPELINE_CELERY_BROKER is set (read when the code location loads), else
    `in_process_executor`. Steps then run on whichever worker takes them, so they hand data over through the
    instance's artifact storage (DAGSTER_HOME/storage, on the shared fleet root)."""
    import dagster as dg

    environ = os.environ if environ is None else environ
    broker = environ.get(BROKER_ENV, "").strip()
    if not broker or celery_mode(environ) == "runs":
        return dg.in_process_executor
    from dagster_celery import celery_executor

    return celery_executor.configured(celery_config(broker), name="celery_executor")


def fleet_default_executor(environ: Mapping[str, str] | None = None) -> dg.ExecutorDefinition | None:
    """The executor of the location's other jobs (the fleet report, the search index's automation runs, assets
    launched from the UI's asset graph). With a task per night (`runs`) every run executes inside a Celery
    worker's pool process, which may not start the multiprocess executor's child processes (a daemonic process):
    in-process there. Otherwise None: Dagster's default, multiprocess in the run worker."""
    import dagster as dg

    return dg.in_process_executor if uses_celery(environ) and celery_mode(environ) == "runs" else None


def celery_mode(environ: Mapping[str, str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    mode = environ.get(MODE_ENV, "steps").strip() or "steps"
    if mode not in ("steps", "runs"):
        from memory_pipeline.errors import UserError

        raise UserError(f"{MODE_ENV}={mode!r}: expected `steps` (one Celery task per step) or `runs` (per night)")
    return mode


def instance_yaml(environ: Mapping[str, str] | None = None) -> Path:
    return RUNS_ON_WORKERS_YAML if celery_mode(environ) == "runs" else INSTANCE_YAML


def uses_celery(environ: Mapping[str, str] | None = None) -> bool:
    environ = os.environ if environ is None else environ
    return bool(environ.get(BROKER_ENV, "").strip())


def fleet_dagster_home(environ: Mapping[str, str] | None = None) -> Path:
    """DAGSTER_HOME when set, else <fleet root>/dagster_home: one instance directory every fleet process shares
    (artifact storage and compute logs live there, so a step's output is readable by the next step's worker)."""
    environ = os.environ if environ is None else environ
    if environ.get("DAGSTER_HOME"):
        return Path(environ["DAGSTER_HOME"])
    root = environ.get(FLEET_ROOT_ENV, "").strip()
    if not root:
        from memory_pipeline.errors import UserError

        raise UserError(f"set {FLEET_ROOT_ENV} (the directory every fleet machine shares) or DAGSTER_HOME")
    return Path(root) / "dagster_home"
