"""The fleet location (memory_pipeline.fleet_definitions) on Dagster's production path with real servers (issue 21
part 4): PostgreSQL instance storage, the queued run coordinator (one run per agent), dagster-daemon running the
registry sensor (agents → partitions) and ticking the fleet's schedule, and the Celery executor on Redis with two
dagster-celery workers. Slow: several minutes (the schedule ticks once a minute)."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import duckdb
import pytest

from memory_pipeline.fleet_ops.servers import descendants
from memory_pipeline.store import MemoryStore, invariants
from memory_pipeline_tests.fleet.servers_fixtures import (
    AGENT_TAG,
    DONE,
    SLOW,
    Fleet,
    build_agent,
    fleet_fixture,  # noqa: F401  (the fixture `fleet`)
    report_of,
)

pytestmark = pytest.mark.slow

AGENTS = 20


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


def test_twenty_agents_nights_through_the_daemon(fleet: Fleet) -> None:
    for i in range(AGENTS):
        build_agent(fleet.agents_dir / f"agent-{i:02d}", 160, seed=i)

    records = fleet.wait_runs(
        lambda rs: len({_agent(r) for r in rs}) == AGENTS and all(_status(r) in DONE for r in rs),
        timeout=1800, what=f"{AGENTS} agents' nights",  # a bound, not a target: 2 cores, CI beside other work
    )

    by_agent: dict[str, list[Any]] = {}
    for r in records:
        by_agent.setdefault(_agent(r), []).append(r)
    assert sorted(by_agent) == [f"agent-{i:02d}" for i in range(AGENTS)]
    for agent, runs in by_agent.items():
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
    assert overlapping <= 6, "more runs at once than max_concurrent_runs"
    fleet.archive_agents()


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


def _queue_window(fleet: Fleet, record: Any) -> tuple[float, float]:
    """When the run coordinator enqueued a run (its event) and when the run left the queue and started (its
    record's start time: this Dagster writes no dequeue event)."""
    from dagster import DagsterEventType

    run_id = record.dagster_run.run_id
    enqueued = [float(e.timestamp) for e in fleet.instance.all_logs(run_id)
                if e.dagster_event is not None and e.dagster_event.event_type == DagsterEventType.RUN_ENQUEUED]
    assert enqueued and record.start_time, f"{run_id}: enqueued {enqueued}, started {record.start_time}"
    return enqueued[0], float(record.start_time)


def test_a_killed_step_process_is_requeued_its_night_passes_and_holds_nobody_back(fleet: Fleet) -> None:
    """The slow agent's night is parked at a hold point in compressed_memories, its pending summaries written
    (memory_pipeline.faults; the fixture arms it for agent SLOW only), and the worker process running that step
    is killed there: where the step dies follows from the hold, not from how fast the machine is, so the slow
    agent's store can be as small as the others'."""
    fast = [f"fast-{i}" for i in range(3)]
    for i, agent in enumerate(fast):  # registered first: no fast night is scheduled after the slow one
        build_agent(fleet.agents_dir / agent, 160, seed=41 + i)
    build_agent(fleet.agents_dir / SLOW, 160, seed=40)

    reached, release = fleet.holds / "night_phase1.reached", fleet.holds / "night_phase1.release"
    deadline = time.monotonic() + 900  # bounds the schedule's next tick, the queue and the night's way there
    while not reached.exists():
        assert time.monotonic() < deadline, f"the slow agent's night never reached its hold\n{fleet.tail_logs()}"
        for proc in fleet.stack.procs:
            assert proc.alive(), f"{proc.name} exited: {proc.log.read_text(errors='replace')[-2000:]}"
        time.sleep(0.1)
    try:
        (slow,) = [r for r in fleet.runs(SLOW) if r.dagster_run.tags.get("dagster/parent_run_id") is None]
        worker = _celery_worker_of(fleet, slow.dagster_run.run_id, "compressed_memories")
        assert worker, f"no Celery worker recorded for the held step\n{fleet.tail_logs()}"
        with MemoryStore(fleet.agents_dir / SLOW / "memory.duckdb").connect() as con:
            assert invariants.pending_rows(con), "parked after phase 1: its summaries are written as pending"
        assert not (fleet.holds / "night_phase1.gave_up").exists(), "the hold ran out before the kill"
        _kill_step_process(fleet, worker)
    finally:
        release.touch()  # the step run again (requeued, or by the retry run) passes the hold at once

    def finished(records: list[Any]) -> bool:
        slow_runs = [r for r in records if _agent(r) == SLOW]
        return (
            {_agent(r) for r in records} >= {SLOW, *fast}
            and all(_status(r) in DONE for r in records)
            and any(_status(r) == "SUCCESS" for r in slow_runs)
        )

    records = fleet.wait_runs(finished, timeout=1200, what="the killed night's step, run again")
    slow_runs = sorted((r for r in records if _agent(r) == SLOW), key=lambda r: r.create_timestamp)
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
    report = report_of(fleet.agents_dir / SLOW, night.dagster_run.run_id)
    assert report.get("verdict") == "PASS"
    _memory_ids(fleet.agents_dir / SLOW)  # no pending summary survived: the rerun reconciled the dead attempt's

    # the slow agent held nobody back, by the run coordinator's own records (never by wall-clock order, which
    # load changes): no fast night waited in the queue for a slow night to free its slot, and no agent ever had
    # two nights in flight (the per-agent limit)
    for agent in fast:
        (run,) = [r for r in records if _agent(r) == agent]
        assert _status(run) == "SUCCESS", agent
        enqueued, dequeued = _queue_window(fleet, run)
        released = [r.dagster_run.run_id for r in slow_runs if r.end_time and enqueued < r.end_time <= dequeued]
        assert not released, f"{agent}'s night left the queue only when the slow night {released} ended"
    for agent in (SLOW, *fast):
        spans = sorted((r.start_time, r.end_time) for r in records if _agent(r) == agent)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), f"{agent}: two nights at once"
    fleet.archive_agents()
