"""`memory-pipeline fleet status`: each server up or down with its address and pid, the workers the broker sees,
the runs queued and in flight, and each agent's last night. Exit status 0 when the fleet can run a night
(PostgreSQL, Redis and the daemon up, a worker answering), else 1."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memory_pipeline.fleet.processes import health

IN_FLIGHT = ("STARTING", "STARTED", "CANCELING")
QUEUED = ("QUEUED", "NOT_STARTED")


def _pid(found: list[health.Record], kind: str) -> str:
    pids = [str(r.pid) for r in found if r.kind == kind]
    return "pid " + ",".join(pids) if pids else "pid -"


def server_rows(root: Path, pg_url: str, broker: str) -> tuple[list[tuple[str, bool, str, str]], list[str]]:
    """(name, up, address, pid) for postgres, redis, daemon and webserver(s); the workers answering."""
    found = health.records(root)
    pg_host, pg_port = health.url_address(pg_url, 5432)
    redis_host, redis_port = health.url_address(broker, 6379)
    rows = [("postgres", health.port_listens(pg_host, pg_port), f"{pg_host}:{pg_port}", _pid(found, "postgres")),
            ("redis", health.port_listens(redis_host, redis_port), f"{redis_host}:{redis_port}",
             _pid(found, "redis"))]
    beats = health.daemon_heartbeats(pg_url) if rows[0][1] else {}
    last = max(beats.values(), default=0.0)
    age = time.time() - last
    fresh = bool(beats) and age <= health.HEARTBEAT_FRESH_S
    rows.append(("daemon", fresh, f"heartbeat {age:.0f} s ago" if beats else "no heartbeat", _pid(found, "daemon")))
    webservers = [r for r in found if r.kind == "webserver"]
    for record in webservers:
        host, port = health.url_address(record.address, 3000)
        rows.append(("webserver", health.port_listens(host, port), record.address, f"pid {record.pid}"))
    if not webservers:
        rows.append(("webserver", False, "none started here", "pid -"))
    workers = health.workers_answering(broker) if rows[1][1] else []
    return rows, workers


def run_lines(instance: Any, agents: list[str]) -> list[str]:
    import dagster as dg

    from memory_pipeline.fleet.processes.names import AGENT_TAG

    def count(states: tuple[str, ...]) -> int:
        return int(instance.get_runs_count(dg.RunsFilter(statuses=[dg.DagsterRunStatus(s) for s in states])))

    lines = [f"runs       {count(QUEUED)} queued, {count(IN_FLIGHT)} in flight"]
    for agent in agents:
        last = instance.get_run_records(dg.RunsFilter(job_name="agent_night", tags={AGENT_TAG: agent}), limit=1)
        if not last:
            lines.append(f"night      {agent}: none yet")
            continue
        run = last[0]
        when = run.end_time or run.start_time or run.create_timestamp.timestamp()
        at = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(when))
        lines.append(f"night      {agent}: {run.dagster_run.status.value} {at} (run {run.dagster_run.run_id[:8]})")
    return lines


def report(root: Path, agents: list[str], environ: Mapping[str, str], say: Any = print) -> int:
    """Print the fleet's status (the last night of each of `agents`); 0 when it can run a night, else 1."""
    from memory_pipeline.fleet.processes.executor import BROKER_ENV, PG_URL_ENV

    pg_url = environ.get(PG_URL_ENV, "").strip()
    broker = environ.get(BROKER_ENV, "").strip()
    if not pg_url or not broker:
        missing = PG_URL_ENV if not pg_url else BROKER_ENV
        say(f"fleet down: {missing} is not set (`fleet postgres` and `fleet redis` print the lines to export)")
        return 1
    rows, workers = server_rows(root, pg_url, broker)
    for name, ok, address, pid in rows:
        say(f"{name:<10} {'up' if ok else 'down':<5} {address:<28} {pid}")
    say(f"workers    {len(workers)} answering" + (": " + ", ".join(workers) if workers else ""))
    state = {name: ok for name, ok, _, _ in rows}
    if state["postgres"]:
        import dagster as dg

        from memory_pipeline.fleet.processes.executor import fleet_dagster_home

        home = fleet_dagster_home(environ)
        if (home / "dagster.yaml").is_file():
            with dg.DagsterInstance.from_config(str(home)) as instance:
                for line in run_lines(instance, agents):
                    say(line)
    ready = state["postgres"] and state["redis"] and state["daemon"] and bool(workers)
    say("fleet up: it can run a night" if ready else "fleet not ready: it needs postgres, redis, the daemon and a "
        "worker up")
    return 0 if ready else 1
