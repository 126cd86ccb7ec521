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
    from memory_pipeline.fleet.definitions import NIGHT_TAG, PERIOD_TAG, fleet_nights
    from memory_pipeline.fleet.processes import launch

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
    from memory_pipeline.fleet.definitions import PERIOD_TAG
    from memory_pipeline.fleet.processes import launch

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

    from memory_pipeline.fleet.processes import launch

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
