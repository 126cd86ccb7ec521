"""Is the fleet up? Each `memory-pipeline fleet …` server command records itself while it runs
(<fleet root>/servers/<host>/<name>.json: its pid, address, start time), and probes read each server's own sign of
life: PostgreSQL answers a query, Redis accepts a connection, dagster-daemon's heartbeats are fresh in the
instance, the webserver listens, Celery workers answer the broker's ping. `fleet status` prints them; `fleet
stop` stops what the records name on this machine, workers first, PostgreSQL last. Plain code: Dagster and
Celery are imported only by the probes that need them."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# `fleet stop`'s order: what asks the others first, what they all need last
STOP_ORDER = ("worker", "serve", "webserver", "daemon", "redis", "postgres")
# the daemon's threads whose heartbeat says it runs the fleet (schedules, sensors, the run queue, monitoring)
DAEMON_TYPES = ("SCHEDULER", "SENSOR", "QUEUED_RUN_COORDINATOR", "MONITORING")
HEARTBEAT_FRESH_S = 120.0  # Dagster's own tolerance for a daemon heartbeat
STOP_WAIT_S = 60.0


@dataclass(frozen=True)
class Record:
    name: str  # postgres | redis | daemon | webserver | worker:<node name> | serve
    pid: int
    host: str
    address: str
    started: str
    command: str  # its command line when it started: a pid reused by another process is not it
    path: Path

    @property
    def kind(self) -> str:
        return self.name.split(":", 1)[0]


def servers_dir(root: Path, host: str | None = None) -> Path:
    return root / "servers" / (host or socket.gethostname())


@contextmanager
def recorded(root: Path, name: str, address: str) -> Iterator[Path]:
    """This process as the server `name` at `address` while the block runs (the record is removed after it)."""
    folder = servers_dir(root)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name.replace(':', '-')}-{os.getpid()}.json"
    body = {"name": name, "pid": os.getpid(), "host": socket.gethostname(), "address": address,
            "started": datetime.now(UTC).isoformat(timespec="seconds"), "command": _cmdline(os.getpid())}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body))
    tmp.replace(path)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def is_running(record: Record) -> bool:
    """The recorded process still runs on this machine, with the command line it had (not a reused pid; a
    zombie has none)."""
    return record.host == socket.gethostname() and bool(record.command) and _cmdline(record.pid) == record.command


def records(root: Path, host: str | None = None) -> list[Record]:
    """This machine's records whose process still runs; a record left by a killed command is removed."""
    folder = servers_dir(root, host)
    found: list[Record] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            raw = json.loads(path.read_text())
            record = Record(str(raw["name"]), int(raw["pid"]), str(raw["host"]), str(raw["address"]),
                            str(raw["started"]), str(raw.get("command", "")), path)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if is_running(record):
            found.append(record)
        else:
            path.unlink(missing_ok=True)
    return found


def port_listens(host: str, port: int, timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def url_address(url: str, default_port: int) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or default_port


def daemon_heartbeats(pg_url: str) -> dict[str, float]:
    """Each daemon thread's last heartbeat (epoch seconds) in the instance's database; {} when none or no
    database. Read from Dagster's `daemon_heartbeats` table, whose body is the serialized heartbeat."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import SQLAlchemyError

    engine = create_engine(pg_url, connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT daemon_type, body FROM daemon_heartbeats")).all()
    except SQLAlchemyError:
        return {}
    finally:
        engine.dispose()
    beats: dict[str, float] = {}
    for daemon_type, body in rows:
        try:
            beats[str(daemon_type)] = float(json.loads(body)["timestamp"])
        except (ValueError, KeyError, TypeError):
            continue
    return beats


def daemon_ready(pg_url: str, since: float) -> bool:
    """Every thread the fleet needs has beaten since `since` (epoch seconds)."""
    beats = daemon_heartbeats(pg_url)
    return all(beats.get(kind, 0.0) >= since for kind in DAEMON_TYPES)


def workers_answering(broker: str, timeout: float = 3.0) -> list[str]:
    """The Celery workers that answer a broadcast ping on `broker`, by node name."""
    import importlib

    celery: Any = importlib.import_module("celery")
    app = celery.Celery(broker=broker, backend=broker)
    try:
        replies = app.control.ping(timeout=timeout) or []
    except Exception:  # the broker itself is down: no worker can be seen
        return []
    finally:
        app.close()
    return sorted(name for reply in replies for name in reply)


def stop(root: Path, say: Any = print, wait: float = STOP_WAIT_S) -> int:
    """SIGTERM each server this machine's records name, in STOP_ORDER, each waited for before the next (a
    worker's warm shutdown before the daemon, the daemon before PostgreSQL); the number stopped."""
    found = records(root)
    if not found:
        say(f"nothing to stop: no `memory-pipeline fleet …` server runs on this machine for {root}")
        return 0
    found.sort(key=lambda r: (STOP_ORDER.index(r.kind) if r.kind in STOP_ORDER else -1, r.name))
    stopped = 0
    for record in found:
        try:
            os.kill(record.pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and is_running(record):
            time.sleep(0.2)
        if is_running(record):
            say(f"{record.name} (pid {record.pid}) still running {wait:.0f} s after SIGTERM: `kill -9 {record.pid}`")
            continue
        record.path.unlink(missing_ok=True)
        stopped += 1
        say(f"stopped {record.name} (pid {record.pid})")
    return stopped
