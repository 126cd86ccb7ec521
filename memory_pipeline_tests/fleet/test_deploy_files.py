"""The fleet's deployment files, checked by the code that will read them: deploy/fleet/dagster.yaml by Dagster's
own instance-config validation, celery.yaml by dagster-celery's worker loader, the Helm values against the part
of the chart's schema we rely on (memory_pipeline_tests/fleet/helm_schema_subset.json). Fast: no server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import jsonschema
import pytest
import yaml

from memory_pipeline.fleet.processes.executor import (
    BROKER_ENV,
    CELERY_YAML,
    INSTANCE_YAML,
    MAX_RUNS_ENV,
    PG_URL_ENV,
    celery_config,
    fleet_default_executor,
    fleet_executor,
)
from memory_pipeline.settings import REPO_ROOT

HELM_VALUES = REPO_ROOT / "deploy" / "helm" / "values.yaml"


def test_instance_yaml_is_valid_dagster_config_with_one_run_per_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster._core.instance.config import dagster_instance_config

    monkeypatch.setenv(PG_URL_ENV, "postgresql+psycopg2://postgres@127.0.0.1:5432/dagster")
    monkeypatch.setenv(MAX_RUNS_ENV, "7")
    shutil.copyfile(INSTANCE_YAML, tmp_path / "dagster.yaml")
    config, _ = dagster_instance_config(str(tmp_path))
    assert "postgres" in config["storage"]
    coordinator = config["run_coordinator"]
    assert coordinator["class"] == "QueuedRunCoordinator"
    limits = coordinator["config"]["tag_concurrency_limits"]
    assert limits == [{"key": key, "value": {"applyLimitPerUniqueValue": True}, "limit": 1}
                      for key in ("memory_pipeline/agent", "dagster/partition", "dagster/partition/agent")]
    assert config["run_retries"]["enabled"] and config["run_monitoring"]["enabled"]


def test_instance_yaml_builds_the_queued_coordinator_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster._core.run_coordinator import QueuedRunCoordinator

    monkeypatch.setenv(MAX_RUNS_ENV, "7")
    raw = yaml.safe_load(INSTANCE_YAML.read_text())["run_coordinator"]["config"]
    coordinator = QueuedRunCoordinator.from_config_value(None, _resolved(raw))  # type: ignore[arg-type]
    assert coordinator.get_run_queue_config().max_concurrent_runs == 7


def _resolved(raw: dict) -> dict:
    from dagster._config import process_config
    from dagster._core.run_coordinator import QueuedRunCoordinator

    result = process_config(QueuedRunCoordinator.config_type(), raw)
    assert result.success, result.errors
    return dict(result.value)


def test_celery_yaml_resolves_the_broker_the_code_location_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster_celery.cli import get_validated_config

    monkeypatch.setenv(BROKER_ENV, "redis://127.0.0.1:6399/0")
    config = get_validated_config(str(CELERY_YAML))
    assert config["broker"] == config["backend"] == "redis://127.0.0.1:6399/0"
    executor = fleet_executor({BROKER_ENV: "redis://127.0.0.1:6399/0"})
    assert executor.name == "celery_executor"
    assert fleet_executor({}) is dg.in_process_executor  # no broker: the single-machine behaviour


def test_helm_values_parse_and_match_the_charts_schema() -> None:
    values = yaml.safe_load(HELM_VALUES.read_text())
    schema = json.loads((Path(__file__).parent / "helm_schema_subset.json").read_text())
    jsonschema.validate(values, schema)
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    limits = values["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]["tagConcurrencyLimits"]
    assert limits == [{"key": key, "value": {"applyLimitPerUniqueValue": True}, "limit": 1}
                      for key in ("memory_pipeline/agent", "dagster/partition", "dagster/partition/agent")]
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert deployment["dagsterApiGrpcArgs"] == ["--module-name", "memory_pipeline.fleet.definitions"]


def test_helm_schema_subset_rejects_a_misspelt_key() -> None:
    """The check above can fail: a key the chart does not know is refused."""
    values = yaml.safe_load(HELM_VALUES.read_text())
    values["runLauncher"]["config"]["k8sRunLauncher"]["envVar"] = ["X=1"]
    schema = json.loads((Path(__file__).parent / "helm_schema_subset.json").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(values, schema)


def test_runs_on_workers_variant_launches_nights_as_celery_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster._core.instance.config import dagster_instance_config
    from dagster_celery.launcher import CeleryRunLauncher

    from memory_pipeline.errors import UserError
    from memory_pipeline.fleet.processes.executor import MODE_ENV, RUNS_ON_WORKERS_YAML, instance_yaml
    from memory_pipeline.fleet.processes.liveness import FleetCeleryRunLauncher

    monkeypatch.setenv(PG_URL_ENV, "postgresql+psycopg2://postgres@127.0.0.1:5432/dagster")
    monkeypatch.setenv(MAX_RUNS_ENV, "3")
    monkeypatch.setenv(BROKER_ENV, "redis://127.0.0.1:6399/0")
    assert instance_yaml({MODE_ENV: "runs"}) == RUNS_ON_WORKERS_YAML and instance_yaml({}) == INSTANCE_YAML
    shutil.copyfile(RUNS_ON_WORKERS_YAML, tmp_path / "dagster.yaml")
    config, _ = dagster_instance_config(str(tmp_path))
    launcher = config["run_launcher"]
    assert (launcher["module"], launcher["class"]) == ("memory_pipeline.fleet.processes.liveness",
                                                       "FleetCeleryRunLauncher")
    from dagster._config import process_config

    resolved = process_config(FleetCeleryRunLauncher.config_type(), launcher["config"])
    assert resolved.success and resolved.value["broker"] == "redis://127.0.0.1:6399/0"
    built = FleetCeleryRunLauncher.from_config_value(None, resolved.value)
    assert isinstance(built, CeleryRunLauncher) and built.lost_after_checks == 3
    # a worker lost whole: its night failed by run monitoring within lost_after_checks × the poll interval,
    # never resumed in place (run_retries runs it again, whole)
    monitoring = config["run_monitoring"]
    assert monitoring["max_resume_run_attempts"] == 0
    assert built.lost_after_checks * monitoring["poll_interval_seconds"] <= 60
    # the same per-agent limit as the default file
    assert config["run_coordinator"] == yaml.safe_load(INSTANCE_YAML.read_text())["run_coordinator"]
    # the steps then run in-process inside the worker's task, those of the location's other jobs too (the fleet
    # report, the index's automation runs: a Celery pool process may not start the multiprocess executor's children)
    assert fleet_executor({BROKER_ENV: "redis://x:1/0", MODE_ENV: "runs"}) is dg.in_process_executor
    assert fleet_default_executor({BROKER_ENV: "redis://x:1/0", MODE_ENV: "runs"}) is dg.in_process_executor
    assert fleet_default_executor({BROKER_ENV: "redis://x:1/0"}) is None  # steps: multiprocess in the run worker
    with pytest.raises(UserError, match="expected `steps`"):
        fleet_executor({BROKER_ENV: "redis://x:1/0", MODE_ENV: "tasks"})


def _worker_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config_yaml: Path) -> object:
    """The Celery app a `fleet worker` runs: dagster-celery writes celery.yaml into a `dagster_celery_config`
    module under DAGSTER_HOME, and `-A dagster_celery.app` imports it (what `worker start` does, minus the exec)."""
    import importlib
    import sys

    from dagster_celery.cli import get_config_dir
    from dagster_celery.make_app import make_app

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    config_dir = get_config_dir(str(config_yaml))
    monkeypatch.syspath_prepend(config_dir)
    sys.modules.pop("dagster_celery_config", None)
    importlib.invalidate_caches()
    try:
        return make_app()
    finally:
        sys.modules.pop("dagster_celery_config", None)


def test_a_worker_holds_only_its_running_step_and_gives_it_back_when_it_dies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers' and the runs' Celery settings, as each side builds its app from celery.yaml."""
    from dagster_celery.executor import CeleryExecutor
    from dagster_celery.make_app import make_app

    monkeypatch.setenv(BROKER_ENV, "redis://127.0.0.1:6399/0")
    worker = _worker_app(tmp_path, monkeypatch, CELERY_YAML).conf  # type: ignore[attr-defined]
    run_side = make_app(CeleryExecutor.for_cli(**celery_config("redis://127.0.0.1:6399/0")).app_args()).conf
    for conf in (worker, run_side):
        assert conf.broker_url == "redis://127.0.0.1:6399/0"
        assert conf.worker_prefetch_multiplier == 1 and conf.worker_disable_prefetch is True  # nothing prefetched
        assert conf.task_acks_late is True and conf.task_reject_on_worker_lost is True  # a dead step is requeued
        limit, visibility = conf.task_time_limit, conf.broker_transport_options["visibility_timeout"]
        # a running step is never redelivered (visibility > the step's limit), and a step's limit is within
        # the run's (run monitoring's max_runtime_seconds, which fails the run so run_retries retries it)
        raw = yaml.safe_load(INSTANCE_YAML.read_text())
        assert limit < visibility < raw["run_monitoring"]["max_runtime_seconds"]
        assert raw["run_retries"] == {"enabled": True, "max_retries": 1}
        assert conf.broker_transport_options["max_retries"] == 3  # dagster-celery's defaults kept


def test_the_gateway_manifest_runs_the_real_serve_command_and_probes_its_own_routes(tmp_path: Path) -> None:
    from memory_pipeline.cli import build_parser
    from memory_pipeline.fleet.gateway import build_app

    deployment, service = yaml.safe_load_all((REPO_ROOT / "deploy" / "helm" / "gateway.yaml").read_text())
    assert (deployment["kind"], service["kind"]) == ("Deployment", "Service")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["memory-pipeline"]
    args = build_parser().parse_args(container["args"])
    assert args.fn.__name__ == "cmd_serve" and args.host == "0.0.0.0"
    (port,) = container["ports"]
    assert port["containerPort"] == args.port and service["spec"]["ports"][0]["targetPort"] == port["name"]
    routes = {r.path for r in build_app(tmp_path, lambda home: None).routes}  # type: ignore[arg-type, return-value]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["path"] in routes and container[probe]["httpGet"]["port"] == port["name"]
    assert {"/mcp", "/healthz", "/readyz"} <= routes
    env = {e["name"]: e["value"] for e in container["env"]}
    values = yaml.safe_load(HELM_VALUES.read_text())
    (location,) = values["dagster-user-deployments"]["deployments"]
    assert env["MEMORY_PIPELINE_FLEET_ROOT"] == "/fleet" == location["volumeMounts"][0]["mountPath"]
    assert pod["volumes"] == location["volumes"] and container["volumeMounts"] == location["volumeMounts"]
    assert container["image"].split(":")[0] == location["image"]["repository"]
    assert "8780" in (REPO_ROOT / "deploy" / "Dockerfile").read_text()
