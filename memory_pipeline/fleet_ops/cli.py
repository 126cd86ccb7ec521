"""`memory-pipeline fleet postgres|redis|daemon|webserver|worker|serve`: each of the fleet's processes, one command,
in the foreground (run each under systemd, supervisord or a terminal of its own). See notes on "Running a fleet".
Each owns its server's process tree: SIGTERM or Ctrl-C stops all of it (fleet_ops/supervise.py). `fleet night
AGENT [--now]` and `fleet report` queue one run on the instance and return (fleet_ops/launch.py).

Every command reads the same variables: MEMORY_PIPELINE_FLEET_ROOT (the directory every machine shares),
MEMORY_PIPELINE_PG_URL, MEMORY_PIPELINE_CELERY_BROKER, and optionally MEMORY_PIPELINE_MAX_CONCURRENT_RUNS.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.fleet import IMPORT_BATCH
from memory_pipeline.fleet_ops.executor import BROKER_ENV, FLEET_ROOT_ENV, MAX_RUNS_ENV, PG_URL_ENV, fleet_dagster_home

DEFAULT_MAX_RUNS = "4"


def _root() -> Path:
    root = os.environ.get(FLEET_ROOT_ENV, "").strip()
    if not root:
        raise UserError(f"set {FLEET_ROOT_ENV} to the directory every fleet machine shares (agents, instance)")
    return Path(root)


def _need(name: str, example: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise UserError(f"set {name} (e.g. {example}) — the same value on every fleet machine")
    return value


def _instance_env() -> dict[str, str]:
    from memory_pipeline.fleet_ops.servers import check_database
    from memory_pipeline.fleet_ops.stack import fleet_env, prepare_home

    root = _root()
    pg = _need(PG_URL_ENV, "postgresql+psycopg2://postgres@db-host:5432/dagster")
    broker = _need(BROKER_ENV, "redis://redis-host:6379/0")
    check_database(pg)  # one line naming the URL, instead of each service's 30 s of retries and a traceback
    home = prepare_home(fleet_dagster_home())
    return fleet_env(home, pg, broker, root, int(os.environ.get(MAX_RUNS_ENV) or DEFAULT_MAX_RUNS))


def _serve(cmd: list[str], env: dict[str, str], **kwargs: Any) -> int:
    """The server in a process group this command owns: SIGTERM/Ctrl-C here stops the whole tree."""
    from memory_pipeline.fleet_ops import supervise

    return supervise.run(cmd, env, **kwargs)


def cmd_postgres(args: argparse.Namespace) -> int:
    from memory_pipeline.fleet_ops import servers

    directory = Path(args.data) if args.data else _root() / "postgres"
    data = directory / "data"
    directory.mkdir(parents=True, exist_ok=True)
    servers.init_postgres(data)
    url = servers.pg_url(args.port)

    def ready(proc: subprocess.Popen[bytes]) -> None:  # the `dagster` database, created when missing
        servers.wait_for_port(args.port, proc, "postgres")
        servers.retry(lambda: servers.create_database(args.port))
        print(f"export {PG_URL_ENV}={url}", flush=True)

    # PostgreSQL refuses root: as root it runs as the `postgres` user it was initialised for. SIGINT is its fast
    # shutdown (SIGTERM would wait for every connected daemon, webserver and worker to disconnect).
    return _serve(servers.postgres_command(data, args.port), dict(os.environ), stop_signal=signal.SIGINT,
                  user=servers.postgres_user(), cwd=data, ready=ready)


def cmd_redis(args: argparse.Namespace) -> int:
    from memory_pipeline.fleet_ops import servers

    directory = Path(args.data) if args.data else _root() / "redis"
    directory.mkdir(parents=True, exist_ok=True)
    print(f"export {BROKER_ENV}=redis://127.0.0.1:{args.port}/0", flush=True)
    return _serve(servers.redis_command(directory, args.port, persistent=True), dict(os.environ))


def cmd_daemon(args: argparse.Namespace) -> int:
    from memory_pipeline.fleet_ops.stack import daemon_command

    env = _instance_env()
    return _serve(daemon_command(Path(env["DAGSTER_HOME"])), env)


def cmd_webserver(args: argparse.Namespace) -> int:
    from memory_pipeline.fleet_ops.stack import webserver_command

    env = _instance_env()
    return _serve(webserver_command(Path(env["DAGSTER_HOME"]), args.host, args.port), env)


def cmd_worker(args: argparse.Namespace) -> int:
    import socket

    from memory_pipeline.fleet_ops.stack import worker_command

    env = _instance_env()
    name = args.name or f"worker-{socket.gethostname()}-{os.getpid()}"
    return _serve(worker_command(name, args.concurrency), env)


@contextmanager
def _fleet_instance() -> Iterator[Any]:
    """The fleet's instance, in this process (the same variables and DAGSTER_HOME as the daemon's)."""
    import dagster as dg

    os.environ.update(_instance_env())
    with dg.DagsterInstance.get() as instance:
        yield instance


def cmd_night(args: argparse.Namespace) -> int:
    from memory_pipeline.fleet import registry
    from memory_pipeline.fleet_ops import launch

    registry.agent_home(registry.fleet_root(), args.agent)  # an unknown agent: one line, before anything loads
    with _fleet_instance() as instance:
        night, queued = launch.queue_night(instance, args.agent, now=args.now)
    print(f"queued {args.agent}'s night ({night}): run {queued.run_id}")
    print(f"  it starts once {args.agent} has no other run in flight (memory_pipeline/agent="
          f"{queued.tags.get('memory_pipeline/agent', '?')}) and a run slot is free; follow it in the UI (Runs)")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from memory_pipeline.fleet_ops import launch

    with _fleet_instance() as instance:
        queued = launch.queue_report(instance)
    print(f"queued the fleet report: run {queued.run_id}; it writes {_root() / 'reports'}/fleet-<time>.json")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import shutil

    import uvicorn

    from memory_pipeline.fleet import serving
    from memory_pipeline.fleet.gateway import GatewayConfig
    from memory_pipeline.fleet.registry import fleet_root, list_agents
    from memory_pipeline.operator.http_timeouts import HTTP_PROTOCOL, read_timeouts

    read_timeouts()  # a malformed bound is one line now, not an error in every worker
    root = fleet_root()
    try:
        config = GatewayConfig(max_body_bytes=args.max_body_bytes, rate_per_s=args.rate, burst=args.burst,
                               import_batch=args.import_batch)
    except ValueError as exc:
        raise UserError(f"fleet serve: {exc}") from None
    workers = args.workers if args.workers is not None else serving.default_workers()
    if workers < 1:
        raise UserError("fleet serve: --workers must be at least 1")
    rate_dir = serving.new_rate_dir() if workers > 1 else None
    os.environ[serving.SETTINGS_ENV] = serving.settings(config, workers, rate_dir)
    print(f"serving {len(list_agents(root))} agent(s) of {root} at http://{args.host}:{args.port}/mcp with "
          f"{workers} worker process(es) (probes: /healthz, /readyz; audit: {root / 'gateway' / 'audit.jsonl'})",
          flush=True)  # fmt: skip
    try:
        # http: uvicorn's protocol with read-time bounds on each request's headers and body (a stalled client's
        # connection is closed; MEMORY_PIPELINE_HTTP_HEADER_TIMEOUT / _BODY_TIMEOUT, read by each worker)
        uvicorn.run("memory_pipeline.fleet_ops.cli:gateway_app", factory=True, host=args.host, port=args.port,
                    workers=workers, log_level="warning", http=HTTP_PROTOCOL)  # fmt: skip
    finally:
        if rate_dir is not None:
            shutil.rmtree(rate_dir, ignore_errors=True)
    return 0


def gateway_app() -> Any:
    """The app of one `fleet serve` worker (uvicorn's `factory=True`): the fleet root and the settings the command
    put in the environment (fleet/serving.py), every agent's server built and warmed in the app's lifespan."""
    from memory_pipeline.fleet import serving
    from memory_pipeline.fleet.gateway import build_app
    from memory_pipeline.fleet.registry import fleet_root
    from memory_pipeline.mcp_server import build_server, quiet_libraries, warm_server
    from memory_pipeline.store.remember import ingest_writes

    raw = serving.raw_settings()
    if int(raw.get("workers", 1)) > 1 and isinstance(raw.get("parent"), int):
        serving.die_with_parent(raw["parent"])
    config, limiter = serving.read_settings(raw)
    def warm(home: Path) -> None:
        ingest_writes(home)  # what a killed or stopped gateway left spooled (a busy store: the sensor's, later)
        warm_server(home)

    app = build_app(fleet_root(), lambda home: build_server(home, import_at=config.import_batch), config,
                    warm=warm, limiter=limiter)  # fmt: skip
    quiet_libraries()
    return app


def register(sub: argparse._SubParsersAction) -> None:
    fleet = sub.add_parser("fleet", help="run the fleet's servers: postgres, redis, daemon, webserver, worker, serve")
    cmds = fleet.add_subparsers(dest="fleet_command", required=True)
    p = cmds.add_parser("postgres", help="a PostgreSQL server for the instance (initialised on first use)")
    p.add_argument("--data", help="its data folder (default: $MEMORY_PIPELINE_FLEET_ROOT/postgres)")
    p.add_argument("--port", type=int, default=5432, help="the port to listen on (default %(default)s)")
    p.set_defaults(fn=cmd_postgres)
    p = cmds.add_parser("redis", help="the Celery broker (redis-server, append-only file)")
    p.add_argument("--data", help="its data folder (default: $MEMORY_PIPELINE_FLEET_ROOT/redis)")
    p.add_argument("--port", type=int, default=6379, help="the port to listen on (default %(default)s)")
    p.set_defaults(fn=cmd_redis)
    p = cmds.add_parser(
        "daemon", help="dagster-daemon: schedules, the run queue, run monitoring and retries",
        description="Run dagster-daemon on the fleet's instance, in the foreground until Ctrl-C: it ticks the "
        "schedules and sensors (each agent's night, the fleet report), starts queued runs within the queue's "
        "limits, fails runs whose worker is gone and retries them. Run one per fleet.",
    )  # fmt: skip
    p.set_defaults(fn=cmd_daemon)
    p = cmds.add_parser("webserver", help="dagster-webserver on the fleet's instance")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default %(default)s)")
    p.add_argument("--port", type=int, default=3000, help="the port to listen on (default %(default)s)")
    p.set_defaults(fn=cmd_webserver)
    p = cmds.add_parser("serve", help="one MCP endpoint (/mcp, streamable HTTP) for every agent, by bearer token")
    p.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1; terminate TLS at the ingress")
    p.add_argument("--port", type=int, default=8780, help="the port to listen on (default %(default)s)")
    p.add_argument("--max-body-bytes", type=int, default=1 << 20, help="larger requests get 413 (default 1 MiB)")
    p.add_argument("--rate", type=float, default=20.0, help="calls per second per agent, sustained (default 20)")
    p.add_argument("--burst", type=int, default=40, help="calls an agent may make at once (default 40); more: 429")
    p.add_argument("--import-batch", type=int, default=IMPORT_BATCH,
                   help="an agent's remembered memories are imported into its store once this many wait (default "
                   f"{IMPORT_BATCH}); they are durable and searchable at once either way, and the "
                   "agent_writes sensor imports the rest within a minute")  # fmt: skip
    p.add_argument("--workers", type=int, default=None,
                   help="server processes sharing the port (default: one per CPU, within a container's CPU limit); "
                   "each loads every agent; the rate limit holds per agent across all of them")  # fmt: skip
    p.set_defaults(fn=cmd_serve)
    p = cmds.add_parser("night", help="queue one agent's night now (it waits for the agent's night in flight)")
    p.add_argument("agent", help="a registered agent (`memory-pipeline agents list`)")
    p.add_argument("--now", action="store_true",
                   help="queue it even if the agent's night is in flight or already succeeded today (run it again)")
    p.set_defaults(fn=cmd_night)
    p = cmds.add_parser(
        "report", help="queue the fleet report now (otherwise hourly at :45)",
        description="Queue the fleet report now (the schedule runs it hourly at :45): one row per agent — its last "
        "night's verdict, token reduction, cost and duration, its last successful night, deferrals and nights in "
        "flight — written to <fleet root>/reports/fleet-<time>.json and shown on the fleet_report asset. A daemon "
        "and a worker must be running for it to start.",
    )  # fmt: skip
    p.set_defaults(fn=cmd_report)
    p = cmds.add_parser("worker", help="a dagster-celery worker (any machine that mounts the fleet root)")
    p.add_argument("--name", help="the Celery node name (default: worker-<host>-<pid>)")
    p.add_argument("--concurrency", type=int, default=1, help="steps this worker runs at once (default 1)")
    p.set_defaults(fn=cmd_worker)
