"""Dagster's run log in a fleet worker, at each line's own level.

A Celery worker replaces its processes' stdout and stderr with a LoggingProxy that logs every write at one level
(WARNING), and Dagster's console logger writes each event to stderr: every DEBUG event of a night came out as
`WARNING/ForkPoolWorker-1`, about 130 lines a night. The worker imports this module (`-I`, see
stack.worker_command); in each pool process, and in the worker itself for a solo pool, it swaps that proxy for
one that logs a line Dagster wrote at the level the line names, so the worker's `-l WARNING` keeps DEBUG and INFO
events out and a Dagster WARNING or ERROR reads as one. Anything else written there keeps the proxy's level. The
run log itself is unchanged: every event is in the instance, as before."""

from __future__ import annotations

import importlib
import logging
import re
import sys
from typing import Any

# Celery ships no type information: its modules are typed as Any here.
_signals: Any = importlib.import_module("celery.signals")
LoggingProxy: Any = importlib.import_module("celery.utils.log").LoggingProxy

# Dagster's console format: "%(asctime)s - %(name)s - %(levelname)s - %(message)s", logger name "dagster"
DAGSTER_LINE = re.compile(r" - dagster - (DEBUG|INFO|WARNING|ERROR|CRITICAL) - ")


def level_of(text: str) -> int | None:
    """The level a Dagster console line names (its first line: a traceback that follows belongs to it)."""
    match = DAGSTER_LINE.search(text.split("\n", 1)[0])
    return int(logging.getLevelName(match[1])) if match else None


class LevelledProxy(LoggingProxy):
    """A LoggingProxy that logs Dagster's console lines at their own level."""

    loglevel: int  # set by LoggingProxy.__init__

    def write(self, data: Any) -> int:
        level = level_of(data) if isinstance(data, str) else None
        if level is None or level == self.loglevel:
            return int(super().write(data))
        if not self.logger.isEnabledFor(level):
            return len(data)  # below the worker's level: dropped, as that logging call would be
        previous = self.loglevel
        self.loglevel = level  # this object's own attribute; a pool process runs one task at a time
        try:
            return int(super().write(data))
        finally:
            self.loglevel = previous


def install() -> None:
    """Swap a LoggingProxy on stdout/stderr for a LevelledProxy on the same logger and level."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, LoggingProxy) and not isinstance(stream, LevelledProxy):
            setattr(sys, name, LevelledProxy(stream.logger, stream.loglevel))


def _install_on_signal(**_: Any) -> None:
    install()


def ready_line(hostname: str, concurrency: Any) -> str:
    return f"worker {hostname} ready: {concurrency} process(es) taking the fleet's tasks"


def _say_ready(sender: Any = None, **_: Any) -> None:
    """Celery's own "ready" is an INFO line the worker's `-l WARNING` hides: say it on the real stdout."""
    hostname = getattr(sender, "hostname", "?")
    concurrency = getattr(getattr(sender, "controller", None), "concurrency", None) or "?"
    print(ready_line(hostname, concurrency), file=sys.__stdout__, flush=True)


# prefork: in each pool process, once Celery has redirected its streams; solo and thread pools run tasks in the
# worker process itself, ready once its streams are redirected
_signals.worker_process_init.connect(_install_on_signal, weak=False)
_signals.worker_ready.connect(_install_on_signal, weak=False)
_signals.worker_ready.connect(_say_ready, weak=False)
