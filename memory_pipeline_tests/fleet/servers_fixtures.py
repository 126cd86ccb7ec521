"""A fleet on real servers for the tests: a throwaway PostgreSQL cluster (Debian's package, run as the `postgres`
user when we are root), a real redis-server, dagster-daemon against the Postgres instance, and dagster-celery
workers as real processes. Everything is stopped on the way out and the teardown fails if a process outlived it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchmarks.fleet import BENCH_ENV
from memory_pipeline.faults import HOLD_ENV, HOLD_LIMIT_ENV
from memory_pipeline.fleet.processes import servers, stack

LOCATION = "memory_pipeline.fleet.definitions"
MAX_RUNS = 3  # run workers at once: two Celery workers take one step each, a third run waits on the broker
# the agent whose night the servers' workers park at a hold point (test_servers' killed step); its name sorts
# first, so its night is among the first the queue starts
SLOW = "a-slow"
AGENT_TAG = "memory_pipeline/agent"
DONE = ("SUCCESS", "FAILURE", "CANCELED")


def servers_missing() -> str | None:
    """Why these tests cannot run here (None when they can)."""
    try:
        servers.pg_bin()
        servers.redis_bin()
    except Exception as exc:  # UserError: names what to install
        return str(exc)
    return None


@dataclass
class Fleet:
    root: Path
    home: Path
    stack: stack.Stack
    env: dict[str, str]
    instance: Any
    holds: Path  # the hold point's folder (memory_pipeline.faults): agent SLOW's night parks in compressed_memories

    @property
    def agents_dir(self) -> Path:
        return self.root / "agents"

    def archive_agents(self) -> None:
        """Take every agent out of the schedule (what `agents remove` does: the workspace is kept)."""
        archive = self.root / "archive"
        archive.mkdir(exist_ok=True)
        for agent in self.agents_dir.iterdir():
            shutil.move(str(agent), archive / agent.name)

    def runs(self, agent: str | None = None) -> list[Any]:
        from dagster import RunsFilter

        tags = {AGENT_TAG: agent} if agent else {"dagster/schedule_name": "fleet_nights"}
        return list(self.instance.get_run_records(RunsFilter(tags=tags)))

    def wait_runs(self, done: Any, timeout: float, what: str) -> list[Any]:
        """Poll the Postgres instance until `done(records)` is true; fail naming the runs' states and the logs."""
        deadline = time.monotonic() + timeout
        records: list[Any] = []
        while time.monotonic() < deadline:
            records = self.runs()
            if done(records):
                return records
            for proc in self.stack.procs:
                assert proc.alive(), f"{proc.name} exited: {proc.log.read_text(errors='replace')[-2000:]}"
            time.sleep(1.0)
        states: dict[str, list[str]] = {}  # every run of each agent, oldest first (a retry after its first)
        for r in sorted(records, key=lambda r: r.create_timestamp):
            states.setdefault(str(r.dagster_run.tags.get(AGENT_TAG)), []).append(r.dagster_run.status.value)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}: {states}\n{self.tail_logs()}")

    def tail_logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.log.read_text(errors='replace')[-1500:]}" for p in self.stack.procs)


def build_agent(home: Path, n: int, seed: int) -> None:
    """`agents add --import` (the registry sensor gives the daemon its partition) with a small generated store
    with embeddings (ids `bench-<seed>-…`: which agent a memory came from), written before the agent appears:
    the schedule ticks every minute here, and a night started in between would find an empty store."""
    from datetime import UTC, datetime

    from benchmarks.nightly import build_store
    from memory_pipeline.fleet import registry

    registry.add_agent(home.parent.parent, home.name, datetime.now(UTC), fill=lambda tmp: build_store(tmp, n, seed))


def report_of(home: Path, run_id: str) -> dict[str, Any]:
    path = home / "reports" / f"compression-{run_id}.json"
    return json.loads(path.read_text()) if path.is_file() else {}


@pytest.fixture(scope="module", name="fleet")
def fleet_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    missing = servers_missing()
    if missing:
        pytest.skip(missing)
    base = tmp_path_factory.mktemp("fleet-servers")
    marker = str(base)
    root = base / "fleet"
    (root / "agents").mkdir(parents=True)
    with servers.throwaway_servers(base / "servers") as (pg, redis):
        pg_marker = str(pg.directory)
        home = stack.prepare_home(root / "dagster_home", LOCATION)
        env = stack.fleet_env(home, pg.url, redis.url, root, max_runs=MAX_RUNS)
        env.update({"MEMORY_PIPELINE_LLM": "offline", "MEMORY_PIPELINE_PROGRESS": "log", **BENCH_ENV})
        # these tests are about the servers, the queue and a killed step: the nights' knowledge-retention probes
        # (minutes of a Celery worker per night beside load; their own tests are in abstraction/) are off
        env["MEMORY_PIPELINE_RETENTION_PROBES"] = "0"
        # a bound for the code server's answers on two busy cores (Dagster's default, 60 s, failed run launches
        # beside a CPU-heavy process), not a target
        env["DAGSTER_GRPC_TIMEOUT_SECONDS"] = "300"
        holds = base / "holds"
        holds.mkdir()
        env[HOLD_ENV] = f"night_phase1@{SLOW}:{holds}"  # only agent SLOW's night; the others never stop there
        env[HOLD_LIMIT_ENV] = "3600"  # parked while other nights finish (the test releases it, in a finally)
        procs = stack.Stack(env, base / "logs")
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)  # this process reads the same instance
        try:
            import dagster as dg

            with dg.DagsterInstance.get() as instance:
                # these tests are about the nights: the search indexes' automation (a run per agent after each
                # night, test_fleet_readme's walk waits for them) is stopped as an operator would, to keep the
                # two cores for the nights -- before the workers and the daemon start, so the CLI's own load of
                # the location does not race theirs for the two cores
                stopped = subprocess.run([str(stack.BIN / "dagster"), "sensor", "stop", "fleet_automation", "-w",
                                          str(home / stack.WORKSPACE_YAML)], env=env, capture_output=True,
                                         text=True, timeout=600)
                assert stopped.returncode == 0, f"dagster sensor stop failed: {stopped.stderr[-3000:]}"
                procs.start("worker-1", stack.worker_command("w1", 1))
                procs.start("worker-2", stack.worker_command("w2", 1))
                procs.start("daemon", stack.daemon_command(home))
                yield Fleet(root, home, procs, env, instance, holds)
        finally:
            left = procs.close()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    assert not left, f"processes outlived the fleet fixture: {left}"
    leftover = servers.processes_mentioning(marker) + servers.processes_mentioning(pg_marker)
    assert not leftover, f"processes outlived the fleet fixture: {leftover}"
