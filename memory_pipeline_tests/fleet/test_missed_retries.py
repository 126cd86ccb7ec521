"""A failure that Dagster's run-retry daemon passed over is retried: the daemon's real iteration, run inside the
window between the failure event and the run's status, loses the retry; the fleet's `missed_retries` sensor
announces the failure again and the daemon's next iteration decides to retry it."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import dagster as dg
import pytest
from dagster._daemon.auto_run_reexecution.auto_run_reexecution import filter_runs_to_should_retry
from dagster._daemon.auto_run_reexecution.event_log_consumer import EventLogConsumerDaemon

from memory_pipeline.fleet import retries
from memory_pipeline.fleet.definitions import missed_retries


@dg.op
def step() -> None: ...


@dg.job
def night() -> None:
    step()


class Consumer(EventLogConsumerDaemon):
    """Dagster's own event-log consumer (cursors, queries); its handler records the runs it would retry, by
    Dagster's own decision, instead of launching them (a launch needs a code location)."""

    def __init__(self, instance: dg.DagsterInstance) -> None:
        super().__init__(interval_seconds=1)
        self._logger = logging.getLogger("consumer")
        self.instance = instance
        self.retried: list[str] = []

    @property
    def handle_updated_runs_fns(self) -> Sequence[Any]:
        def record(context: Any, run_records: Sequence[Any], logger: logging.Logger) -> Iterator[None]:
            runs = [r.dagster_run for r in run_records]
            self.retried += [run.run_id for run in filter_runs_to_should_retry(runs, context.instance)]
            yield

        return [record]

    def tick(self) -> None:
        context: Any = self  # what the iteration reads of its context is `.instance`
        list(self.run_iteration(context))


def started_run(instance: dg.DagsterInstance) -> dg.DagsterRun:
    run = instance.create_run_for_job(night)
    for kind in ("PIPELINE_STARTING", "PIPELINE_START"):
        instance.run_storage.handle_run_event(run.run_id, dg.DagsterEvent(event_type_value=kind, job_name="night"))
    return dg_run(instance, run.run_id)


def skipped(context: dg.SensorEvaluationContext) -> str:
    """What the sensor says it did (it never requests a run)."""
    result = missed_retries(context)
    assert isinstance(result, dg.SkipReason), result
    return str(result.skip_message)


def dg_run(instance: dg.DagsterInstance, run_id: str) -> dg.DagsterRun:
    run = instance.get_run_by_id(run_id)
    assert run is not None
    return run


def test_a_failure_the_retry_daemon_passed_over_is_announced_again_and_then_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with dg.instance_for_test(overrides={"run_retries": {"enabled": True, "max_retries": 1}}) as instance:
        consumer = Consumer(instance)
        consumer.tick()  # its cursors start at the log's end
        run = started_run(instance)
        storage = instance.run_storage
        set_status = storage.handle_run_event

        def status_after_a_tick(run_id: str, event: dg.DagsterEvent, *args: Any, **kwargs: Any) -> None:
            if event.event_type_value == "PIPELINE_FAILURE":
                consumer.tick()  # the daemon's tick lands after the failure event, before the status
            set_status(run_id, event, *args, **kwargs)

        monkeypatch.setattr(storage, "handle_run_event", status_after_a_tick)
        instance.report_run_failed(run, "worker lost")
        monkeypatch.setattr(storage, "handle_run_event", set_status)
        consumer.tick()
        failed = dg_run(instance, run.run_id)
        # Dagster's race: the run is FAILURE and to be retried, but the daemon passed over it for good
        assert failed.status == dg.DagsterRunStatus.FAILURE and failed.tags[retries.WILL_RETRY_TAG] == "true"
        assert consumer.retried == []

        context = dg.build_sensor_context(instance=instance)
        # failed just now: the daemon may still be about to retry it
        assert skipped(context) == "every failed run that is to be retried has its retry"
        monkeypatch.setattr(retries, "MISSED_AFTER_S", 0.0)
        assert skipped(context) == "1 failure(s) announced again for a missed retry"
        consumer.tick()
        assert consumer.retried == [run.run_id]
        again = dg_run(instance, run.run_id)
        assert again.tags[retries.REANNOUNCED_TAG] == "true"
        assert any("Failure announced again" in (e.message or "") for e in instance.all_logs(run.run_id))
        # once only: a run whose retry still does not come is not announced again and again
        assert skipped(context) == "every failed run that is to be retried has its retry"


def test_only_a_decided_retry_that_never_came_is_missed() -> None:
    tags = {retries.WILL_RETRY_TAG: "true"}
    failed = [
        retries.Failed("missed", tags, 1000.0),
        retries.Failed("recent", tags, 1100.0),  # the daemon may still be about to retry it
        retries.Failed("retried", {**tags, retries.AUTO_RETRY_RUN_ID_TAG: "r2"}, 1000.0),
        retries.Failed("not-to-retry", {retries.WILL_RETRY_TAG: "false"}, 1000.0),
        retries.Failed("announced", {**tags, retries.REANNOUNCED_TAG: "true"}, 1000.0),
        retries.Failed("no-end", tags, None),
    ]
    assert retries.missed_retries(failed, now=1150.0, after_s=120.0) == ["missed"]
