"""`fleet night AGENT… [--now]` and `fleet report` through the fleet's webserver: its GraphQL API over plain HTTP,
so the command imports no Dagster and returns in about a second. The webserver is the one `fleet webserver` runs
for this fleet root on this machine (its record under <fleet root>/servers/<host>/).

The same run as cli/launch.py queues through the instance: the same job, the partition's tags from the code location
(the query the UI's launchpad sends for a partition), then memory_pipeline/night and memory_pipeline/period,
`launchRun` with no run config, handed to the run queue by the webserver (`submit_run`); without --now, the same
refusals (a night in flight, or a night of this date that succeeded), asked before anything is written.

Two requests whatever the number of agents: one query (each agent's runs and partition tags), one mutation (each
agent's partition added if missing, then its run; a mutation's fields run one after the other). Nothing is written
until the mutation: a webserver that does not answer the query raises NoWebserver and the caller queues through
the instance instead."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.fleet.processes import names

QUERY_TIMEOUT_S = 30.0  # a webserver that has not answered by then is treated as down (nothing written yet)
LAUNCH_TIMEOUT_S = 300.0  # the mutation: creating the runs (the webserver asks the code server for each plan)

# (document, variables, timeout in seconds) -> the response's `data`
Post = Callable[[str, Mapping[str, Any], float], Mapping[str, Any]]


class NoWebserver(Exception):
    """The webserver could not be asked (none recorded, down, or it failed before anything was written)."""


@dataclass(frozen=True)
class Launched:
    run_id: str
    tags: Mapping[str, str]


def webserver_url(root: Path) -> str:
    """The address of the webserver `fleet webserver` runs for `root` on this machine, or NoWebserver."""
    from memory_pipeline.fleet.processes import health

    found = [r.address for r in health.records(root) if r.kind == "webserver"]
    if not found:
        raise NoWebserver("no `fleet webserver` runs on this machine for this fleet root")
    return found[0]


def http_post(url: str) -> Post:
    """A Post to the webserver's /graphql at `url`; any failure to get a GraphQL answer raises NoWebserver."""

    def post(document: str, variables: Mapping[str, Any], timeout: float) -> Mapping[str, Any]:
        body = json.dumps({"query": document, "variables": dict(variables)}).encode()
        request = urllib.request.Request(f"{url.rstrip('/')}/graphql", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (our own http:// URL)
                answer = json.loads(response.read())
        except (OSError, ValueError) as exc:  # refused, timed out, an HTTP error status, not JSON
            reason = getattr(exc, "reason", None) or exc
            raise NoWebserver(f"the webserver at {url} did not answer ({reason})") from None
        if not isinstance(answer, dict) or answer.get("errors") or not isinstance(answer.get("data"), dict):
            errors = answer.get("errors") if isinstance(answer, dict) else None
            first = errors[0].get("message", "") if isinstance(errors, list) and errors else "no data"
            raise NoWebserver(f"the webserver at {url} refused the request ({str(first).strip()[:200]})")
        return answer["data"]

    return post


def _job_selector(job: str) -> dict[str, str]:
    return {"repositoryLocationName": names.LOCATION, "repositoryName": names.REPOSITORY, "jobName": job}


def _tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"key": k, "value": v} for k, v in tags.items()]


def checks_query(agents: Sequence[str], night: str, now: bool) -> tuple[str, dict[str, Any]]:
    """One query: each agent's partition tags (the launchpad's query) and, without --now, its night in flight and
    its successful night of `night`."""
    variables: dict[str, Any] = {"job": {"pipelineName": names.NIGHT_JOB, "repositoryName": names.REPOSITORY,
                                         "repositoryLocationName": names.LOCATION}}  # fmt: skip
    params, partitions, runs = ["$job: PipelineSelector!"], [], []
    for i, agent in enumerate(agents):
        params.append(f"$key{i}: String!")
        variables[f"key{i}"] = agent
        partitions.append(f"p{i}: partition(partitionName: $key{i}) {{ tagsOrError {{ __typename "
                          "... on PartitionTags { results { key value } } ... on PythonError { message } } }")
        if now:
            continue
        params += [f"$flight{i}: RunsFilter!", f"$done{i}: RunsFilter!"]
        variables[f"flight{i}"] = {"pipelineName": names.NIGHT_JOB, "statuses": list(names.UNFINISHED),
                                   "tags": _tag_list({names.AGENT_TAG: agent})}  # fmt: skip
        variables[f"done{i}"] = {"pipelineName": names.NIGHT_JOB, "statuses": ["SUCCESS"],
                                 "tags": _tag_list({names.AGENT_TAG: agent, names.PERIOD_TAG: night})}
        for alias in (f"flight{i}", f"done{i}"):
            runs.append(f"{alias}: runsOrError(filter: ${alias}, limit: 1) {{ __typename "
                        "... on Runs { results { runId status } } ... on Error { message } }")
    document = (f"query FleetNight({', '.join(params)}) {{\n"
                "  job: pipelineOrError(params: $job) { __typename ... on Error { message }\n"
                f"    ... on Pipeline {{ {' '.join(partitions)} }} }}\n"
                + "".join(f"  {r}\n" for r in runs) + "}")  # fmt: skip
    return document, variables


def _error(field: Mapping[str, Any] | None) -> str:
    if not field:
        return "no answer"
    message = field.get("message") or "; ".join(e.get("message", "") for e in field.get("errors") or [])
    return f"{field.get('__typename', '?')}: {str(message).strip().splitlines()[-1] if message else 'no message'}"


def read_checks(data: Mapping[str, Any], agents: Sequence[str], night: str,
                now: bool) -> dict[str, dict[str, str] | str]:
    """Each agent's partition tags, or the line refusing it (without --now). A query the webserver could not
    answer for the job (its location not loaded, an error in the code) raises NoWebserver: nothing was written."""
    job = data.get("job") or {}
    if job.get("__typename") not in ("Job", "Pipeline"):
        raise NoWebserver(f"the webserver has no {names.NIGHT_JOB} in {names.LOCATION} ({_error(job)})")
    out: dict[str, dict[str, str] | str] = {}
    for i, agent in enumerate(agents):
        if not now:
            reason = _refusal(data, i, agent, night)
            if reason:
                out[agent] = names.refused(agent, reason)
                continue
        found = (job.get(f"p{i}") or {}).get("tagsOrError") or {}
        if found.get("__typename") != "PartitionTags":
            raise NoWebserver(f"{names.NIGHT_JOB}: no tags for partition {agent!r} ({_error(found)})")
        out[agent] = {t["key"]: t["value"] for t in found["results"]}
    return out


def _refusal(data: Mapping[str, Any], i: int, agent: str, night: str) -> str | None:
    for alias in (f"flight{i}", f"done{i}"):
        runs = data.get(alias) or {}
        if runs.get("__typename") != "Runs":
            raise NoWebserver(f"the webserver could not list {agent}'s runs ({_error(runs)})")
        if runs["results"]:
            run = runs["results"][0]
            if alias.startswith("flight"):
                return names.in_flight(agent, run["runId"], run["status"])
            return names.already_ran(agent, night, run["runId"])
    return None


LAUNCHED = ("__typename ... on LaunchRunSuccess { run { runId tags { key value } } } ... on Error { message } "
            "... on RunConfigValidationInvalid { errors { message } }")


def launch_mutation(runs: Sequence[tuple[str, Mapping[str, str]]], job: str,
                    partitions: Sequence[str] = ()) -> tuple[str, dict[str, Any]]:
    """One mutation: each of `partitions` added to `agents` when missing, then a run of `job` per (label, tags)
    — tags the partition's plus ours, as launch.submit builds them; no run config, as there."""
    variables: dict[str, Any] = {}
    params: list[str] = []
    fields: list[str] = []
    if partitions:
        params.append("$repo: RepositorySelector!")
        variables["repo"] = {"repositoryLocationName": names.LOCATION, "repositoryName": names.REPOSITORY}
    for i, key in enumerate(partitions):
        params.append(f"$part{i}: String!")
        variables[f"part{i}"] = key
        fields.append(f"add{i}: addDynamicPartition(repositorySelector: $repo, partitionsDefName: "
                      f"\"{names.AGENTS}\", partitionKey: $part{i}) {{ __typename ... on Error {{ message }} }}")
    for i, (_label, tags) in enumerate(runs):
        params.append(f"$run{i}: ExecutionParams!")
        variables[f"run{i}"] = {"selector": _job_selector(job), "runConfigData": {},
                                "executionMetadata": {"tags": _tag_list(tags)}}  # fmt: skip
        fields.append(f"run{i}: launchRun(executionParams: $run{i}) {{ {LAUNCHED} }}")
    return f"mutation FleetLaunch({', '.join(params)}) {{\n" + "".join(f"  {f}\n" for f in fields) + "}", variables


def read_launched(data: Mapping[str, Any], runs: Sequence[tuple[str, Mapping[str, str]]], job: str,
                  partitions: Sequence[str] = ()) -> dict[str, Launched | str]:
    """Each run's id and tags by label, or the line saying why it was not queued."""
    out: dict[str, Launched | str] = {}
    for i, key in enumerate(partitions):
        added = data.get(f"add{i}") or {}
        if added.get("__typename") not in ("AddDynamicPartitionSuccess", "DuplicateDynamicPartitionError"):
            raise UserError(f"the webserver did not add the partition {key!r} to {names.AGENTS} ({_error(added)})")
    for i, (label, _tags) in enumerate(runs):
        result = data.get(f"run{i}") or {}
        if result.get("__typename") == "LaunchRunSuccess":
            run = result["run"]
            out[label] = Launched(run["runId"], {t["key"]: t["value"] for t in run["tags"]})
        else:
            out[label] = f"{label}: {job} was not queued ({_error(result)})"
    return out


def queue_nights(post: Post, agents: Sequence[str], now: bool, night: str) -> dict[str, Launched | str]:
    """Queue each agent's night through the webserver: its run, or the line saying why not (refused without --now,
    or not queued). NoWebserver when the webserver could not be asked: nothing was queued."""
    document, variables = checks_query(agents, night, now)
    checks = read_checks(post(document, variables, QUERY_TIMEOUT_S), agents, night, now)
    runs = [(agent, {**tags, names.NIGHT_TAG: night, names.PERIOD_TAG: night})
            for agent, tags in checks.items() if not isinstance(tags, str)]
    launched: dict[str, Launched | str] = {}
    if runs:
        document, variables = launch_mutation(runs, names.NIGHT_JOB, [agent for agent, _ in runs])
        launched = _launch(post, document, variables, runs, names.NIGHT_JOB, [agent for agent, _ in runs])
    return {agent: check if isinstance(check, str) else launched[agent] for agent, check in checks.items()}


def queue_report(post: Post) -> Launched:
    document, variables = launch_mutation([("report", {})], names.REPORT_JOB)
    result = _launch(post, document, variables, [("report", {})], names.REPORT_JOB)["report"]
    if isinstance(result, str):
        raise UserError(result)
    return result


def _launch(post: Post, document: str, variables: Mapping[str, Any], runs: Sequence[tuple[str, Mapping[str, str]]],
            job: str, partitions: Sequence[str] = ()) -> dict[str, Launched | str]:
    try:
        data = post(document, variables, LAUNCH_TIMEOUT_S)
    except NoWebserver as exc:  # maybe after writing: say so instead of queuing again through the instance
        raise UserError(f"{exc} while queuing: see `memory-pipeline fleet status` or the UI's Runs before queuing "
                        "again") from None
    return read_launched(data, runs, job, partitions)
