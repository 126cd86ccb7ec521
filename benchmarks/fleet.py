"""`python -m benchmarks fleet [--agents N] [--memories M] [--workers 1,2] [--max-runs R]`: a fleet's nights,
serial in-process vs dagster-daemon + the Celery executor (Redis) on a Postgres instance, at 1 and 2 workers.

Each agent gets its own generated store (benchmarks.nightly.build_store, seed = the agent's number, vectors
included so the night does not embed). Every mode starts from a fresh copy of the same stores. Distributed
modes use the real servers of the fleet tests (throwaway PostgreSQL and redis-server, dagster-daemon ticking
the fleet location's own schedule (memory_pipeline/fleet/definitions.py), dagster-celery workers of
concurrency 1) and stop them all afterwards.

Measures: wall time from the first night's start to the last night's end; agents per hour; compute = the sum of
the nights' step durations (STEP_START → STEP_SUCCESS, as Dagster records them); orchestration overhead as a
share of compute = (wall × workers − compute) / compute, i.e. the worker time that went to something else
than the steps' own work; Postgres RSS (postmaster + backends) and database size; Redis used_memory and RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.common import append_results, fmt_s, load_average, machine, table

LOCATION = "memory_pipeline.fleet.definitions"
# The fleet's schedule ticks every minute here (its night is the tick's date: one run per agent), on the
# generated stores' clock.
BENCH_ENV = {"MEMORY_PIPELINE_FLEET_CRON": "* * * * *", "MEMORY_PIPELINE_FLEET_AS_OF": "2026-11-01T03:30:00+00:00"}
AGENT_TAG = "memory_pipeline/agent"


def build_fleet(root: Path, agents: int, memories: int) -> None:
    from benchmarks.nightly import build_store
    from memory_pipeline.fleet import registry

    for i in range(agents):
        registry.add_agent(root, f"agent-{i:04d}", datetime.now(UTC),  # as `memory-pipeline agents add --import`
                           fill=partial(build_store, n=memories, seed=i))  # fmt: skip


def _verdict(home: Path, run_id: str) -> str:
    path = home / "reports" / f"compression-{run_id}.json"
    return str(json.loads(path.read_text()).get("verdict")) if path.is_file() else "none"


def serial(root: Path) -> dict[str, Any]:
    from benchmarks.nightly import run_night

    homes = sorted((root / "agents").iterdir())
    compute, verdicts, latencies = 0.0, [], []
    t0 = time.perf_counter()
    for home in homes:
        result = run_night(str(home))
        compute += sum(result["steps"].values())
        latencies.append(result["total_s"])
        verdicts.append(result["verdict"])
    wall = time.perf_counter() - t0
    return {"mode": "serial in-process", "workers": 1, "wall": wall, "compute": compute, "agents": len(homes),
            "passed": verdicts.count("PASS"), "latency_p50": statistics.median(latencies)}


def _step_compute(instance: Any, run_id: str) -> float:
    started: dict[str, float] = {}
    total = 0.0
    for entry in instance.all_logs(run_id):
        ev = entry.dagster_event
        if ev is None or not ev.step_key:
            continue
        if ev.event_type_value == "STEP_START":
            started[ev.step_key] = entry.timestamp
        elif ev.event_type_value == "STEP_SUCCESS" and ev.step_key in started:
            total += entry.timestamp - started[ev.step_key]
    return total


def distributed(root: Path, scratch: Path, workers: int, max_runs: int, timeout: float, mode: str = "steps"
                ) -> dict[str, Any]:
    import dagster as dg
    import psycopg2
    import redis as redis_client

    from memory_pipeline.fleet.processes import servers, stack

    agents = len(list((root / "agents").iterdir()))
    os.environ["MEMORY_PIPELINE_CELERY_MODE"] = mode  # read by prepare_home and by the code location
    with servers.throwaway_servers(scratch / "servers") as (pg, redis):
        home = stack.prepare_home(root / "dagster_home", LOCATION)
        env = stack.fleet_env(home, pg.url, redis.url, root, max_runs=max_runs)
        env.update({"MEMORY_PIPELINE_LLM": "offline", "MEMORY_PIPELINE_PROGRESS": "log", **BENCH_ENV})
        procs = stack.Stack(env, scratch / "logs")
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            for w in range(workers):
                procs.start(f"worker-{w + 1}", stack.worker_command(f"w{w + 1}", 1))
            procs.start("daemon", stack.daemon_command(home))
            with dg.DagsterInstance.get() as instance:
                deadline = time.monotonic() + timeout
                records: list[Any] = []
                nights = dg.RunsFilter(tags={"dagster/schedule_name": "fleet_nights"})
                run_worker_rss = 0  # the largest single run-worker process seen
                while time.monotonic() < deadline:
                    # the code server starts each run worker as a multiprocessing `spawn` child
                    daemon = procs.procs[-1].proc.pid
                    for pid, _cmd in servers.processes_mentioning("spawn_main"):
                        if pid in servers.descendants(daemon):
                            run_worker_rss = max(run_worker_rss, servers.rss_bytes(pid))
                    records = list(instance.get_run_records(nights))
                    done = [r for r in records if r.dagster_run.status.value in ("SUCCESS", "FAILURE", "CANCELED")]
                    if len(records) >= agents and len(done) == len(records):
                        break
                    time.sleep(2)
                else:
                    raise SystemExit(f"fleet benchmark: timed out with {len(records)} runs: see {scratch / 'logs'}")
                compute = sum(_step_compute(instance, r.dagster_run.run_id) for r in records)
                verdicts = [_verdict(root / "agents" / r.dagster_run.tags[AGENT_TAG], r.dagster_run.run_id)
                            for r in records]
                wall = max(r.end_time for r in records) - min(r.start_time for r in records)
                latencies = [r.end_time - r.start_time for r in records]
            conn = psycopg2.connect(host="127.0.0.1", port=pg.port, user="postgres", dbname="dagster")
            with conn.cursor() as cur:
                cur.execute("SELECT pg_database_size('dagster')")
                db_bytes = int(cur.fetchone()[0])
            conn.close()
            info = redis_client.Redis.from_url(redis.url).info("memory")
            memory = {"pg_rss": servers.tree_rss_bytes(pg.pid), "pg_db": db_bytes,
                      "redis_used": int(info["used_memory"]), "redis_rss": servers.rss_bytes(redis.pid),
                      "worker_rss": sum(servers.tree_rss_bytes(p.proc.pid) for p in procs.procs
                                        if p.name.startswith("worker")),
                      "run_worker_rss": run_worker_rss, "pg_db_per_agent": db_bytes / max(agents, 1)}
        finally:
            left = procs.close()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    if left:
        raise SystemExit(f"fleet benchmark: processes outlived it: {left}")
    what = "a task per step" if mode == "steps" else "a task per night"
    return {"mode": f"daemon + Celery ({what}), {workers} worker{'s' if workers > 1 else ''}", "workers": workers,
            "wall": wall, "compute": compute, "agents": len(records), "passed": verdicts.count("PASS"),
            "latency_p50": statistics.median(latencies), **memory}


def _mib(n: float) -> str:
    return f"{n / 2**20:.0f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks fleet", description=__doc__)
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--workers", default="1,2", help="comma-separated Celery worker counts")
    parser.add_argument("--max-runs", type=int, default=4, help="max_concurrent_runs of the run queue")
    parser.add_argument("--timeout", type=float, default=7200.0, help="seconds per distributed mode")
    parser.add_argument("--skip-serial", action="store_true")
    parser.add_argument("--celery-mode", default="steps",
                        help="comma-separated: steps (celery_executor), runs (CeleryRunLauncher, a task per night)")
    args = parser.parse_args(argv)
    env, load_before = machine(), load_average()
    started = time.strftime("%H:%M UTC", time.gmtime())
    scratch = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    try:
        template = scratch / "template"
        t = time.perf_counter()
        build_fleet(template, args.agents, args.memories)
        build_s = time.perf_counter() - t
        rows: list[dict[str, Any]] = []
        if not args.skip_serial:
            shutil.copytree(template, scratch / "serial")
            rows.append(serial(scratch / "serial"))
            print(rows[-1], flush=True)
        for mode in (m for m in args.celery_mode.split(",") if m):
            for workers in (int(w) for w in args.workers.split(",") if w):
                root = scratch / f"celery-{mode}-{workers}"
                shutil.copytree(template, root)
                rows.append(distributed(root, scratch / f"run-{mode}-{workers}", workers, args.max_runs,
                                        args.timeout, mode))
                print(rows[-1], flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    body = _report(rows, args, build_s, started)
    append_results(f"fleet: {args.agents} agents × {args.memories:,} memories", body, env, load_before)


def _report(rows: list[dict[str, Any]], args: argparse.Namespace, build_s: float, started: str) -> str:
    serial_row = next((r for r in rows if r["mode"].startswith("serial")), None)
    lines = []
    out = []
    for r in rows:
        per_agent = r["compute"] / max(r["agents"], 1)
        overhead = (r["wall"] * r["workers"] - r["compute"]) / r["compute"] if r["compute"] else float("nan")
        out.append([
            r["mode"], f"{r['passed']}/{r['agents']}", fmt_s(r["wall"]), f"{r['agents'] / r['wall'] * 3600:,.0f}",
            fmt_s(per_agent), fmt_s(r["latency_p50"]), f"{overhead:.0%}",
            _mib(r["pg_rss"]) if "pg_rss" in r else "—", _mib(r["pg_db"]) if "pg_db" in r else "—",
            _mib(r["redis_used"]) + " / " + _mib(r["redis_rss"]) if "redis_used" in r else "—",
            _mib(r["worker_rss"]) if "worker_rss" in r else "—",
            _mib(r["run_worker_rss"]) if "run_worker_rss" in r else "—",
        ])
    lines.append(table(
        ["mode", "PASS", "wall s", "agents / h", "compute s / agent", "night p50 s", "overhead / compute",
         "Postgres RSS MiB", "Postgres DB MiB", "Redis used / RSS MiB", "Celery workers RSS MiB",
         "one run worker RSS MiB"], out))
    lines.append("")
    lines.append(f"Started {started}; stores built in {build_s:.0f} s (not timed above); max_concurrent_runs "
                 f"{args.max_runs}; Celery workers of concurrency 1, prefork; LLM offline (no API calls).")
    if serial_row:
        lines.append(f"Serial compute per agent (in-process): {serial_row['compute'] / serial_row['agents']:.2f} s.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
