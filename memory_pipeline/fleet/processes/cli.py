"""`memory-pipeline fleet postgres|redis|daemon|webserver|worker|serve`: each of the fleet's processes, one command,
in the foreground (run each under systemd, supervisord or a terminal of its own). See notes on "Running a fleet".
Each owns its server's process tree: SIGTERM or Ctrl-C stops all of it (processes/supervise.py), records itself
while it runs and prints one "… ready" line once it serves; `fleet status` reads them and `fleet stop` stops them
(processes/health.py). `fleet night AGENT… [--now]` and `fleet report` queue runs on the instance and return:
through the fleet's webserver when it answers (fleet/cli/webserver_launch.py), else in the command itself
(fleet/cli/launch.py).

Every command reads the same variables: MEMORY_PIPELINE_FLEET_ROOT (the directory every machine shares),
MEMORY_PIPELINE_PG_URL, MEMORY_PIPELINE_CELERY_BROKER, and optionally MEMORY_PIPELINE_MAX_CONCURRENT_RUNS.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.fleet import IMPORT_BATCH
from memory_pipeline.fleet.processes.executor import (
    BROKER_ENV,
    FLEET_ROOT_ENV,
    MAX_RUNS_ENV,
    PG_URL_ENV,
    fleet_dagster_home,
)

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
    from memory_pipeline.fleet.processes.servers import check_database
    from memory_pipeline.fleet.processes.stack import fleet_env, prepare_home

    root = _root()
    pg = _need(PG_URL_ENV, "postgresql+psycopg2://postgres@db-host:5432/dagster")
    broker = _need(BROKER_ENV, "redis://redis-host:6379/0")
    check_database(pg)  # one line naming the URL, instead of each service's 30 s of retries and a traceback
    home = prepare_home(fleet_dagster_home())
    return fleet_env(home, pg, broker, root, int(os.environ.get(MAX_RUNS_ENV) or DEFAULT_MAX_RUNS))


def _serve(name: str, address: str, cmd: list[str], env: dict[str, str], **kwargs: Any) -> int:
    """The server in a process group this command owns: SIGTERM/Ctrl-C here stops the whole tree. Recorded for
    `fleet status` and `fleet stop` while it runs."""
    from memory_pipeline.fleet.processes import health, supervise

    with health.recorded(_root(), name, address):
        return supervise.run(cmd, env, **kwargs)


def _listening(name: str, host: str, port: int, what: str) -> Any:
    """An `announce` for supervise.run: the ready line once `host:port` accepts connections."""
    from memory_pipeline.fleet.processes import health

    return lambda: f"{name} ready: {what} (pid {os.getpid()})" if health.port_listens(host, port) else None


def cmd_postgres(args: argparse.Namespace) -> int:
    from memory_pipeline.fleet.processes import servers

    directory = Path(args.data) if args.data else _root() / "postgres"
    data = directory / "data"
    directory.mkdir(parents=True, exist_ok=True)
    servers.init_postgres(data)
    url = servers.pg_url(args.port)

    def ready(proc: subprocess.Popen[bytes]) -> None:  # the `dagster` database, created when missing
        servers.wait_for_port(args.port, proc, "postgres")
        servers.retry(lambda: servers.create_database(args.port))
        print(f"export {PG_URL_ENV}={url}", flush=True)
        print(f"postgres ready: {servers.public_url(url)} (pid {os.getpid()})", flush=True)

    # PostgreSQL refuses root: as root it runs as the `postgres` user it was initialised for. SIGINT is its fast
    # shutdown (SIGTERM would wait for every connected daemon, webserver and worker to disconnect).
    return _serve("postgres", f"127.0.0.1:{args.port}", servers.postgres_command(data, args.port),
                  dict(os.environ), stop_signal=signal.SIGINT, user=servers.postgres_user(), cwd=data, ready=ready)


def cmd_redis(args: argparse.Namespace) -> int:
    from memory_pipeline.fleet.processes import servers

    directory = Path(args.data) if args.data else _root() / "redis"
    directory.mkdir(parents=True, exist_ok=True)
    url = f"redis://127.0.0.1:{args.port}/0"
    print(f"export {BROKER_ENV}={url}", flush=True)
    return _serve("redis", f"127.0.0.1:{args.port}", servers.redis_command(directory, args.port, persistent=True),
                  dict(os.environ), announce=_listening("redis", "127.0.0.1", args.port, url))


def cmd_daemon(args: argparse.Namespace) -> int:
    """dagster-daemon and, before it in the same process group, the location's code server on a local socket: the
    location is imported once, there, and `fleet night` on this machine asks it instead of importing it again."""
    import time

    from memory_pipeline.fleet.processes import health, servers
    from memory_pipeline.fleet.processes.names import code_server_socket
    from memory_pipeline.fleet.processes.stack import code_server_command, daemon_command, daemon_workspace

    env = _instance_env()
    home = Path(env["DAGSTER_HOME"])
    sock = code_server_socket(home)
    started = time.time()

    def ready() -> str | None:
        if not health.daemon_ready(env[PG_URL_ENV], started):
            return None
        return f"daemon ready: schedules, sensors, run queue and monitoring beating; code server on {sock} " \
               f"(pid {os.getpid()})"

    first = (code_server_command(sock), lambda proc: servers.wait_for_socket(sock, proc, "the code server"))
    try:
        return _serve("daemon", str(sock), daemon_command(home, daemon_workspace(home, sock)), env, first=first,
                      announce=ready)
    finally:  # the code server goes with SIGKILL (it ignores SIGTERM) and leaves its socket behind
        sock.unlink(missing_ok=True)


def cmd_webserver(args: argparse.Namespace) -> int:
    from memory_pipeline.fleet.processes.stack import webserver_command

    env = _instance_env()
    url = f"http://{args.host}:{args.port}"
    return _serve("webserver", url, webserver_command(Path(env["DAGSTER_HOME"]), args.host, args.port), env,
                  announce=_listening("webserver", args.host, args.port, url))


def cmd_worker(args: argparse.Namespace) -> int:
    import socket

    from memory_pipeline.fleet.processes.stack import worker_command

    env = _instance_env()
    name = args.name or f"worker-{socket.gethostname()}-{os.getpid()}"
    # the worker prints its own ready line (processes/worker_logging.py, on Celery's worker_ready)
    return _serve(f"worker:{name}", env[BROKER_ENV], worker_command(name, args.concurrency), env)


@contextmanager
def _fleet_instance() -> Iterator[Any]:
    """The fleet's instance, in this process (the same variables and DAGSTER_HOME as the daemon's)."""
    import dagster as dg

    os.environ.update(_instance_env())
    with dg.DagsterInstance.get() as instance:
        yield instance


def _code_server() -> Path:
    from memory_pipeline.fleet.processes.names import code_server_socket

    return code_server_socket(fleet_dagster_home())


def cmd_status(args: argparse.Namespace) -> int:
    from memory_pipeline.fleet import registry
    from memory_pipeline.fleet.processes import status

    os.environ.setdefault(MAX_RUNS_ENV, DEFAULT_MAX_RUNS)  # the instance's dagster.yaml reads it
    root = _root()
    return status.report(root, registry.list_agents(root), os.environ)


def cmd_stop(args: argparse.Namespace) -> int:
    from memory_pipeline.fleet.processes import health

    health.stop(_root())
    return 0


def _webserver() -> Any:
    """A Post to this fleet's webserver, or NoWebserver (the caller queues through the instance)."""
    from memory_pipeline.fleet.cli import webserver_launch

    return webserver_launch.http_post(webserver_launch.webserver_url(_root()))


def _fallback(exc: Exception) -> None:
    print(f"note: {exc}: queuing through the instance instead (a few seconds)", flush=True)


def cmd_night(args: argparse.Namespace) -> int:
    """Through the fleet's webserver on this machine when it answers (about a second, no Dagster imported here),
    else through the instance (launch.py)."""
    from datetime import UTC, datetime

    from memory_pipeline.fleet import registry
    from memory_pipeline.fleet.cli import webserver_launch
    from memory_pipeline.fleet.processes.names import AGENT_TAG, fleet_timezone, night_of

    agents = list(dict.fromkeys(args.agent))
    for agent in agents:  # an unknown agent: one line, before anything is asked or loaded
        registry.agent_home(registry.fleet_root(), agent)
    outcomes: dict[str, tuple[str, Any] | str] = {}  # each agent's (night, run) or the line refusing it
    try:
        night = night_of(datetime.now(UTC), fleet_timezone())
        done = webserver_launch.queue_nights(_webserver(), agents, args.now, night)
        outcomes = {agent: run if isinstance(run, str) else (night, run) for agent, run in done.items()}
    except webserver_launch.NoWebserver as exc:
        _fallback(exc)
        outcomes = _queue_through_instance(agents, args.now)
    refused = [line for line in outcomes.values() if isinstance(line, str)]
    if len(agents) == 1 and refused:
        raise UserError(refused[0])
    for agent, outcome in outcomes.items():
        if isinstance(outcome, str):
            continue
        night, queued = outcome
        print(f"queued {agent}'s night ({night}): run {queued.run_id}")
        print(f"  it starts once {agent} has no other run in flight ({AGENT_TAG}="
              f"{queued.tags.get(AGENT_TAG, '?')}) and a run slot is free; follow it in the UI (Runs)")
    for line in refused:
        print(f"error: {line}", file=sys.stderr)
    return 2 if refused else 0


def _queue_through_instance(agents: list[str], now: bool) -> dict[str, tuple[str, Any] | str]:
    from memory_pipeline.fleet.cli import launch

    outcomes: dict[str, tuple[str, Any] | str] = {}
    with _fleet_instance() as instance:
        for agent in agents:
            try:
                outcomes[agent] = launch.queue_night(instance, agent, now=now, socket=_code_server())
            except UserError as exc:
                outcomes[agent] = str(exc)
    return outcomes


def cmd_report(args: argparse.Namespace) -> int:
    from memory_pipeline.fleet.cli import webserver_launch

    try:
        queued: Any = webserver_launch.queue_report(_webserver())
    except webserver_launch.NoWebserver as exc:
        _fallback(exc)
        from memory_pipeline.fleet.cli import launch

        with _fleet_instance() as instance:
            queued = launch.queue_report(instance, socket=_code_server())
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
    from memory_pipeline.fleet.processes import health

    try:
        with health.recorded(root, "serve", f"http://{args.host}:{args.port}/mcp"):
            # http: uvicorn's protocol with read-time bounds on each request's headers and body (a stalled
            # client's connection is closed; MEMORY_PIPELINE_HTTP_HEADER_TIMEOUT / _BODY_TIMEOUT, read by each worker)
            uvicorn.run("memory_pipeline.fleet.processes.cli:gateway_app", factory=True, host=args.host, port=args.port,
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
    from memory_pipeline.mcp.server import build_server, quiet_libraries, warm_server
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
    p = cmds.add_parser(
        "night", help="queue agents' nights now (each waits for the agent's night in flight)",
        description="Queue each agent's night now, through the fleet's webserver on this machine when it answers "
        "(about a second), else through the instance (a few seconds). Without --now, an agent whose night is in "
        "flight or already succeeded today is refused in one line and the others are queued.",
    )  # fmt: skip
    p.add_argument("agent", nargs="+", help="registered agents (`memory-pipeline agents list`)")
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
    p = cmds.add_parser(
        "status", help="is the fleet up: each server, the workers, runs queued and in flight, each agent's last night",
        description="Print each server of the fleet — PostgreSQL and Redis (do they accept connections at the "
        "exported URLs), the daemon (are its heartbeats fresh), the webserver — up or down with its address and the "
        "pid of the `fleet` command running it on this machine; the Celery workers that answer the broker; the runs "
        "queued and in flight; each agent's last night. Exit status 0 when the fleet can run a night (PostgreSQL, "
        "Redis, the daemon and a worker up), else 1.",
    )  # fmt: skip
    p.set_defaults(fn=cmd_status)
    p = cmds.add_parser(
        "stop", help="stop the `fleet` servers running on this machine: workers first, PostgreSQL last",
        description="Stop every `memory-pipeline fleet` server command running on this machine for this fleet root "
        "(each records itself under <fleet root>/servers/<host>/ while it runs), one after the other in reverse "
        "order of need — workers, gateway, webserver, daemon, Redis, PostgreSQL — each with SIGTERM, as `kill PID` "
        "would, waiting for it to stop before the next.",
    )  # fmt: skip
    p.set_defaults(fn=cmd_stop)
    p = cmds.add_parser("worker", help="a dagster-celery worker (any machine that mounts the fleet root)")
    p.add_argument("--name", help="the Celery node name (default: worker-<host>-<pid>)")
    p.add_argument("--concurrency", type=int, default=1, help="steps this worker runs at once (default 1)")
    p.set_defaults(fn=cmd_worker)
