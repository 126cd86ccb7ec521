"""`memory-pipeline fleet …` as a user runs it: each command a real subprocess of the installed entry point,
on real PostgreSQL and Redis (started by `fleet postgres` and `fleet redis` themselves). `fleet postgres` creates
the `dagster` database (and again on a restart, idempotently); a service pointed at a database it cannot reach
says so in one line without the password; every command, sent SIGTERM, leaves no process of its tree behind
(checked in /proc). Every wait is bounded and names what it waited for; the teardown kills whatever a failed
test left and fails if anything survived."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memory_pipeline.fleet.processes import servers
from memory_pipeline.fleet.processes.executor import BROKER_ENV, FLEET_ROOT_ENV, PG_URL_ENV
from memory_pipeline_tests.fleet.cli_fixtures import CLI, START_WAIT_S, STOP_WAIT_S, Command
from memory_pipeline_tests.fleet.cli_fixtures import CliFleet as Fleet
from memory_pipeline_tests.fleet.cli_fixtures import alive as _alive
from memory_pipeline_tests.fleet.cli_fixtures import cmdline as _cmdline
from memory_pipeline_tests.fleet.cli_fixtures import listens as _listens
from memory_pipeline_tests.fleet.servers_fixtures import servers_missing

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", name="fleet")
def fleet_fixture() -> Iterator[Fleet]:
    missing = servers_missing()
    if missing:
        pytest.skip(missing)
    # a top-level directory: the `postgres` user (root runs PostgreSQL as it) cannot enter pytest's tmp_path
    root = Path(tempfile.mkdtemp(prefix="memory-pipeline-fleet-cli-"))
    root.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", PG_URL_ENV, BROKER_ENV)}
    env.update({FLEET_ROOT_ENV: str(root), "MEMORY_PIPELINE_LLM": "offline"})
    fleet = Fleet(root, env)
    try:
        yield fleet
    finally:
        for command in fleet.commands:
            if command.proc.poll() is None:
                command.terminate()
        left = [pid for c in fleet.commands for pid in _alive(sorted(c.seen))]
        for command in fleet.commands:
            command.kill_everything()
        leftover = servers.processes_mentioning(str(root))
        shutil.rmtree(root, ignore_errors=True)
        assert not left, f"processes outlived their `fleet` command: {[(p, _cmdline(p)) for p in left]}"
        assert not leftover, f"processes outlived the test: {leftover}"


def _database_names(port: int) -> list[str]:
    import psycopg2

    conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres")
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT datname FROM pg_database")
            return sorted(r[0] for r in cur.fetchall())
    finally:
        conn.close()


def test_fleet_postgres_creates_the_dagster_database_and_services_name_an_unreachable_one(fleet: Fleet) -> None:
    port = servers.free_port()
    export = f"export {PG_URL_ENV}=postgresql+psycopg2://postgres@127.0.0.1:{port}/dagster"
    for attempt in ("first start (initdb)", "restart on the same data"):
        pg = fleet.start("postgres", "--port", str(port))
        pg.wait_for(f"the export line ({attempt})", lambda pg=pg: export in pg.output())  # type: ignore[misc]
        assert "dagster" in _database_names(port), attempt
        assert pg.terminate() == [], f"`fleet postgres` left processes behind ({attempt})"

    # a service pointed at a database that is not there: one line, the URL without its password
    pg = fleet.start("postgres", "--port", str(port))
    pg.wait_for("the export line (third start)", lambda: export in pg.output())
    env = {**fleet.env, PG_URL_ENV: f"postgresql+psycopg2://postgres:s3cret@127.0.0.1:{port}/nosuchdb",
           BROKER_ENV: "redis://127.0.0.1:1/0"}
    done = subprocess.run([str(CLI), "fleet", "daemon"], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: cannot reach the fleet's database postgresql+psycopg2://postgres:***@127.0.0.1:{port}/nosuchdb: "
        f'connection to server at "127.0.0.1", port {port} failed: FATAL: database "nosuchdb" does not exist '
        "(`memory-pipeline fleet postgres` creates it)"
    ]
    assert "s3cret" not in done.stdout + done.stderr
    assert not (fleet.root / "dagster_home").exists()  # nothing started, nothing written
    assert pg.terminate() == []


@pytest.fixture(scope="module", name="servers_up")
def servers_up_fixture(fleet: Fleet) -> Iterator[dict[str, str]]:
    """`fleet postgres` and `fleet redis`, as the README starts them, for the Dagster services' tests."""
    pg_port, redis_port = servers.free_port(), servers.free_port()
    pg = fleet.start("postgres", "--port", str(pg_port), "--data", str(fleet.root / "pg-services"))
    redis = fleet.start("redis", "--port", str(redis_port))
    pg.wait_for("the export line", lambda: f"export {PG_URL_ENV}=" in pg.output())
    redis.wait_for("redis listening", _listens(redis_port))
    yield {**fleet.env, PG_URL_ENV: servers.pg_url(pg_port), BROKER_ENV: f"redis://127.0.0.1:{redis_port}/0"}
    for command in (pg, redis):
        assert command.terminate() == [], f"`fleet {command.name}` left processes behind"


def _has_descendant(command: Command, *words: str) -> Callable[[], bool]:
    return lambda: any(all(w in _cmdline(pid) for w in words) for pid in command.tree()[1:])


WAITS: dict[str, tuple[str, Callable[[Command, int], Callable[[], bool]]]] = {
    "daemon": ("a code server started by the daemon", lambda c, port: _has_descendant(c, "dagster", "grpc")),
    "webserver": ("the UI listening", lambda c, port: _listens(port)),
    "worker": ("the celery worker's pool process", lambda c, port: lambda: sum(
        "celery" in _cmdline(pid) for pid in c.tree()[1:]) >= 2),
}


@pytest.mark.parametrize("name", ["redis", "daemon", "webserver", "worker"])
def test_sigterm_stops_the_whole_tree(name: str, fleet: Fleet, servers_up: dict[str, str]) -> None:
    port = servers.free_port()
    if name == "redis":
        command = fleet.start("redis", "--port", str(port), "--data", str(fleet.root / "redis-sigterm"))
        what, ready = "redis listening", _listens(port)
    else:
        args = ["--port", str(port)] if name == "webserver" else []
        command = fleet.start(name, *args, env=servers_up)
        what, make = WAITS[name]
        ready = make(command, port)
    command.wait_for(what, ready)
    assert len(command.tree()) >= 2, f"`fleet {name}` runs its server as a child it owns"
    left = command.terminate()
    assert left == [], f"`fleet {name}`: {[(p, _cmdline(p)) for p in left]} survived SIGTERM"


def test_servers_say_ready_status_reads_them_a_night_is_queued_through_the_code_server_and_stop_stops_all(
        fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each server prints one "… ready" line; `fleet status` names each up with its command's pid and the worker
    the broker sees; `fleet night` builds its run from the daemon's code server (the run's origin says so), not
    from the location loaded in the command; `fleet stop` stops every command, workers first, PostgreSQL last,
    leaving no process of any tree. A fleet root of its own: `fleet stop` stops what runs for its root."""
    import re
    from datetime import UTC, datetime

    import dagster as dg
    from dagster._core.remote_origin import GrpcServerCodeLocationOrigin

    from memory_pipeline.fleet import registry
    from memory_pipeline.fleet.processes.names import code_server_socket

    root = fleet.root / "status-fleet"
    root.mkdir(mode=0o755)
    env = {**fleet.env, FLEET_ROOT_ENV: str(root)}
    pg_port, redis_port = servers.free_port(), servers.free_port()
    pg = fleet.start("postgres", "--port", str(pg_port), env=env)
    redis = fleet.start("redis", "--port", str(redis_port), env=env)
    pg.wait_for("its ready line", lambda: "postgres ready: " in pg.output())
    redis.wait_for("its ready line", lambda: f"redis ready: redis://127.0.0.1:{redis_port}/0 (pid {redis.proc.pid})"
                   in redis.output())
    env.update({PG_URL_ENV: servers.pg_url(pg_port), BROKER_ENV: f"redis://127.0.0.1:{redis_port}/0"})
    registry.add_agent(root, "ada", datetime.now(UTC))
    daemon = fleet.start("daemon", env=env)
    worker = fleet.start("worker", "--name", "w1", env=env)
    daemon.wait_for("its ready line", lambda: "daemon ready: " in daemon.output())
    worker.wait_for("its ready line", lambda: re.search(r"worker w1@\S+ ready: ", worker.output()) is not None)

    night = subprocess.run([str(CLI), "fleet", "night", "ada"], env=env, capture_output=True, text=True,
                           timeout=START_WAIT_S)
    assert night.returncode == 0, night.stderr
    run_id = re.search(r"run ([0-9a-f-]{36})", night.stdout).group(1)  # type: ignore[union-attr]
    for name in (PG_URL_ENV, BROKER_ENV, FLEET_ROOT_ENV):
        monkeypatch.setenv(name, env[name])
    monkeypatch.setenv("MEMORY_PIPELINE_MAX_CONCURRENT_RUNS", "4")
    with dg.DagsterInstance.from_config(str(root / "dagster_home")) as instance:
        run = instance.get_run_by_id(run_id)
        assert run is not None and run.tags.get("memory_pipeline/agent") == "ada"
        origin = run.remote_job_origin.repository_origin.code_location_origin  # type: ignore[union-attr]
        assert isinstance(origin, GrpcServerCodeLocationOrigin), origin

    def status() -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(CLI), "fleet", "status"], env=env, capture_output=True, text=True,
                              timeout=START_WAIT_S)

    deadline = time.monotonic() + START_WAIT_S  # the worker answers the broker's ping once its pool is up
    shown = status()
    while shown.returncode != 0 and time.monotonic() < deadline:
        time.sleep(2.0)
        shown = status()
    assert shown.returncode == 0, shown.stdout + shown.stderr
    rows = {line.split()[0]: line.split() for line in shown.stdout.splitlines()}
    assert rows["postgres"][1:] == ["up", f"127.0.0.1:{pg_port}", "pid", str(pg.proc.pid)]
    assert rows["redis"][1:] == ["up", f"127.0.0.1:{redis_port}", "pid", str(redis.proc.pid)]
    assert rows["daemon"][1] == "up" and rows["daemon"][-1] == str(daemon.proc.pid)
    assert rows["workers"][1:3] == ["1", "answering:"] and rows["workers"][3].startswith("w1@")
    assert re.search(r"^night +ada: [A-Z]+ ", shown.stdout, re.M), shown.stdout

    commands = [worker, daemon, redis, pg]
    for command in commands:
        command.tree()  # remember every process of each tree before it goes
    stopped = subprocess.run([str(CLI), "fleet", "stop"], env=env, capture_output=True, text=True,
                             timeout=4 * STOP_WAIT_S)
    assert stopped.returncode == 0, stopped.stderr
    assert [line.split()[1] for line in stopped.stdout.splitlines()] == ["worker:w1", "daemon", "redis", "postgres"]
    for command in commands:
        command.proc.wait(STOP_WAIT_S)
        assert _alive(sorted(command.seen)) == [], f"`fleet {command.name}` left processes behind"
    assert list((root / "servers").rglob("*.json")) == []
    assert not code_server_socket(root / "dagster_home").exists(), "the daemon left its code server's socket"


PROBE = ("import sys; from memory_pipeline.cli import main; rc = main(sys.argv[1:]); "
         "print('dagster imported:', 'dagster' in sys.modules, flush=True); sys.exit(rc)")


def test_fleet_night_queues_through_the_webserver_without_dagster_and_through_the_instance_when_it_is_down(
        fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """With `fleet webserver` up on this machine, `fleet night` queues each agent's night through its GraphQL API:
    the runs' origin is the webserver's own code location (not the daemon's code server, not one loaded in the
    command), their partitions are added, and the command never imported Dagster; refused the same way. With the
    webserver stopped it says so in one line and queues through the instance."""
    import re
    import sys
    from datetime import UTC, datetime

    import dagster as dg
    from dagster._core.remote_origin import InProcessCodeLocationOrigin, ManagedGrpcPythonEnvCodeLocationOrigin

    from memory_pipeline.fleet import registry
    from memory_pipeline.fleet.cli import webserver_launch

    root = fleet.root / "web-fleet"
    root.mkdir(mode=0o755)
    env = {**fleet.env, FLEET_ROOT_ENV: str(root)}
    pg_port, redis_port, web_port = servers.free_port(), servers.free_port(), servers.free_port()
    pg = fleet.start("postgres", "--port", str(pg_port), env=env)
    redis = fleet.start("redis", "--port", str(redis_port), env=env)
    pg.wait_for("its ready line", lambda: "postgres ready: " in pg.output())
    redis.wait_for("its ready line", lambda: "redis ready: " in redis.output())
    env.update({PG_URL_ENV: servers.pg_url(pg_port), BROKER_ENV: f"redis://127.0.0.1:{redis_port}/0"})
    for agent in ("ada", "bob"):  # no instance partition yet: the webserver adds it with the night
        registry.add_agent(root, agent, datetime.now(UTC))
    web = fleet.start("webserver", "--port", str(web_port), env=env)
    web.wait_for("its ready line", lambda: "webserver ready: " in web.output())
    post = webserver_launch.http_post(f"http://127.0.0.1:{web_port}")
    query = webserver_launch.checks_query(["ada"], "2026-11-03", now=True)

    def location_loaded() -> bool:
        return post(*query, 30.0)["job"]["__typename"] in ("Job", "Pipeline")

    web.wait_for("the code location loaded in the webserver", location_loaded)

    def night(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", PROBE, "fleet", "night", *args], env=env, capture_output=True,
                              text=True, timeout=START_WAIT_S)

    queued = night("ada", "bob")
    assert queued.returncode == 0, queued.stdout + queued.stderr
    assert "note:" not in queued.stdout and "dagster imported: False" in queued.stdout, queued.stdout
    ids = dict(re.findall(r"^queued (\w+)'s night \(\S+\): run ([0-9a-f-]{36})$", queued.stdout, re.M))
    assert sorted(ids) == ["ada", "bob"], queued.stdout
    refused = night("ada")
    assert refused.returncode == 2 and "dagster imported: False" in refused.stdout, refused.stdout
    assert refused.stderr.strip().splitlines() == [
        f"error: ada's night is already in flight: run {ids['ada'][:8]} (QUEUED); "
        "`memory-pipeline fleet night ada --now` queues another"]

    assert web.terminate() == [], "`fleet webserver` left processes behind"
    fallback = night("bob", "--now")
    assert fallback.returncode == 0, fallback.stdout + fallback.stderr
    assert fallback.stdout.splitlines()[0] == (
        "note: no `fleet webserver` runs on this machine for this fleet root: queuing through the instance instead "
        "(a few seconds)")
    fallback_id = re.search(r"run ([0-9a-f-]{36})", fallback.stdout).group(1)  # type: ignore[union-attr]

    for name in (PG_URL_ENV, BROKER_ENV, FLEET_ROOT_ENV):
        monkeypatch.setenv(name, env[name])
    monkeypatch.setenv("MEMORY_PIPELINE_MAX_CONCURRENT_RUNS", "4")
    with dg.DagsterInstance.from_config(str(root / "dagster_home")) as instance:
        for agent, run_id in ids.items():
            run = instance.get_run_by_id(run_id)
            assert run is not None and run.job_name == "agent_night" and run.status == dg.DagsterRunStatus.QUEUED
            assert {k: run.tags.get(k) for k in ("memory_pipeline/agent", "dagster/partition")} == \
                {"memory_pipeline/agent": agent, "dagster/partition": agent}
            assert run.tags.get("memory_pipeline/night") == run.tags.get("memory_pipeline/period") is not None
            origin = run.remote_job_origin.repository_origin.code_location_origin  # type: ignore[union-attr]
            assert isinstance(origin, ManagedGrpcPythonEnvCodeLocationOrigin), origin  # the webserver's workspace
            assert instance.has_dynamic_partition("agents", agent)
        run = instance.get_run_by_id(fallback_id)
        assert run is not None and run.tags.get("memory_pipeline/agent") == "bob"
        origin = run.remote_job_origin.repository_origin.code_location_origin  # type: ignore[union-attr]
        assert isinstance(origin, InProcessCodeLocationOrigin), origin  # no daemon here: loaded in the command
    for command in (redis, pg):
        assert command.terminate() == [], f"`fleet {command.name}` left processes behind"
