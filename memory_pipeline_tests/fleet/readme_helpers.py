"""Reading a running fleet for test_fleet_readme.py: its nights from the instance's run records and events, where a
night's Celery task is from the result backend, the agents' reports — and memories to import, as a user would."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from memory_pipeline_tests.fleet.cli_fixtures import CliFleet, Command

AGENT_TAG = "memory_pipeline/agent"
TASK_TAG = "dagster-celery/task_id"
T = TypeVar("T")


def noon_zone(now: datetime) -> str:
    """A fixed-offset IANA zone in which it is about noon now: the nights' date (the schedule's and `fleet night`'s
    label, in NIGHTLY_CONSOLIDATION_TZ) cannot change during a test that started in it, whatever time CI runs."""
    west = now.astimezone(UTC).hour - 12  # Etc/GMT+N is N hours west of UTC (POSIX sign)
    return "Etc/GMT" if west == 0 else f"Etc/GMT{west:+d}"


def write_memories(path: Path, n: int, seed: int, prefix: str) -> Path:
    """A JSONL file for `memory-pipeline import`: n memories in topic clusters, with their MiniLM-sized vectors
    (benchmarks.nightly's generator, on the generated stores' clock), so a night has clusters to compress."""
    from benchmarks.data import clustered_with_labels
    from benchmarks.nightly import AS_OF, WORDS, _topic_text
    from memory_pipeline.resources.embedder import MINILM

    vectors, owners = clustered_with_labels(n, seed=seed)
    rng = np.random.default_rng(seed + 1)
    with path.open("w") as out:
        for i in range(n):
            created = AS_OF - timedelta(days=float(rng.uniform(1.5, 60)))
            out.write(json.dumps({
                "id": f"{prefix}-{i:05d}", "content": _topic_text(rng, int(owners[i]), i),
                "created_at": f"{created.isoformat()}Z", "importance": round(float(rng.uniform(0.5, 2.4)), 3),
                "categories": [WORDS[int(owners[i]) % len(WORDS)]],
                "embedding": [round(float(x), 6) for x in vectors[i]], "embedding_model": MINILM,
            }) + "\n")
    return path


def report_of(home: Path, run_id: str) -> dict[str, Any]:
    path = home / "reports" / f"compression-{run_id}.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def night_runs(instance: Any, agent: str) -> list[Any]:
    """The agent's agent_night runs, oldest first (by the instance's own storage order)."""
    import dagster as dg

    records = instance.get_run_records(dg.RunsFilter(job_name="agent_night", tags={AGENT_TAG: agent}))
    return sorted(records, key=lambda r: r.storage_id)


@dataclass
class Waiter:
    instance: Any
    fleet: CliFleet

    def until(self, condition: Callable[[], T | None], timeout: float, what: str) -> T:
        """Poll `condition` (a value when met) at most `timeout` s; fail naming what was awaited, the runs'
        states and the fleet's logs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = condition()
            if found:
                return found
            time.sleep(1.0)
        import dagster as dg

        records = self.instance.get_run_records(dg.RunsFilter(), limit=30)
        runs = [(r.dagster_run.job_name, r.dagster_run.tags.get(AGENT_TAG), r.dagster_run.status.value)
                for r in records]  # fmt: skip
        # a failed run's retry decision (the daemon's tags) and its last events: why no retry came, if none did
        failed = "\n".join(
            f"--- failed run {r.dagster_run.run_id}: tags "
            f"{ {k: v for k, v in r.dagster_run.tags.items() if 'retry' in k or 'failure' in k or 'parent' in k} }\n"
            + self.explain(r)[-1500:]
            for r in records if r.dagster_run.status.value == "FAILURE"
        )  # fmt: skip
        logs = "\n".join(f"--- {c.name} ({c.proc.pid})\n{c.output()[-1500:]}" for c in self.fleet.commands)
        # the daemon threads that fail a lost run and retry it: what they did, beyond the log's last lines
        daemon = "\n".join(line for c in self.fleet.commands if c.name == "daemon" for line in c.output().splitlines()
                           if any(k in line for k in ("EventLogConsumer", "MonitoringDaemon", "etry", "rror")))
        raise AssertionError(f"no {what} within {timeout:.0f} s; runs: {runs}\n{failed}\n{logs}\n"
                             f"--- daemon: monitoring and retries\n{daemon[-4000:]}")

    def record(self, run_id: str) -> Any:
        return self.instance.get_run_record_by_id(run_id)

    def finished(self, run_id: str) -> bool:
        record = self.record(run_id)
        return bool(record and record.dagster_run.is_finished)

    def status(self, run_id: str) -> str:
        return str(self.record(run_id).dagster_run.status.value)

    def messages(self, record: Any) -> list[str]:
        return [e.message or "" for e in self.instance.all_logs(record.dagster_run.run_id)]

    def explain(self, record: Any) -> str:
        return "\n".join(m for m in self.messages(record) if m)[-3000:]

    def explain_id(self, run_id: str) -> str:
        return self.explain(self.record(run_id))

    def report_path(self, run_id: str) -> str:
        import dagster as dg

        records = self.instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("fleet_report")), limit=20).records
        (mat,) = [r.asset_materialization for r in records if r.run_id == run_id]
        return str(mat.metadata["report_path"].value)

    def task(self, record: Any) -> Any:
        """The night's Celery task in the result backend (state, and the worker that holds or ran it)."""
        return self.instance.run_launcher.celery.AsyncResult(record.dagster_run.tags[TASK_TAG])

    def celery_worker(self, record: Any) -> str:
        return str(self.task(record).worker or "")  # result_extended (deploy/fleet/celery.yaml)

    def run_pid(self, record: Any) -> int | None:
        """The process the run executes in, from its own engine event ("Started process for run (pid: N).")."""
        for entry in self.instance.all_logs(record.dagster_run.run_id):
            message = entry.message or ""
            if message.startswith("Started process for run (pid: "):
                return int(message.split("pid: ")[1].split(")")[0])
        return None

    def idle(self, timeout: float) -> None:
        """Wait until no run is queued or in flight (the walk's index updates and reports done)."""
        import dagster as dg

        unfinished = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
                      dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
        self.until(lambda: not self.instance.get_run_records(dg.RunsFilter(statuses=unfinished), limit=1),
                   timeout, "an idle fleet: no run queued or in flight")

    def new_runs(self, agent: str, before: dict[str, set[str]]) -> list[Any]:
        return [r for r in night_runs(self.instance, agent) if r.dagster_run.run_id not in before[agent]]

    def one_running_one_waiting(self, agents: tuple[str, ...], before: dict[str, set[str]],
                                worker: Command) -> tuple[str, str] | None:
        """(victim, other) once one agent's new night runs in `worker`'s pool process (its task STARTED there)
        while the other's night task waits in the broker (launched, PENDING: taken by no worker)."""
        runs = {agent: self.new_runs(agent, before) for agent in agents}
        if not all(len(r) == 1 and TASK_TAG in r[0].dagster_run.tags for r in runs.values()):
            return None
        states = {agent: self.task(r[0]).state for agent, r in runs.items()}
        for victim, other in (agents, agents[::-1]):
            pid = self.run_pid(runs[victim][0])
            if (states[victim] == "STARTED" and runs[victim][0].dagster_run.status.value == "STARTED"
                    and states[other] == "PENDING" and pid in worker.tree()):
                return victim, other
        return None

    def lost_night_retried(self, victim: str, other: str,
                           before: dict[str, set[str]]) -> tuple[Any, Any, list[Any]] | None:
        """(the dead night, its retry, the other agent's nights) once all of them have finished."""
        others, mine = self.new_runs(other, before), self.new_runs(victim, before)
        if not others or not all(r.dagster_run.is_finished for r in others):
            return None
        if len(mine) < 2 or not all(r.dagster_run.is_finished for r in mine):
            return None
        return mine[0], mine[-1], others
