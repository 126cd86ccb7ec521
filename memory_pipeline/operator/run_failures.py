"""A failed night on the terminal: Dagster's own failure events without their stack traces (the full error stays
in the run's event log, `memory-pipeline ui` shows it), the "not executing" lines of the steps after it left out,
and one line naming the cause and what to do."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_SKIPPED = ("Not executing.", "were not executed")


class _ShortFailures(logging.Filter):
    """A failure event's message cut before its error's class and stack trace; the steps a failure left unrun
    left out (the cause is said once)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if any(s in message for s in _SKIPPED) and "Dependencies for step" in message:
            return False
        if "Stack Trace:" in message or "dagster._core.errors" in message:
            head = message.split("\n\n", 1)[0].rstrip()
            record.msg, record.args = f"{head} (the full error is in the run's log: memory-pipeline ui)", None
        return True


@contextmanager
def short_failures() -> Iterator[None]:
    """While a CLI run executes: every console logger Dagster makes for it filters its failure lines."""
    base = logging.getLoggerClass()

    class Quiet(base):  # type: ignore[valid-type,misc]  # Dagster makes its console logger of this class
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.addFilter(_ShortFailures())

    logging.setLoggerClass(Quiet)
    try:
        yield
    finally:
        logging.setLoggerClass(base)


def blocked_line(result: Any) -> str | None:
    """A blocking check that failed with ERROR: its own description (the cause and what to do), on one line."""
    for event in result.all_events:
        if event.event_type_value == "ASSET_CHECK_EVALUATION" and not event.event_specific_data.passed:
            data = event.event_specific_data
            text = " ".join((data.description or "").split())
            return f"the night was blocked by the check {data.check_name}: {text or 'see the log above'}"
    return None
