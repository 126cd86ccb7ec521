"""`memory-pipeline fleet serve --workers N`: the gateway in N uvicorn worker processes on one port.

The gateway keeps no session state (stateless MCP, JSON responses), so any worker can answer any request. Each
worker builds the app with `fleet.processes.cli.gateway_app()` (uvicorn's app factory) from the settings the command
puts in the environment (`SETTINGS_ENV`, JSON, read here), warms every agent before it accepts a connection, and
answers `/readyz` only once it has. What the workers share:

- the per-agent rate limit: one token bucket per agent in a file of a directory the command creates
  (`SharedRateLimiter`, the bucket read and written under an flock), so `--rate` and `--burst` hold for the
  agent across all workers exactly as in one process, however the kernel spreads connections between them;
- the audit log: each worker appends whole lines with one O_APPEND write each (`gateway.AuditLog`).

A worker dies with the command (Linux: a parent-death signal), so a killed `fleet serve` never leaves workers
serving the port."""

from __future__ import annotations

import fcntl
import json
import math
import os
import shutil
import signal
import struct
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_pipeline.fleet import IMPORT_BATCH
from memory_pipeline.fleet.gateway import GatewayConfig, Limiter, RateLimiter

SETTINGS_ENV = "MEMORY_PIPELINE_GATEWAY_SETTINGS"  # JSON: max_body_bytes, rate, burst, workers, rate_dir, parent
_BUCKET = struct.Struct("<dd")  # level, time of the last take (time.monotonic: one clock for every process)


class SharedRateLimiter:
    """`RateLimiter`'s token bucket per agent, kept in `<folder>/<agent>.bucket` so every process that opens the
    same folder draws from the same bucket. A take is an flock, a 16-byte read and a write (microseconds)."""

    def __init__(self, folder: Path, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.folder, self.rate, self.burst, self.clock = Path(folder), rate, float(burst), clock
        self._fds: dict[str, int] = {}
        self._lock = threading.Lock()

    def _fd(self, agent: str) -> int:
        fd = self._fds.get(agent)
        if fd is None:
            fd = os.open(self.folder / f"{agent}.bucket", os.O_RDWR | os.O_CREAT, 0o600)
            self._fds[agent] = fd
        return fd

    def take(self, agent: str) -> float:
        """0 when the call may go ahead (and it is counted), else the seconds until it may."""
        with self._lock:
            fd = self._fd(agent)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                now = self.clock()
                raw = os.pread(fd, _BUCKET.size, 0)
                level, then = _BUCKET.unpack(raw) if len(raw) == _BUCKET.size else (self.burst, now)
                if not (math.isfinite(level) and math.isfinite(then)) or then > now:
                    level, then = self.burst, now  # a damaged bucket, or one from before a reboot: full again
                level = min(self.burst, level + (now - then) * self.rate)
                wait = 0.0
                if level >= 1.0:
                    level -= 1.0
                else:
                    wait = (1.0 - level) / self.rate
                os.pwrite(fd, _BUCKET.pack(level, now), 0)
                return wait
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()


def default_workers(cpu_max: Path = Path("/sys/fs/cgroup/cpu.max")) -> int:
    """One worker per CPU this process may use (at least 1): the CPUs it may run on, or fewer under a cgroup CPU
    limit (a container's `resources.limits.cpu`: `cpu.max` holds "<quota> <period>", or "max" for none)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        quota, period = cpu_max.read_text().split()[:2]
        if quota != "max" and int(period) > 0:
            cpus = min(cpus, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        pass
    return max(1, cpus)


RATE_PREFIX = "memory-pipeline-gateway-rate-"


def new_rate_dir(tmp: Path | None = None) -> Path:
    """The command's folder of token buckets, in the temp folder, named by its pid. The command removes it when
    it stops; one it could not (killed by SIGKILL) is removed here, by the next command, once its pid is gone."""
    base = Path(tmp or tempfile.gettempdir())
    for old in base.glob(f"{RATE_PREFIX}*-*"):
        pid = old.name.removeprefix(RATE_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{RATE_PREFIX}{os.getpid()}-", dir=base))


def settings(config: GatewayConfig, workers: int, rate_dir: Path | None) -> str:
    """What each worker's app factory reads (`SETTINGS_ENV`)."""
    return json.dumps({"max_body_bytes": config.max_body_bytes, "rate": config.rate_per_s, "burst": config.burst,
                       "import_batch": config.import_batch,
                       "requests_per_connection": config.requests_per_connection, "workers": workers,
                       "rate_dir": str(rate_dir) if rate_dir else None, "parent": os.getpid()})  # fmt: skip


def raw_settings() -> dict[str, Any]:
    raw = json.loads(os.environ.get(SETTINGS_ENV) or "{}")
    return raw if isinstance(raw, dict) else {}


def read_settings(raw: dict[str, Any]) -> tuple[GatewayConfig, Limiter]:
    config = GatewayConfig(max_body_bytes=int(raw.get("max_body_bytes", 1 << 20)),
                           rate_per_s=float(raw.get("rate", 20.0)), burst=int(raw.get("burst", 40)),
                           import_batch=int(raw.get("import_batch", IMPORT_BATCH)),
                           requests_per_connection=int(raw.get("requests_per_connection",
                                                               GatewayConfig.requests_per_connection)))  # fmt: skip
    folder = raw.get("rate_dir")
    limiter: Limiter = (SharedRateLimiter(Path(folder), config.rate_per_s, config.burst) if folder
                        else RateLimiter(config.rate_per_s, config.burst))  # fmt: skip
    return config, limiter


def die_with_parent(parent: int) -> None:
    """Linux: SIGTERM this worker when `parent`, the command that started it, dies (even by SIGKILL). A SIGTERM
    ignored or blocked by whatever started the command (both are inherited) would make that signal do nothing,
    so it is made to act first."""
    if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the signal was armed (in a container the command may be pid 1)
        os.kill(os.getpid(), signal.SIGTERM)
