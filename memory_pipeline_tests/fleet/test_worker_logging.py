"""In a fleet worker, Dagster's console lines are logged at their own level: a Celery worker's stderr is a
LoggingProxy that logged every Dagster DEBUG event as a WARNING; worker_logging's proxy logs each line at the level
it names, so the worker's `-l WARNING` keeps DEBUG and INFO out. A real Dagster run writes to Celery's real proxy
class here; the worker's own wiring (`-I memory_pipeline.fleet.processes.worker_logging`) is started by
test_worker_lost's real worker."""

import logging
import sys

import dagster as dg
import pytest
from celery.utils.log import LoggingProxy

from memory_pipeline.fleet.processes import worker_logging
from memory_pipeline.fleet.processes.stack import worker_command


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dg.op
def talk(context: dg.OpExecutionContext) -> None:
    context.log.info("an info line")
    context.log.warning("a warning line")


@dg.job
def chatty() -> None:
    talk()


def _worker_lines(monkeypatch: pytest.MonkeyPatch, proxy: type, worker_level: int) -> list[tuple[str, str]]:
    """(level the worker logged it at, line) for what a Dagster run wrote to a worker's redirected stderr."""
    logger = logging.Logger("celery.redirected")  # Celery's redirect logger, under a worker run with -l LEVEL
    logger.setLevel(worker_level)
    handler = Records()
    logger.addHandler(handler)
    with monkeypatch.context() as patch:
        patch.setattr(sys, "stderr", proxy(logger, logging.WARNING))  # Celery's default redirect level
        assert chatty.execute_in_process().success
    return [(r.levelname, r.getMessage()) for r in handler.records]


def _named(line: str) -> str:
    return line.split(" - dagster - ", 1)[1].split(" - ", 1)[0]


def test_dagster_lines_are_logged_at_their_own_level(monkeypatch: pytest.MonkeyPatch) -> None:
    before = _worker_lines(monkeypatch, LoggingProxy, logging.WARNING)
    debug_as_warning = [line for level, line in before if level == "WARNING" and " - dagster - DEBUG - " in line]
    assert len(debug_as_warning) >= 5  # what a worker printed: every DEBUG event as a WARNING

    quiet = _worker_lines(monkeypatch, worker_logging.LevelledProxy, logging.WARNING)
    assert [level for level, _ in quiet] == ["WARNING"] and "a warning line" in quiet[0][1]

    everything = _worker_lines(monkeypatch, worker_logging.LevelledProxy, logging.DEBUG)
    assert {_named(line) for _, line in everything} >= {"DEBUG", "INFO", "WARNING"}
    assert all(level == _named(line) for level, line in everything)


def test_install_swaps_a_celery_proxy_and_leaves_other_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    logger = logging.Logger("celery.redirected")
    monkeypatch.setattr(sys, "stderr", LoggingProxy(logger, logging.WARNING))
    plain = sys.stdout
    worker_logging.install()
    assert isinstance(sys.stderr, worker_logging.LevelledProxy)
    assert sys.stderr.logger is logger and sys.stderr.loglevel == logging.WARNING
    assert sys.stdout is plain  # not a Celery proxy: left alone
    print("an ordinary line", file=sys.stderr)  # not Dagster's: the proxy's own level
    assert worker_logging.level_of("an ordinary line") is None


def test_the_worker_imports_it() -> None:
    cmd = worker_command("w1", 1)
    assert cmd[cmd.index("-i") + 1] == "memory_pipeline.fleet.processes.worker_logging"
