"""The runs-mode health check (memory_pipeline/fleet/processes/liveness.py) against a real redis-server, with the states
Celery's worker writes into the result backend: a night whose worker answers no ping is RUNNING for
lost_after_checks − 1 checks, then FAILED naming the worker (and its task revoked); a task that ended while its run
did not is FAILED at once, and so is one whose pool process changed (its requeued copy started). The live-worker
side is exercised by the slow fleet test (test_fleet_readme.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster._core.launcher import WorkerStatus
from dagster._core.storage.dagster_run import DagsterRun
from dagster_celery.tags import DAGSTER_CELERY_TASK_ID_TAG

from memory_pipeline.fleet.processes import servers
from memory_pipeline.fleet.processes.liveness import FleetCeleryRunLauncher


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    try:
        servers.redis_bin()
    except Exception as exc:  # UserError: names the package to install
        pytest.skip(str(exc))
    redis = servers.start_redis(tmp_path_factory.mktemp("redis"))
    try:
        yield redis.url
    finally:
        redis.stop()


def _launcher(url: str, lost_after_checks: int = 2) -> FleetCeleryRunLauncher:
    """Built as the instance builds it from dagster.yaml: the config checked and its defaults filled in."""
    from dagster._config import process_config

    config = process_config(FleetCeleryRunLauncher.config_type(),
                            {"broker": url, "backend": url, "lost_after_checks": lost_after_checks,
                             "ping_timeout_seconds": 1})
    assert config.success, config.errors
    return FleetCeleryRunLauncher.from_config_value(None, dict(config.value))  # type: ignore[arg-type]


def _run(task_id: str) -> DagsterRun:
    return DagsterRun(job_name="agent_night", run_id=f"run-{task_id}", tags={DAGSTER_CELERY_TASK_ID_TAG: task_id})


def test_a_night_whose_worker_answers_no_ping_is_failed_after_the_set_number_of_checks(redis_url: str) -> None:
    launcher = _launcher(redis_url)
    backend = launcher.celery.backend
    # what a worker's main process writes when its pool child starts the task (track_started)
    backend.store_result("t-lost", {"pid": 4242, "hostname": "w9@gone"}, "STARTED")
    first = launcher.check_run_worker_health(_run("t-lost"))
    assert first.status == WorkerStatus.RUNNING and "w9@gone did not answer (1/2)" in (first.msg or "")
    second = launcher.check_run_worker_health(_run("t-lost"))
    assert second.status == WorkerStatus.FAILED
    assert "w9@gone" in (second.msg or "") and "lost" in (second.msg or "")
    # the count starts again for the next night on that worker
    assert launcher.check_run_worker_health(_run("t-lost")).status == WorkerStatus.RUNNING


def test_a_task_that_ended_while_its_run_did_not_is_failed_and_a_failed_task_too(redis_url: str) -> None:
    launcher = _launcher(redis_url)
    backend = launcher.celery.backend
    backend.store_result("t-ignored", 0, "SUCCESS")  # the requeued copy that Dagster ignored as a duplicate
    ended = launcher.check_run_worker_health(_run("t-ignored"))
    assert ended.status == WorkerStatus.FAILED and "ended but the run did not" in (ended.msg or "")
    backend.mark_as_failure("t-failed", RuntimeError("boom"))
    assert launcher.check_run_worker_health(_run("t-failed")).status == WorkerStatus.FAILED
    # not on the broker's books yet (PENDING): left to run monitoring's start timeout, as dagster-celery does
    assert launcher.check_run_worker_health(_run("t-unknown")).status == WorkerStatus.UNKNOWN


def test_a_night_whose_pool_process_died_is_failed_once_its_requeued_copy_starts(redis_url: str) -> None:
    launcher = _launcher(redis_url, lost_after_checks=5)  # the ping alone would wait 5 checks
    backend = launcher.celery.backend
    backend.store_result("t-pool", {"pid": 4242, "hostname": "w9@gone"}, "STARTED")
    assert launcher.check_run_worker_health(_run("t-pool")).status == WorkerStatus.RUNNING
    # the pool process was killed: the worker requeued the task and started it again in a new pool process
    backend.store_result("t-pool", {"pid": 4343, "hostname": "w9@gone"}, "STARTED")
    failed = launcher.check_run_worker_health(_run("t-pool"))
    assert failed.status == WorkerStatus.FAILED, failed.msg
    assert "pid 4242" in (failed.msg or "") and "pid 4343" in (failed.msg or "") and "w9@gone" in (failed.msg or "")


def test_the_launcher_is_what_the_runs_variant_installs(tmp_path: Path) -> None:
    import yaml

    from memory_pipeline.fleet.processes.executor import RUNS_ON_WORKERS_YAML

    raw = yaml.safe_load(RUNS_ON_WORKERS_YAML.read_text())["run_launcher"]
    assert f"{raw['module']}.{raw['class']}" == f"{FleetCeleryRunLauncher.__module__}.FleetCeleryRunLauncher"


def test_the_pool_process_is_the_one_that_started_the_run(redis_url: str) -> None:
    """The pid the check compares with is the run's own (its RUN_START event, written by the pool process that ran
    it), so a copy started before the first check is caught too."""
    import dagster as dg
    from dagster._core.events import DagsterEvent, DagsterEventType

    launcher = _launcher(redis_url, lost_after_checks=5)
    backend = launcher.celery.backend
    with dg.instance_for_test() as instance:
        launcher.register_instance(instance)
        run = instance.add_run(_run("t-copy"))
        instance.report_dagster_event(DagsterEvent(DagsterEventType.RUN_START.value, job_name="agent_night", pid=4242),
                                      run.run_id)
        assert launcher.run_pid(run) == 4242
        backend.store_result("t-copy", {"pid": 4343, "hostname": "w9@gone"}, "STARTED")  # the requeued copy
        failed = launcher.check_run_worker_health(run)
        assert failed.status == WorkerStatus.FAILED and "pid 4242" in (failed.msg or ""), failed.msg
