"""docs/fleet.md's "Running a fleet", followed literally as a user would, on one fleet for the module: an empty fleet
root; `fleet postgres` and `fleet redis` (their printed URLs exported), the variables of every machine with
`MEMORY_PIPELINE_CELERY_MODE=runs` (a task per night), `fleet daemon`, two `fleet worker`s; `agents add`, each
agent's memories with `import`; the nights the schedule starts (its cron every minute here, on the generated
memories' clock), three PASS; `fleet report`; `fleet night`. Then a worker lost whole (SIGKILL to the Celery
worker and its pool child) while it runs one agent's night and another agent's night waits for it in the broker:
the other night is not lost with it, and the dead night is failed by run monitoring and retried to a PASS.

Everything is asserted from the instance's run records and events, the Celery result backend and the agents'
reports, never from wall-clock order; every wait is bounded and names what it waited for. Slow (minutes).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks.fleet import BENCH_ENV
from memory_pipeline.fleet.processes import servers
from memory_pipeline.fleet.processes.executor import BROKER_ENV, FLEET_ROOT_ENV, MODE_ENV, PG_URL_ENV
from memory_pipeline_tests.fleet.cli_fixtures import CLI, CliFleet, Command, alive, cmdline, listens
from memory_pipeline_tests.fleet.readme_helpers import (
    AGENT_TAG,
    Waiter,
    night_runs,
    noon_zone,
    report_of,
    write_memories,
)
from memory_pipeline_tests.fleet.servers_fixtures import servers_missing

pytestmark = pytest.mark.slow

WALK_AGENTS = ("ada", "bob", "cy")
NIGHTS_WAIT_S = 900.0  # three nights from the schedule's next tick, on 2 busy cores beside other work
REPORT_WAIT_S = 300.0
LOST_WAIT_S = 900.0  # from the kill: the other night, the dead night's failure and its retry's PASS


@pytest.fixture(scope="module", name="fleet")
def fleet_fixture() -> Iterator[CliFleet]:
    """The fleet as the README starts it, each command a process of its own; stopped in the README's order."""
    missing = servers_missing()
    if missing:
        pytest.skip(missing)
    # a top-level directory: the `postgres` user (root runs PostgreSQL as it) cannot enter pytest's tmp_path
    root = Path(tempfile.mkdtemp(prefix="memory-pipeline-fleet-readme-"))
    root.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", PG_URL_ENV, BROKER_ENV)}
    env.update({FLEET_ROOT_ENV: str(root), MODE_ENV: "runs", "MEMORY_PIPELINE_LLM": "offline", **BENCH_ENV,
                "NIGHTLY_CONSOLIDATION_TZ": noon_zone(datetime.now(UTC))})
    fleet = CliFleet(root, env)
    saved = dict(os.environ)
    try:
        pg = fleet.start("postgres", "--port", str(servers.free_port()))
        redis = fleet.start("redis", "--port", str(servers.free_port()))
        for command, name in ((pg, PG_URL_ENV), (redis, BROKER_ENV)):  # `export NAME=URL`, as printed
            command.wait_for(f"its `export {name}=…` line", lambda c=command, n=name: f"export {n}=" in c.output())
            fleet.env[name] = re.search(rf"export {name}=(\S+)", command.output()).group(1)  # type: ignore[union-attr]
        redis.wait_for("redis listening", listens(int(fleet.env[BROKER_ENV].rsplit(":", 1)[1].split("/")[0])))
        daemon = fleet.start("daemon")
        daemon.wait_for("the daemon's code server", lambda: any(
            "dagster" in cmdline(p) and "grpc" in cmdline(p) for p in daemon.tree()[1:]))
        for name in ("w1", "w2"):
            start_worker(fleet, name)
        os.environ.update(fleet.env)  # this process reads the same instance (DAGSTER_HOME: <root>/dagster_home)
        os.environ["DAGSTER_HOME"] = str(root / "dagster_home")
        yield fleet
    finally:
        os.environ.clear()
        os.environ.update(saved)
        left: list[int] = []
        for command in reversed(fleet.commands):  # workers, daemon, then Redis and PostgreSQL
            if command.proc.poll() is None:
                left += command.terminate()
        for command in fleet.commands:
            command.kill_everything()
        leftover = servers.processes_mentioning(str(root))
        shutil.rmtree(root, ignore_errors=True)
        assert not left, f"processes outlived their `fleet` command: {[(p, cmdline(p)) for p in left]}"
        assert not leftover, f"processes outlived the test: {leftover}"


def start_worker(fleet: CliFleet, name: str) -> Command:
    worker = fleet.start("worker", "--name", name)
    worker.wait_for(f"worker {name}'s pool process",  # dagster-celery → celery → its pool process
                    lambda: sum("celery" in cmdline(p) for p in worker.tree()[1:]) >= 3)
    return worker


def run_cli(fleet: CliFleet, *args: str, home: str | None = None,
            timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    env = {**fleet.env, **({"MEMORY_PIPELINE_HOME": home} if home else {})}
    return subprocess.run([str(CLI), *args], env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def waiter(fleet: CliFleet) -> Iterator[Waiter]:
    import dagster as dg

    with dg.DagsterInstance.get() as instance:
        yield Waiter(instance, fleet)


def test_the_readme_from_an_empty_root_to_three_pass_nights_and_a_fleet_report(fleet: CliFleet,
                                                                               waiter: Waiter) -> None:
    for seed, agent in enumerate(WALK_AGENTS, start=1):
        data = write_memories(fleet.root / f"{agent}.jsonl", 160, seed=seed, prefix=f"{agent}-a")
        # with its memories: the schedule ticks every minute here, and a night it started between a bare `add`
        # and the `import` found an empty store (FAIL, nothing compressed: seen in CI beside load)
        added = run_cli(fleet, "agents", "add", agent, "--import", str(data))
        assert added.returncode == 0 and f"added {agent}" in added.stdout, added.stderr
        assert "imported 160 memories (160 with vectors)" in added.stdout, added.stdout

    # the schedule (every minute here) starts one night per agent; the run queue holds one per agent
    records = waiter.until(lambda: _all_done(waiter, WALK_AGENTS), NIGHTS_WAIT_S, "the three agents' nights")
    for agent in WALK_AGENTS:
        (run,) = records[agent]
        assert run.dagster_run.status.value == "SUCCESS", f"{agent}: {waiter.explain(run)}"
        assert run.dagster_run.tags.get("dagster/schedule_name") == "fleet_nights"
        assert "dagster-celery/task_id" in run.dagster_run.tags  # a task per night (MEMORY_PIPELINE_CELERY_MODE)
        report = report_of(fleet.root / "agents" / agent, run.dagster_run.run_id)
        assert report.get("verdict") == "PASS" and report.get("clusters_compressed", 0) > 0, \
            f"{agent}: {report.get('verdict')} ({report.get('verdict_reason')})"

    queued = run_cli(fleet, "fleet", "report")
    assert queued.returncode == 0, queued.stderr
    run_id = re.search(r"queued the fleet report: run (\S+);", queued.stdout).group(1)  # type: ignore[union-attr]
    waiter.until(lambda: waiter.finished(run_id), REPORT_WAIT_S, "the fleet report's run")
    assert waiter.status(run_id) == "SUCCESS", waiter.explain_id(run_id)
    summary = json.loads(Path(waiter.report_path(run_id)).read_text())
    assert (len(summary["agents"]), summary["agents_pass"], summary["agents_in_flight"]) == (3, 3, 0), summary
    assert sorted(row["agent"] for row in summary["agents"] if row["verdict"] == "PASS") == list(WALK_AGENTS)

    # tonight's night already ran: one line, nothing queued; an agent nobody registered: one line
    again = run_cli(fleet, "fleet", "night", "ada")
    assert again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1, again.stderr
    assert "ada's night of " in again.stderr and "already ran" in again.stderr and "--now" in again.stderr
    unknown = run_cli(fleet, "fleet", "night", "nobody")
    assert unknown.returncode == 2 and unknown.stderr.strip().splitlines() == [
        f"error: agent 'nobody' is not registered in {fleet.root / 'agents'}: `memory-pipeline agents add nobody`"]
    assert len(night_runs(waiter.instance, "ada")) == 1


def _all_done(waiter: Waiter, agents: tuple[str, ...]) -> dict[str, list[Any]] | None:
    runs = {agent: night_runs(waiter.instance, agent) for agent in agents}
    if all(r and all(x.dagster_run.is_finished for x in r) for r in runs.values()):
        return runs
    return None


def test_a_worker_lost_whole_costs_the_other_agent_nothing_and_its_own_night_is_retried_to_a_pass(
    fleet: CliFleet, waiter: Waiter, request: pytest.FixtureRequest,
) -> None:
    agents = ("ada", "bob")
    waiter.idle(REPORT_WAIT_S)  # the walk's index updates and report done
    # No worker while both nights are queued, then one: it takes one night and the other waits in the broker (what
    # a prefetch would take), and the kill finds the first at its start. With a worker up while the nights were
    # queued, a slow second launch could find the first night nearly done, and the kill then hit the worker
    # holding the second one (STARTING until its start timeout, 30 min).
    for name in ("w1", "w2"):
        worker = next(c for c in fleet.commands if c.name == "worker" and name in c.proc.args)
        assert worker.terminate() == [], "`fleet worker` left processes behind on SIGTERM"
    for seed, agent in enumerate(agents, start=11):  # new memories: a night with work to do
        data = write_memories(fleet.root / f"{agent}-b.jsonl", 600, seed=seed, prefix=f"{agent}-b")
        assert run_cli(fleet, "import", str(data), home=str(fleet.root / "agents" / agent)).returncode == 0
    before = {agent: {r.dagster_run.run_id for r in night_runs(waiter.instance, agent)} for agent in agents}
    launches = [subprocess.Popen([str(CLI), "fleet", "night", agent, "--now"], env=fleet.env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE) for agent in agents]
    outputs = [p.communicate(timeout=300) for p in launches]
    assert all(p.returncode == 0 for p in launches), outputs

    w1 = start_worker(fleet, "w1")
    said = "; ".join(f"`fleet night {a} --now` said {out.strip()!r} {err.strip()[-300:]!r}"
                     for a, (out, err) in zip(agents, outputs, strict=True))  # fmt: skip
    victim, other = waiter.until(lambda: waiter.one_running_one_waiting(agents, before, w1), LOST_WAIT_S,
                                 f"one night running on w1 while the other waits in the broker ({said})")
    killed, killed_at = kill_worker(w1), time.time()
    w3 = start_worker(fleet, "w3")  # the operator's replacement, anywhere

    done: Callable[[], Any] = lambda: waiter.lost_night_retried(victim, other, before)  # noqa: E731
    first, retry, others = waiter.until(done, LOST_WAIT_S, f"{other}'s night and {victim}'s retry")
    # the other agent's night was never on the dead worker: one run, the new worker ran it, PASS
    (night,) = others
    assert night.dagster_run.status.value == "SUCCESS" and "dagster/parent_run_id" not in night.dagster_run.tags
    assert waiter.celery_worker(night).startswith("w3@"), waiter.celery_worker(night)
    assert report_of(fleet.root / "agents" / other, night.dagster_run.run_id).get("verdict") == "PASS"
    # the dead agent's night: failed by run monitoring's health check naming the lost worker, retried whole
    assert first.dagster_run.status.value == "FAILURE"
    assert any("Celery worker w1@" in m and "lost" in m for m in waiter.messages(first)), waiter.messages(first)
    assert retry.dagster_run.tags.get("dagster/parent_run_id") == first.dagster_run.run_id
    assert retry.dagster_run.tags.get(AGENT_TAG) == victim and retry.dagster_run.status.value == "SUCCESS"
    assert report_of(fleet.root / "agents" / victim, retry.dagster_run.run_id).get("verdict") == "PASS"
    assert not alive(killed) and w1.proc.poll() is not None  # the lost worker's `fleet worker` exited
    assert w3.proc.poll() is None
    failed_at = max(e.timestamp for e in waiter.instance.all_logs(first.dagster_run.run_id)
                    if e.dagster_event is not None and e.dagster_event.event_type_value == "PIPELINE_FAILURE")
    say(request, f"lost worker (measured, not asserted): {victim}'s night failed {failed_at - killed_at:.0f} s "
        f"after the kill, its retry passed {retry.end_time - killed_at:.0f} s after; {other}'s night "
        f"{night.end_time - killed_at:.0f} s after")


def say(request: pytest.FixtureRequest, line: str) -> None:
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line)


def kill_worker(worker: Command) -> list[int]:
    """SIGKILL to the Celery worker's main process and its pool child at once (a machine lost): nothing of it
    acknowledges, requeues or marks anything."""
    main = next(p for p in worker.tree()[1:] if " -A dagster_celery.app worker" in cmdline(p))
    targets = [main, *servers.descendants(main)]
    for pid in targets:
        os.kill(pid, signal.SIGKILL)
    return targets

