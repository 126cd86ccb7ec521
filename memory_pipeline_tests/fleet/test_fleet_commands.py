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
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memory_pipeline.fleet_ops import servers
from memory_pipeline.fleet_ops.executor import BROKER_ENV, FLEET_ROOT_ENV, PG_URL_ENV
from memory_pipeline_tests.fleet.cli_fixtures import CLI, Command
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
