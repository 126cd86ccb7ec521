"""Progress for long steps: throttled log lines inside assets, and a one-line bar on the CLI's stderr.

The bar is drawn from the run's own event stream (`DagsterInstance.add_event_listener`), so it shows what
Dagster's log shows — step starts and ends, and any `i/n` an asset logs — without a second channel.
"""

from __future__ import annotations

import os
import re
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

import numpy as np

FRACTION = re.compile(r"\b(\d[\d,]*)\s*/\s*(\d[\d,]*)\b")
DONE_EVENTS = {"STEP_SUCCESS", "STEP_FAILURE", "STEP_SKIPPED"}
ENV = "MEMORY_PIPELINE_PROGRESS"  # auto (bar when stderr is a terminal) | bar | log


class ThrottledProgress:
    """Calls `log` with `i/n` at most every `interval` seconds, and always for the first and last item, so a
    long step is never silent for long and a million-row night does not write a million log events."""

    def __init__(self, log: Callable[[str], None], label: str, total: int, interval: float = 2.0) -> None:
        self.log, self.label, self.total, self.interval = log, label, total, interval
        self._last = -float("inf")

    def update(self, done: int, detail: str = "") -> None:
        now = time.monotonic()
        if done in (1, self.total) or now - self._last >= self.interval:
            self._last = now
            self.log(f"{self.label} {done}/{self.total}" + (f" {detail}" if detail else ""))


def encode_in_steps(
    encode: Callable[[list[str]], np.ndarray], texts: Sequence[str], step: int, on_step: Callable[[int], None]
) -> np.ndarray:
    """`encode(texts)` in slices of `step`, reporting the running count after each slice. With `step` a
    multiple of the encoder's batch size the vectors are the same as one call's."""
    parts = []
    for lo in range(0, len(texts), step):
        parts.append(encode(list(texts[lo : lo + step])))
        on_step(min(lo + step, len(texts)))
    return np.vstack(parts) if parts else encode([])


class ProgressBar:
    """`nightly_consolidation [########------]  5/16 steps  distillations: cluster 12/49` on one line.

    Called with each EventLogEntry of the run. Warnings and errors the console logger would have printed are
    written above the bar, so nothing is lost when the bar replaces the INFO log lines."""

    def __init__(
        self, job_name: str, total_steps: int, stream: TextIO | None = None, width: int = 24, redraw_every: float = 0.1
    ) -> None:
        self.job_name, self.total, self.width, self.redraw_every = job_name, max(total_steps, 1), width, redraw_every
        self._drawn_at = -float("inf")
        self.stream = stream or sys.stderr
        self.done = 0
        self.step = ""
        self.detail = ""
        self.fraction = 0.0
        self._drawn = False

    def __call__(self, event: Any) -> None:
        dagster_event = getattr(event, "dagster_event", None)
        kind = getattr(dagster_event, "event_type_value", None) if dagster_event is not None else None
        if kind == "STEP_START":
            self.step, self.detail, self.fraction = event.step_key or "", "", 0.0
        elif kind in DONE_EVENTS:
            self.done = min(self.done + 1, self.total)
            self.detail, self.fraction = "", 0.0
            if kind == "STEP_FAILURE":
                self.message(f"step {event.step_key} failed: {getattr(dagster_event, 'message', '') or ''}".strip())
        elif dagster_event is None:
            msg = event.user_message or ""
            if event.level >= 30:  # logging.WARNING
                self.message(msg)
            match = FRACTION.search(msg)
            if match:
                i, n = (int(g.replace(",", "")) for g in match.groups())
                if n:
                    self.step, self.fraction = event.step_key or self.step, min(i / n, 1.0)
                    self.detail = msg[:60]
        if kind is not None or time.monotonic() - self._drawn_at >= self.redraw_every:
            self.draw()

    def line(self) -> str:
        filled = int(self.width * min((self.done + self.fraction) / self.total, 1.0))
        bar = "#" * filled + "-" * (self.width - filled)
        now = f"  {self.step}: {self.detail}" if self.detail else (f"  {self.step}" if self.step else "")
        return f"{self.job_name} [{bar}] {self.done:>2}/{self.total} steps{now}"

    def draw(self) -> None:
        self.stream.write("\r\x1b[K" + self.line()[:160])
        self.stream.flush()
        self._drawn, self._drawn_at = True, time.monotonic()

    def message(self, text: str) -> None:
        self.stream.write("\r\x1b[K" + text + "\n")
        if self._drawn:
            self.draw()

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K" + self.line() + "\n")
            self.stream.flush()


def wants_bar(stream: TextIO) -> bool:
    mode = os.environ.get(ENV, "auto").strip().lower()
    if mode not in ("auto", "bar", "log"):
        raise ValueError(f"{ENV}={mode!r}: expected auto, bar or log")
    return mode == "bar" or (mode == "auto" and stream.isatty())


@contextmanager
def progress_for(
    instance: Any, job: Any, run_config: Mapping[str, Any], stream: TextIO | None = None
) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """Yields (run_id, run_config) for `job.execute_in_process`. With a bar, the run id is chosen here so the
    listener can be registered before the first event, and the console logger drops to warnings-only (the bar
    prints those itself). Without one, the run config is unchanged and Dagster picks the run id."""
    stream = stream or sys.stderr
    if not wants_bar(stream):
        yield None, dict(run_config)
        return
    run_id = str(uuid.uuid4())
    bar = ProgressBar(job.name, len(job.graph.nodes), stream)
    instance.add_event_listener(run_id, bar)
    config = {**run_config, "loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    try:
        yield run_id, config
    finally:
        bar.close()
