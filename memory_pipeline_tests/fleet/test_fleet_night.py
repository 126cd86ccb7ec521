"""`memory-pipeline fleet night AGENT [--now]` and the memory_pipeline/agent tag on every launch of a per-agent
job: the run queued on the instance carries the tag the run queue limits by (from the job's partition → tags
mapping, the same the UI's launchpad asks for), a second night is refused in one line unless --now, the
schedule then counts the queued night as tonight's, and an unknown agent is one line. The real queue and
daemon: test_fleet_readme.py."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from memory_pipeline.errors import UserError
from memory_pipeline.fleet import registry

AGENT_TAG = "memory_pipeline/agent"
CLOCK = datetime(2026, 11, 3, 12, 0, tzinfo=UTC)  # 07:00 in the schedule's timezone: the night of 2026-11-03
QUEUED = {"run_coordinator": {"module": "dagster.core.run_coordinator", "class": "QueuedRunCoordinator"}}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    fleet = tmp_path_factory.mktemp("fleet-night") / "fleet"
    with pytest.MonkeyPatch.context() as env:
        env.setenv(registry.FLEET_ROOT_ENV, str(fleet))
        env.setenv("MEMORY_PIPELINE_LLM", "offline")
        env.delenv("MEMORY_PIPELINE_CELERY_BROKER", raising=False)
        for agent in ("ada", "bob", "cy"):
            registry.add_agent(fleet, agent, CLOCK)
        yield fleet


@pytest.fixture(scope="module")
def instance(root: Path) -> Iterator[dg.DagsterInstance]:
    """One instance for the module, as the CLI has one per process (Dagster keeps a definitions-state storage
    per process that a second, later instance_for_test would not replace)."""
    with dg.instance_for_test(overrides=QUEUED) as inst:
        yield inst


def test_an_unknown_or_malformed_agent_is_one_line(root: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_pipeline.cli import main

    monkeypatch.setenv(registry.FLEET_ROOT_ENV, str(root))

    assert main(["fleet", "night", "nobody"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: agent 'nobody' is not registered in {root / 'agents'}: "
                   "`memory-pipeline agents add nobody`")
    assert main(["fleet", "night", "Not/An/Id"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: agent id 'Not/An/Id': use 1-63 lower-case letters") and "\n" not in err


def test_a_night_is_queued_with_the_agent_tag_and_a_second_needs_now(instance: dg.DagsterInstance) -> None:
    from memory_pipeline.fleet.cli import launch
    from memory_pipeline.fleet.definitions import NIGHT_TAG, PERIOD_TAG, fleet_nights

    night, queued = launch.queue_night(instance, "ada", now=False, clock=CLOCK)
    assert night == "2026-11-03"
    run = instance.get_run_by_id(queued.run_id)
    assert run is not None and run.status == dg.DagsterRunStatus.QUEUED and run.job_name == "agent_night"
    assert {k: run.tags.get(k) for k in (AGENT_TAG, "dagster/partition", NIGHT_TAG, PERIOD_TAG)} == {
        AGENT_TAG: "ada", "dagster/partition": "ada", NIGHT_TAG: "2026-11-03", PERIOD_TAG: "2026-11-03"}
    assert run.remote_job_origin is not None and run.remote_job_origin.location_name == "memory_pipeline"
    assert instance.has_dynamic_partition("agents", "ada")  # registered a moment ago: added with the night

    with pytest.raises(UserError) as refused:
        launch.queue_night(instance, "ada", now=False, clock=CLOCK)
    assert str(refused.value) == (f"ada's night is already in flight: run {queued.run_id[:8]} (QUEUED); "
                                  "`memory-pipeline fleet night ada --now` queues another")
    _, again = launch.queue_night(instance, "ada", now=True, clock=CLOCK)
    assert again.run_id != queued.run_id and again.tags[AGENT_TAG] == "ada"

    # the schedule counts it as ada's night: at 03:30 it requests bob's only
    instance.add_dynamic_partitions("agents", ["bob"])
    tick = dg.build_schedule_context(instance=instance, scheduled_execution_time=datetime(2026, 11, 3, 8, 30,
                                                                                         tzinfo=UTC))
    assert [r.partition_key for r in fleet_nights(tick)] == ["bob"]


def test_a_night_that_already_succeeded_today_needs_now(instance: dg.DagsterInstance) -> None:
    from memory_pipeline.fleet.cli import launch
    from memory_pipeline.fleet.definitions import PERIOD_TAG

    done = instance.create_run_for_job(job_def=_stand_in("agent_night"), status=dg.DagsterRunStatus.SUCCESS,
                                       tags={AGENT_TAG: "cy", PERIOD_TAG: "2026-11-03"})
    with pytest.raises(UserError, match=rf"^cy's night of 2026-11-03 already ran: run {done.run_id[:8]} \(SUCCESS\)"):
        launch.queue_night(instance, "cy", now=False, clock=CLOCK)
    night, queued = launch.queue_night(instance, "cy", now=False, clock=datetime(2026, 11, 4, 12, tzinfo=UTC))
    assert night == "2026-11-04" and queued.tags[AGENT_TAG] == "cy"  # the next day's is not a second


def _stand_in(name: str) -> dg.JobDefinition:
    @dg.op
    def noop() -> None: ...

    @dg.job(name=name)
    def stand_in() -> None:
        noop()

    return stand_in


PARTITION_QUERY = """
query ConfigPartitionForAssetJobQuery($repositoryName: String!, $repositoryLocationName: String!,
                                      $jobName: String!, $partitionName: String!, $assetKeys: [AssetKeyInput!]!) {
  pipelineOrError(params: {pipelineName: $jobName, repositoryName: $repositoryName,
                           repositoryLocationName: $repositoryLocationName}) {
    ... on Pipeline { partition(partitionName: $partitionName, selectedAssetKeys: $assetKeys) {
      tagsOrError { ... on PartitionTags { results { key value } } ... on PythonError { message } } } }
  }
}"""


def test_the_uis_launchpad_gets_the_agent_tag_for_a_partition_of_each_per_agent_job(
    instance: dg.DagsterInstance,
) -> None:
    """The webserver's own query when a partition is picked in a job's launchpad (copied from its bundle)."""
    from dagster_graphql.test.utils import execute_dagster_graphql

    from memory_pipeline.fleet.cli import launch

    with launch._location(instance) as (context, _location, repository):
        def tags(job: str, partition: str) -> dict[str, Any]:
            result = execute_dagster_graphql(context, PARTITION_QUERY, variables={
                "repositoryName": repository.name, "repositoryLocationName": launch.LOCATION, "jobName": job,
                "partitionName": partition, "assetKeys": []})
            found = result.data["pipelineOrError"]["partition"]["tagsOrError"]
            return {t["key"]: t["value"] for t in found.get("results", [])} or found

        assert tags("agent_night", "ada")[AGENT_TAG] == "ada"
        assert tags("agent_compaction_week", "ada|2026-11-01")[AGENT_TAG] == "ada"
        assert tags("agent_journal_month", "bob|2026-10-01")[AGENT_TAG] == "bob"


@pytest.fixture(scope="module")
def graphql(instance: dg.DagsterInstance) -> Iterator[Any]:
    """The webserver's GraphQL schema on the location loaded here: the documents `fleet night` sends over HTTP,
    answered as the webserver answers them (a Post, as webserver_launch.http_post makes one)."""
    from dagster_graphql.test.utils import execute_dagster_graphql

    from memory_pipeline.fleet.cli import launch

    with launch._location(instance) as (context, _location, _repository):
        def post(document: str, variables: Any, timeout: float) -> Any:
            result = execute_dagster_graphql(context, document, variables=dict(variables))
            assert not result.errors, result.errors
            return result.data

        yield post


def test_through_the_webserver_a_night_is_the_same_run_with_the_same_refusals(
    root: Path, instance: dg.DagsterInstance, graphql: Any
) -> None:
    """Two agents in one query and one mutation: each gets the run launch.py would queue (same job, tags, no run
    config, QUEUED), its partition added; the second ask is refused with launch.py's line, --now queues again."""
    from memory_pipeline.fleet.cli import launch
    from memory_pipeline.fleet.cli.webserver_launch import Launched, queue_nights, queue_report
    from memory_pipeline.fleet.processes import names

    for agent in ("dee", "fay"):  # launch.py checks the registry (the command checks it before either path)
        registry.add_agent(root, agent, CLOCK)
    night = "2026-11-03"
    done = queue_nights(graphql, ["dee", "eve"], now=False, night=night)
    assert set(done) == {"dee", "eve"} and all(isinstance(r, Launched) for r in done.values()), done
    _, reference = launch.queue_night(instance, "fay", now=False, clock=CLOCK)
    want = instance.get_run_by_id(reference.run_id)
    assert want is not None
    for agent, queued in done.items():
        assert isinstance(queued, Launched)
        run = instance.get_run_by_id(queued.run_id)
        assert run is not None and instance.has_dynamic_partition("agents", agent)
        swapped = {k: agent if v == "fay" else v for k, v in want.tags.items()}
        assert dict(run.tags) == swapped == dict(queued.tags)
        assert (run.job_name, run.status, run.run_config, run.asset_selection) == \
            (want.job_name, want.status, want.run_config, want.asset_selection) == \
            ("agent_night", dg.DagsterRunStatus.QUEUED, {}, None)

    # refused as launch.py refuses: in flight; then --now queues another
    again = queue_nights(graphql, ["dee", "fay"], now=False, night=night)
    for agent in ("dee", "fay"):
        with pytest.raises(UserError) as refused:
            launch.queue_night(instance, agent, now=False, clock=CLOCK)
        assert again[agent] == str(refused.value)
        assert again[agent].startswith(f"{agent}'s night is already in flight: run ")
    forced = queue_nights(graphql, ["dee"], now=True, night=night)["dee"]
    assert isinstance(forced, Launched) and forced.run_id != done["dee"].run_id  # type: ignore[union-attr]

    # already ran tonight (a successful night of this date): refused with the same line; the next day is not
    ran = instance.create_run_for_job(job_def=_stand_in("agent_night"), status=dg.DagsterRunStatus.SUCCESS,
                                      tags={AGENT_TAG: "gus", names.PERIOD_TAG: night})
    refused_line = queue_nights(graphql, ["gus"], now=False, night=night)["gus"]
    assert refused_line == names.refused("gus", names.already_ran("gus", night, ran.run_id))
    assert isinstance(queue_nights(graphql, ["gus"], now=False, night="2026-11-04")["gus"], Launched)

    report = queue_report(graphql)
    run = instance.get_run_by_id(report.run_id)
    assert run is not None and run.job_name == "fleet_report_job" and run.status == dg.DagsterRunStatus.QUEUED


def test_a_webserver_that_does_not_answer_is_no_webserver(tmp_path: Path) -> None:
    """Nothing recorded, or nothing listening: NoWebserver (the command then queues through the instance)."""
    from memory_pipeline.fleet.cli.webserver_launch import NoWebserver, http_post, queue_nights, webserver_url
    from memory_pipeline.fleet.processes import servers

    with pytest.raises(NoWebserver, match="no `fleet webserver` runs on this machine"):
        webserver_url(tmp_path)
    down = http_post(f"http://127.0.0.1:{servers.free_port()}")
    with pytest.raises(NoWebserver, match=r"^the webserver at http://127\.0\.0\.1:\d+ did not answer \("):
        queue_nights(down, ["ada"], now=False, night="2026-11-03")


def test_the_command_line_imports_no_dagster_on_the_webserver_path() -> None:
    """What `fleet night` imports before it asks the webserver: no Dagster (a second of the command's time)."""
    import subprocess
    import sys

    code = ("import sys; import memory_pipeline.cli, memory_pipeline.fleet.processes.cli, "
            "memory_pipeline.fleet.cli.webserver_launch, memory_pipeline.fleet.processes.health; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dagster', 'dagster_graphql')))")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert shown.stdout.strip() == "[]", shown.stdout


def test_the_location_loads_for_its_instance_after_other_instances_were_left_out_of_order(
    root: Path, instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    """A long-lived process (a test worker, the gateway) may have left two instances in another order than it
    entered them, so its current definitions-state storage is a dropped instance's: the location still loads, on
    the instance it was given (Dagster's own error was "undefined DagsterInstance weakref")."""
    import gc

    from memory_pipeline.fleet.cli import launch

    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    first = dg.DagsterInstance.local_temp(str(tmp_path / "first"))
    second = dg.DagsterInstance.local_temp(str(tmp_path / "second"))
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    second.__exit__(None, None, None)  # leaves `first`'s storage current, and `first` is gone
    del first, second
    gc.collect()
    with launch._location(instance) as (_context, _location, repository):
        assert repository.has_job("agent_night")
