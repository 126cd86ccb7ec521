"""PostgreSQL and Redis as real local processes: a fleet's own servers (`memory-pipeline fleet postgres|redis`),
and throwaway ones for tests and the benchmark. Plain functions, no Dagster import.

PostgreSQL comes from the Debian package (`/usr/lib/postgresql/<major>/bin`). `initdb` and `postgres` refuse to
run as root, so as root they run as the `postgres` system user (`runuser -u postgres --`), in a data directory
that user owns. Every server listens on 127.0.0.1 only (plus a unix socket in its own directory); the URL is
`postgresql+psycopg2://postgres@127.0.0.1:<port>/dagster` with trust authentication, meant for one machine or a private
network — put a password in the URL (and `pg_hba.conf`) before exposing it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from memory_pipeline.errors import UserError

PG_BIN_ROOT = Path("/usr/lib/postgresql")
PG_DATABASE = "dagster"
START_TIMEOUT_S = 30.0


def default_stop_signals() -> None:
    """In a child before exec: SIGINT and SIGTERM as a fresh process has them. A job a shell started in the
    background inherits them ignored, and a Python server (dagster-daemon maps SIGTERM to SIGINT's handler) would
    then ignore its stop signal until SIGKILL."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def free_port() -> int:
    """A TCP port nothing listens on now (the kernel picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pg_bin() -> Path:
    """The newest installed PostgreSQL's bin directory, or one line that says how to install it."""
    found = sorted((p for p in PG_BIN_ROOT.glob("*/bin") if (p / "initdb").is_file()), key=lambda p: p.parent.name)
    if not found:
        raise UserError(
            f"PostgreSQL is not installed (no {PG_BIN_ROOT}/<version>/bin/initdb): apt-get install -y postgresql"
        )
    return found[-1]


def redis_bin() -> str:
    path = shutil.which("redis-server")
    if path is None:
        raise UserError("redis-server is not installed: apt-get install -y redis-server")
    return path


def _as_postgres() -> str | None:
    """The user to run a PostgreSQL binary as: `postgres` when we are root (it refuses root), else ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError as exc:
        raise UserError("running as root and there is no `postgres` system user to run PostgreSQL as") from exc
    return "postgres"


def _chown_postgres(path: Path) -> None:
    if os.geteuid() == 0:
        entry = pwd.getpwnam("postgres")
        os.chown(path, entry.pw_uid, entry.pw_gid)


def wait_for_port(port: int, proc: subprocess.Popen[bytes] | None, what: str, log: Path | None = None) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-800:] if log and log.exists() else ""
            raise UserError(f"{what} exited with code {proc.returncode} while starting: {tail.strip()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise UserError(f"{what} did not listen on 127.0.0.1:{port} within {START_TIMEOUT_S:.0f} s")


CODE_SERVER_WAIT_S = 900.0  # importing the whole pipeline on a busy machine: minutes, not seconds


def wait_for_socket(path: Path, proc: subprocess.Popen[bytes], what: str) -> None:
    """Wait until a server listens on the unix socket `path` (a code server binds it once its code is loaded)."""
    deadline = time.monotonic() + CODE_SERVER_WAIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise UserError(f"{what} exited with code {proc.returncode} while starting (its output is above)")
        if path.exists():
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                try:
                    probe.connect(str(path))
                    return
                except OSError:
                    pass
        time.sleep(0.2)
    raise UserError(f"{what} did not listen on {path} within {CODE_SERVER_WAIT_S:.0f} s")


@dataclass
class Server:
    """A running server process we started: its URL, its process and where it keeps its files."""

    name: str
    url: str
    port: int
    proc: subprocess.Popen[bytes]
    directory: Path
    log: Path
    children: list[int] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM (PostgreSQL: smart → fast shutdown on SIGINT), then SIGKILL the whole group if it lingers."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT if self.name == "postgres" else signal.SIGTERM)  # fast shutdown
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        try:  # backends PostgreSQL forked share its process group
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def init_postgres(data: Path) -> None:
    """`initdb` a cluster in `data` (owned by `postgres` when we are root); nothing when one is there."""
    if (data / "PG_VERSION").is_file():
        return
    data.mkdir(parents=True, exist_ok=True)
    _chown_postgres(data)
    data.chmod(0o700)
    cmd = [str(pg_bin() / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
           "-E", "UTF8", "--no-sync", "--no-instructions"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=data, user=_as_postgres(),
                          group=_as_postgres())
    if done.returncode != 0:
        raise UserError(f"initdb {data} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")


def postgres_command(data: Path, port: int, fsync: bool = True) -> list[str]:
    """The `postgres` server command line: loopback only, its unix socket in the data directory."""
    options = ["-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={data}", "-p", str(port),
               "-c", "max_connections=200"]
    if not fsync:  # throwaway clusters (tests, benchmark): durability is not the point
        options += ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
    return [str(pg_bin() / "postgres"), "-D", str(data), *options]


def pg_url(port: int, host: str = "127.0.0.1", database: str = PG_DATABASE) -> str:
    """The SQLAlchemy URL dagster-postgres takes: `+psycopg2` names the driver it installs (SQLAlchemy 2.1's
    default for `postgresql://` is psycopg 3, which is not a dependency)."""
    return f"postgresql+psycopg2://postgres@{host}:{port}/{database}"


def create_database(port: int, name: str = PG_DATABASE) -> None:
    import psycopg2  # the driver dagster-postgres uses

    conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres")
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if cur.fetchone() is None:
                cur.execute(f'CREATE DATABASE "{name}"')
    finally:
        conn.close()


def postgres_user() -> str | None:
    """The user PostgreSQL's binaries run as: `postgres` when we are root, else None (ourselves)."""
    return _as_postgres()


def public_url(url: str) -> str:
    """`url` as it may be printed: the password (if any) replaced by `***`."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<not a database URL>"


DB_WAIT_S = 15.0
_FINAL = ("does not exist", "authentication failed", "password")  # waiting will not fix these


def check_database(url: str, wait: float = DB_WAIT_S) -> None:
    """Connect to the instance's database once, waiting at most `wait` s for a server that is starting; if it
    cannot be reached, one line naming the URL (without its password) and the server's own reason."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    shown = public_url(url)
    try:
        engine = create_engine(url, connect_args={"connect_timeout": 5})
    except (ArgumentError, SQLAlchemyError, ImportError) as exc:
        raise UserError(f"{shown}: not a PostgreSQL URL the instance can use ({exc})") from exc
    deadline = time.monotonic() + wait
    try:
        while True:
            try:
                with engine.connect() as conn:
                    conn.execute(text("SELECT 1"))
                return
            except SQLAlchemyError as exc:
                reason = " ".join(str(getattr(exc, "orig", None) or exc).split())
                if any(word in reason for word in _FINAL) or time.monotonic() >= deadline:
                    hint = " (`memory-pipeline fleet postgres` creates it)" if "does not exist" in reason else ""
                    raise UserError(f"cannot reach the fleet's database {shown}: {reason}{hint}") from None
                time.sleep(0.5)
    finally:
        engine.dispose()


def start_postgres(directory: Path, port: int | None = None, fsync: bool = True) -> Server:
    """A PostgreSQL server on `directory/data` (initialised if new), with the `dagster` database created."""
    directory.mkdir(parents=True, exist_ok=True)
    _chown_postgres(directory)
    data = directory / "data"
    init_postgres(data)
    port = port or free_port()
    log = directory / "postgres.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(postgres_command(data, port, fsync), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, cwd=data, user=_as_postgres(),
                                group=_as_postgres())
    server = Server("postgres", pg_url(port), port, proc, directory, log)
    try:
        wait_for_port(port, proc, "postgres", log)
        retry(lambda: create_database(port))
    except BaseException:
        server.stop()
        raise
    return server


def retry(fn: Callable[[], object], attempts: int = 50) -> None:
    for attempt in range(attempts):
        try:
            fn()
            return
        except Exception:  # the server accepts TCP before it accepts logins ("starting up")
            if attempt == attempts - 1:
                raise
            time.sleep(0.2)


def redis_command(directory: Path, port: int, persistent: bool = True) -> list[str]:
    persistence = ["--appendonly", "yes"] if persistent else ["--save", "", "--appendonly", "no"]
    return [redis_bin(), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory),
            "--protected-mode", "yes", *persistence]


def start_redis(directory: Path, port: int | None = None, persistent: bool = False) -> Server:
    directory.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    log = directory / "redis.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(redis_command(directory, port, persistent), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    server = Server("redis", f"redis://127.0.0.1:{port}/0", port, proc, directory, log)
    try:
        wait_for_port(port, proc, "redis-server", log)
    except BaseException:
        server.stop()
        raise
    return server


@contextmanager
def throwaway_servers(directory: Path) -> Iterator[tuple[Server, Server]]:
    """PostgreSQL and Redis for a test or a benchmark, stopped (whatever happens) on the way out."""
    import tempfile

    directory.mkdir(parents=True, exist_ok=True)
    # its own top-level temp directory: the `postgres` user cannot enter a root-only parent (pytest's tmp_path)
    pg_dir = Path(tempfile.mkdtemp(prefix="memory-pipeline-pg-"))
    try:
        _chown_postgres(pg_dir)
        pg = start_postgres(pg_dir, fsync=False)
        try:
            redis = start_redis(directory / "redis")
            try:
                yield pg, redis
            finally:
                redis.stop()
        finally:
            pg.stop()
    finally:
        shutil.rmtree(pg_dir, ignore_errors=True)


# --- processes, for fixtures that must leave nothing behind and for the benchmark's memory figures ----------


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, process group) of a running process; None when it is gone or a zombie (dead, only waiting
    for its parent to read its exit status: it holds no memory, port or file)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw.rpartition(")")[2].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[1]), int(fields[2])


def pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def group_members(pgid: int) -> list[int]:
    """Running processes in process group `pgid`."""
    return [pid for pid in pids() if (st := _stat(pid)) is not None and st[1] == pgid]


def descendants(root: int) -> list[int]:
    parent_of = {pid: st[0] for pid in pids() if (st := _stat(pid)) is not None}
    out, frontier = [], [root]
    while frontier:
        nxt = [pid for pid, parent in parent_of.items() if parent in frontier]
        out += nxt
        frontier = nxt
    return out


def processes_mentioning(marker: str) -> list[tuple[int, str]]:
    """Processes whose command line contains `marker` (a unique temp path: what a fixture started)."""
    found = []
    for pid in pids():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd and pid != os.getpid():
            found.append((pid, cmd.strip()))
    return found


def rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_rss_bytes(root: int) -> int:
    """RSS of a process and all its descendants (PostgreSQL: the postmaster and its backends; shared buffers
    are counted once per process that touched them, so this is an upper bound)."""
    return sum(rss_bytes(pid) for pid in [root, *descendants(root)])
