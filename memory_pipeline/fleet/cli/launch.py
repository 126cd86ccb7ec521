"""`memory-pipeline fleet night AGENT… [--now]` and `fleet report` through the instance, when the fleet's webserver
on this machine does not answer (cli/webserver_launch.py asks it first): queue one run on the fleet's instance, as the
UI's launch button does. The run is built from the code location the daemon knows (name `memory_pipeline`): the code
server `fleet daemon` runs on this machine when it answers (a second or two: nothing is imported here but Dagster),
else the location loaded in this process (the whole pipeline imported: tens of seconds on a busy machine). The
run gets the partition's tags from it (for agent_night: memory_pipeline/agent=<agent>, the job's partition → tags
mapping in fleet.definitions.agent_tagged) and goes to the run queue, so the per-agent limit holds: a night
queued while the agent has one in flight starts after it."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg

from memory_pipeline.errors import UserError
from memory_pipeline.fleet.processes import names
from memory_pipeline.fleet.processes.names import (
    AGENT_TAG,
    AGENTS,
    LOCATION,
    MODULE,
    NIGHT_JOB,
    NIGHT_TAG,
    PERIOD_TAG,
    REPORT_JOB,
    already_ran,
    fleet_timezone,
    in_flight,
    night_of,
    refused,
)
from memory_pipeline.settings import REPO_ROOT

UNFINISHED = [dg.DagsterRunStatus(status) for status in names.UNFINISHED]


@dataclass(frozen=True)
class Queued:
    run_id: str
    tags: Mapping[str, str]


def earlier_night(instance: dg.DagsterInstance, agent: str, night: str) -> str | None:
    """Why a night for `agent` should not be queued again without --now (None: nothing stands in the way)."""
    running = instance.get_run_records(
        dg.RunsFilter(job_name=NIGHT_JOB, tags={AGENT_TAG: agent}, statuses=UNFINISHED), limit=1)
    if running:
        run = running[0].dagster_run
        return in_flight(agent, run.run_id, run.status.value)
    done = instance.get_run_records(dg.RunsFilter(
        job_name=NIGHT_JOB, tags={AGENT_TAG: agent, PERIOD_TAG: night}, statuses=[dg.DagsterRunStatus.SUCCESS]),
        limit=1)
    if done:
        return already_ran(agent, night, done[0].dagster_run.run_id)
    return None


def code_server_answers(socket: Path) -> bool:
    """Whether the code server `fleet daemon` runs for this instance listens on `socket` (this machine only)."""
    if not socket.exists():
        return False
    from dagster._grpc.client import DagsterGrpcClient

    try:
        DagsterGrpcClient(socket=str(socket)).ping("")
    except Exception:  # a socket left by a daemon that was killed, or one still loading: load the location here
        return False
    return True


def location_origin(socket: Path | None) -> Any:
    """Where the location comes from: the daemon's code server on `socket` when it answers, else this process."""
    from dagster._core.remote_origin import GrpcServerCodeLocationOrigin, InProcessCodeLocationOrigin
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

    if socket is not None and code_server_answers(socket):
        return GrpcServerCodeLocationOrigin(host="localhost", socket=str(socket), location_name=LOCATION)
    return InProcessCodeLocationOrigin(
        LoadableTargetOrigin(executable_path=sys.executable, module_name=MODULE, working_directory=str(REPO_ROOT)),
        location_name=LOCATION)


@contextmanager
def _location(instance: dg.DagsterInstance, socket: Path | None = None) -> Iterator[tuple[Any, Any, Any]]:
    """The fleet's code location under the daemon's name for it: (request context, location, repository)."""
    from dagster._core.storage.defs_state.base import set_defs_state_storage
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import WorkspaceLoadTarget

    origin = location_origin(socket)

    class Target(WorkspaceLoadTarget):
        def create_origins(self) -> list[Any]:
            return [origin]

    # the location's definitions read their state through the instance that loads them: set it here, not
    # through whichever instance this process entered last (one that may be gone, in a long-lived process)
    with set_defs_state_storage(instance.defs_state_storage), \
            WorkspaceProcessContext(instance, Target()) as process:
        context = process.create_request_context()
        errors = context.get_code_location_error(LOCATION)
        if errors is not None:
            first = errors.message.strip().splitlines()[-1] if errors.message.strip() else "unknown error"
            raise UserError(f"the fleet's code location ({MODULE}) does not load: {first}")
        location = context.get_code_location(LOCATION)
        (repository,) = location.get_repositories().values()
        yield context, location, repository


def submit(instance: dg.DagsterInstance, job: str, partition: str | None, tags: Mapping[str, str],
           socket: Path | None = None) -> Queued:
    """Create a run of `job` (for `partition`, with the tags the code location gives that partition) and hand it
    to the instance's run coordinator; return it as queued. `socket`: the daemon's code server, if any."""
    from dagster._cli.job import _create_run
    from dagster._core.remote_representation.external_data import PartitionExecutionErrorSnap

    with _location(instance, socket) as (context, location, repository):
        remote_job = repository.get_full_job(job)
        run_tags: dict[str, str] = {}
        if partition is not None:
            snap = location.get_partition_tags_from_repo(repository.handle, job, partition, instance)
            if isinstance(snap, PartitionExecutionErrorSnap):
                why = snap.error.message.strip().splitlines()[-1] if snap.error else "unknown error"
                raise UserError(f"{job}: no tags for partition {partition!r}: {why}")
            run_tags.update(snap.tags)
        run_tags.update(tags)
        run = _create_run(instance=instance, code_location=location, remote_repo=repository, remote_job=remote_job,
                          run_config={}, tags=run_tags, op_selection=None, run_id=None)
        queued = instance.submit_run(run.run_id, context)
        return Queued(queued.run_id, dict(queued.tags))


def queue_night(
    instance: dg.DagsterInstance, agent: str, now: bool, clock: datetime | None = None, socket: Path | None = None
) -> tuple[str, Queued]:
    """Queue `agent`'s night (its partition of agent_night): (the night's date, the run). Without `now`, an agent
    whose night is in flight or already succeeded for this date is refused in one line."""
    from memory_pipeline.fleet import registry
    registry.agent_home(registry.fleet_root(), agent)  # one line naming the agent when it is not registered
    night = night_of(clock or datetime.now(UTC), fleet_timezone())
    if not now:
        reason = earlier_night(instance, agent, night)
        if reason:
            raise UserError(refused(agent, reason))
    if not instance.has_dynamic_partition(AGENTS, agent):  # registered a moment ago: the sensor has not run yet
        instance.add_dynamic_partitions(AGENTS, [agent])
    return night, submit(instance, NIGHT_JOB, agent, {NIGHT_TAG: night, PERIOD_TAG: night}, socket)


def queue_report(instance: dg.DagsterInstance, socket: Path | None = None) -> Queued:
    return submit(instance, REPORT_JOB, None, {}, socket)
