"""Dagster's DEBUG lines kept off a run's console unless `--verbose`.

A run's console logger follows the run config (`settings.console_loggers`), but each step worker of Dagster's
multiprocess executor first logs `STEP_WORKER_STARTED` through a logger of its own at DEBUG, straight to the
stderr it inherited, before the run config is read. So the CLI drops those lines where they arrive: the
process's stderr (file descriptor 2, which the workers inherit) goes through a pipe while the runs go on, and
every line but Dagster's DEBUG lines is passed on as it comes. Only the console is filtered; the run's events,
DEBUG ones included, are stored as ever and shown in the UI.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from memory_pipeline.settings import verbose

DEBUG_LINE = re.compile(rb" - dagster - DEBUG - ")
DRAIN_S = 10.0  # bounds the wait for the pipe's last lines once every writer is done


@contextmanager
def without_dagster_debug() -> Iterator[None]:
    """Within: stderr (file descriptor 2, for this process and the processes it starts) without Dagster's DEBUG
    lines; with `--verbose`, unchanged."""
    if verbose():
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    passed_to = os.dup(saved)  # the pump's own: `saved` is closed when the block ends

    def pump() -> None:
        with os.fdopen(read_end, "rb") as source, os.fdopen(passed_to, "wb", buffering=0) as target:
            for line in source:
                if not DEBUG_LINE.search(line):
                    target.write(line)

    thread = threading.Thread(target=pump, name="stderr-without-debug", daemon=True)
    thread.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # the pipe's last writer here gone: the pump reads to its end and stops
        os.close(saved)
        thread.join(DRAIN_S)
