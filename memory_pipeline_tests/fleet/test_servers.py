"""The fleet location (memory_pipeline.fleet.definitions) on Dagster's production path with real servers:
PostgreSQL instance storage, the queued run coordinator (one run per agent), dagster-daemon running the
registry sensor (agents → partitions) and ticking the fleet's schedule, and the Celery executor on Redis with two
dagster-celery workers. Slow: a few minutes (the schedule ticks once a minute; every step of a night is a Celery
task, so the test's cost is agents × steps: six agents prove what twenty did — more nights than run slots, so the
queue holds some back and lets them through while one is parked — at under a third of the round trips)."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import duckdb
import pytest

from memory_pipeline.fleet.processes.servers import descendants
from memory_pipeline.store import MemoryStore, invariants
from memory_pipeline_tests.fleet.servers_fixtures import (
    AGENT_TAG,
    DONE,
    MAX_RUNS,
    SLOW,
    Fleet,
    build_agent,
    fleet_fixture,  # noqa: F401  (the fixture `fleet`)
    report_of,
)

pytestmark = pytest.mark.slow

AGENTS = 6  # twice MAX_RUNS: the queue must hold nights back, and let them through past the parked one
# bounds, never targets (two cores beside other work): each wait ends as soon as the instance's records say so
REACH_HOLD_S = 1200  # the schedule's next tick, the queue and the slow night's way to its hold
OTHER_NIGHT_S = 1500  # another night finishing while the slow one is parked (its hold lasts up to HOLD_LIMIT_S)
ALL_NIGHTS_S = 2400  # every night, and the killed night's step run again


def _agent(record: Any) -> str:
    return str(record.dagster_run.tags[AGENT_TAG])


def _status(record: Any) -> str:
    return str(record.dagster_run.status.value)


def _memory_ids(home: Any) -> tuple[list[str], list[list[str]]]:
    """Every memory id in an agent's store, and the source ids of each summary."""
    import json

    con = duckdb.connect(str(home / "memory.duckdb"), read_only=True)
    try:
        ids = [r[0] for r in con.execute("SELECT id FROM memories").fetchall()]
        lineage = [
            json.loads(r[0])["source_ids"]
            for r in con.execute("SELECT compressed_from FROM memories WHERE compressed_from IS NOT NULL").fetchall()
        ]
        pending = invariants.pending_rows(con)
    finally:
        con.close()
    assert pending == [], f"{home.name}: pending summaries left: {pending[:3]}"
    return ids, lineage


def _celery_worker_of(fleet: Fleet, run_id: str, step: str) -> str | None:
    """The Celery worker (its node name) executing `step` of a run, from the engine event the worker writes."""
    for entry in fleet.instance.all_logs(run_id):
        ev = entry.dagster_event
        if ev is None or ev.event_type_value != "ENGINE_EVENT" or entry.step_key != step:
            continue
        worker = ev.engine_event_data.metadata.get("Celery worker")
        if worker is not None:
            return str(getattr(worker, "value", worker))
    return None


def _kill_step_process(fleet: Fleet, worker: str) -> int:
    """SIGKILL the pool process of the named worker (w1@host → the `worker-1` process group): the process
    that executes the step, as when the kernel kills it for memory or the machine reboots it."""
    proc = next(p for p in fleet.stack.procs if p.name == f"worker-{worker.split('@')[0][1:]}")
    children = [pid for pid in descendants(proc.proc.pid) if b"celery" in _cmdline(pid)]
    pool = children[-1]  # dagster-celery → celery main → its prefork pool process (the youngest)
    os.kill(pool, signal.SIGKILL)
    return pool


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def test_agents_nights_one_killed_mid_step_all_pass_and_the_slow_one_holds_nobody_back(fleet: Fleet) -> None:
    """Six agents' nights from the schedule, through the queue and the Celery workers. One agent's night (SLOW)
    is parked at a hold point in compressed_memories, its pending summaries written (memory_pipeline.faults; the
    fixture arms it for that agent only); while it is parked other nights finish, then the worker process running
    its step is killed there: where the step dies follows from the hold, not from how fast the machine is."""
    fast = [f"agent-{i:02d}" for i in range(AGENTS - 1)]
    build_agent(fleet.agents_dir / SLOW, 160, seed=40)  # first: its night parks while the others' go on
    for i, agent in enumerate(fast):
        build_agent(fleet.agents_dir / agent, 160, seed=i)

    reached, release = fleet.holds / "night_phase1.reached", fleet.holds / "night_phase1.release"
    try:
        deadline = time.monotonic() + REACH_HOLD_S
        while not reached.exists():
            assert time.monotonic() < deadline, f"the slow agent's night never reached its hold\n{fleet.tail_logs()}"
            for proc in fleet.stack.procs:
                assert proc.alive(), f"{proc.name} exited: {proc.log.read_text(errors='replace')[-2000:]}"
            ended = [_status(r) for r in fleet.runs(SLOW) if _status(r) in DONE]
            assert not ended, f"the slow night ended ({ended}) before its hold\n{fleet.tail_logs()}"
            time.sleep(0.5)
        # the slow agent holds nobody back, by the run coordinator's own records (never by wall-clock order,
        # which load changes): while its night is parked, other agents' nights leave the queue and finish
        finished_at_park = {r.dagster_run.run_id for r in fleet.runs() if _agent(r) != SLOW and _status(r) in DONE}
        fleet.wait_runs(lambda rs: any(_agent(r) != SLOW and _status(r) == "SUCCESS"
                                       and r.dagster_run.run_id not in finished_at_park for r in rs),
                        timeout=OTHER_NIGHT_S, what="another agent's night to finish while the slow one is parked")
        (slow,) = [r for r in fleet.runs(SLOW) if r.dagster_run.tags.get("dagster/parent_run_id") is None]
        assert _status(slow) == "STARTED", f"the slow night is no longer parked: {_status(slow)}"
        worker = _celery_worker_of(fleet, slow.dagster_run.run_id, "compressed_memories")
        assert worker, f"no Celery worker recorded for the held step\n{fleet.tail_logs()}"
        with MemoryStore(fleet.agents_dir / SLOW / "memory.duckdb").connect() as con:
            assert invariants.pending_rows(con), "parked after phase 1: its summaries are written as pending"
        assert not (fleet.holds / "night_phase1.gave_up").exists(), "the hold ran out before the kill"
        _kill_step_process(fleet, worker)
    finally:
        release.touch()  # the step run again (requeued, or by the retry run) passes the hold at once

    def settled(records: list[Any]) -> bool:
        """Every agent's nights ended and nothing more will start: the slow night passed, or a failure is final
        (a retry failed, or a fast night failed: the assertions below say which) — no waiting out the bound."""
        if not ({_agent(r) for r in records} >= {SLOW, *fast} and all(_status(r) in DONE for r in records)):
            return False
        failed_retry = any(_status(r) == "FAILURE" and r.dagster_run.tags.get("dagster/parent_run_id")
                           for r in records)  # fmt: skip
        failed_fast = any(_status(r) != "SUCCESS" and _agent(r) != SLOW for r in records)
        slow_passed = any(_status(r) == "SUCCESS" and _agent(r) == SLOW for r in records)
        return slow_passed or failed_retry or failed_fast

    records = fleet.wait_runs(settled, timeout=ALL_NIGHTS_S,
                              what="every agent's night and the killed night's step, run again")
    by_agent: dict[str, list[Any]] = {}
    for r in records:
        by_agent.setdefault(_agent(r), []).append(r)
    assert sorted(by_agent) == sorted([SLOW, *fast])

    slow_runs = sorted(by_agent[SLOW], key=lambda r: r.create_timestamp)
    # The killed step is run again one of two ways, and which depends on which Celery process notices the death
    # first (load decides that): late acknowledgement with task_reject_on_worker_lost (deploy/fleet/celery.yaml)
    # puts it back on the queue and the same run takes it again; or the run fails and run_retries starts one
    # retry. Either way the night costs one step again, never another agent's, and ends in one PASS.
    if len(slow_runs) == 1:
        (night,) = slow_runs
        taken = [e for e in fleet.instance.all_logs(night.dagster_run.run_id)
                 if e.dagster_event is not None and e.dagster_event.event_type_value == "ENGINE_EVENT"
                 and e.step_key == "compressed_memories"
                 and "Celery worker" in e.dagster_event.engine_event_data.metadata]  # fmt: skip
        assert len(taken) == 2, "a worker took the killed step twice: the dead process, then after the requeue"
    else:
        first, night = slow_runs[0], slow_runs[-1]
        assert len(slow_runs) == 2 and _status(first) == "FAILURE", [_status(r) for r in slow_runs]
        assert night.dagster_run.tags.get("dagster/parent_run_id") == first.dagster_run.run_id  # run_retries
    assert _status(night) == "SUCCESS", f"{_status(night)}\n{fleet.tail_logs()}"
    assert report_of(fleet.agents_dir / SLOW, night.dagster_run.run_id).get("verdict") == "PASS"
    _memory_ids(fleet.agents_dir / SLOW)  # no pending summary survived: the rerun reconciled the dead attempt's

    for agent in fast:
        runs = by_agent[agent]
        assert len(runs) == 1, f"{agent}: one night, one run (the run key): {[_status(r) for r in runs]}"
        run = runs[0]
        assert _status(run) == "SUCCESS", f"{agent}: {_status(run)}\n{fleet.tail_logs()}"
        report = report_of(fleet.agents_dir / agent, run.dagster_run.run_id)
        assert report.get("verdict") == "PASS", f"{agent}: verdict {report.get('verdict')}"
        assert report.get("clusters_compressed", 0) > 0  # the night did real work on this agent's store

        # isolation: only this agent's memories (its seed's ids), and summaries made only of them
        ids, lineage = _memory_ids(fleet.agents_dir / agent)
        seed = int(agent.split("-")[1])
        originals = [i for i in ids if i.startswith("bench-")]
        assert len(originals) == 160 and all(i.startswith(f"bench-{seed:02d}-") for i in originals), agent
        assert lineage and all(s.startswith(f"bench-{seed:02d}-") for sources in lineage for s in sources), agent

    # the runs really ran on the Celery workers, several at a time (max_concurrent_runs), one per agent at most
    starts = sorted((r.start_time, r.end_time) for r in records)
    overlapping = max(sum(1 for s, e in starts if s <= t < e) for t, _ in starts)
    assert overlapping >= 2, "the queue ran the agents' nights one after another"
    assert overlapping <= MAX_RUNS, "more runs at once than max_concurrent_runs"
    for agent, runs in by_agent.items():
        spans = sorted((r.start_time, r.end_time) for r in runs)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), f"{agent}: two nights at once"
    fleet.archive_agents()
