"""The run-storm test's reading of the records (ui/run_records.py) catches what it is there to catch: runs of one
job in flight together (queued counts), and a daemon that launched recently, left a run unfinished or stopped
ticking."""

from __future__ import annotations

import uuid

import dagster as dg

from memory_pipeline.operator.instance import job_origin
from memory_pipeline_tests.ui.run_records import RunSpan, Tick, job_key, overlapping, quiet, run_spans


def span(job: str, created: float, ended: float | None, status: str = "SUCCESS") -> RunSpan:
    return RunSpan(f"{job}-{created:.0f}", job, status, created, ended, "sensor rollups_sensor")


def test_runs_of_one_job_overlap_when_the_later_was_created_before_the_earlier_ended() -> None:
    runs = [span("rollup_cores", 0, 10), span("rollup_cores", 10, 20), span("rollup_assign", 5, 15)]
    assert overlapping(runs) == []  # back to back, and another job alongside
    queued_behind = span("rollup_cores", 15, 30)
    assert overlapping([*runs, queued_behind]) == [(runs[1], queued_behind)]
    still_running = span("rollup_assign", 0, None, "STARTED")
    assert overlapping([still_running, span("rollup_assign", 500, 510)])[0][0] == still_running


def test_asset_runs_are_one_job_per_asset_selection() -> None:
    assert job_key("__ASSET_JOB", ["search_index"]) == "__ASSET_JOB[search_index]"
    assert job_key("__ASSET_JOB", ["b", "a"]) == "__ASSET_JOB[a,b]"
    assert job_key("rollup_cores", ["cores"]) == "rollup_cores"


def test_quiet_counts_from_the_last_launch_or_end_and_names_sensors_that_did_not_tick_since() -> None:
    runs = [span("rollup_cores", 100, 160), span("search_index_update", 170, 200)]
    ticks = {
        "rollups_sensor": [Tick("rollups_sensor", t, "SKIPPED", (), "") for t in (60, 120, 180, 240, 800)],
        "search_usage_sensor": [Tick("search_usage_sensor", 150, "SKIPPED", (), "")],
    }
    state = quiet(runs, ticks, ["rollups_sensor", "search_usage_sensor", "agent_writes_sensor"])
    assert (state.since, state.first_tick, state.last_tick) == (200, 60, 800)
    assert state.seconds == 600 and state.observed == 740
    assert state.silent == ["agent_writes_sensor", "search_usage_sensor"] and state.unfinished == []
    unfinished = span("rollup_assign", 300, None, "QUEUED")
    assert quiet([*runs, unfinished], ticks, []).unfinished == [unfinished]


def _queue(instance: dg.DagsterInstance) -> str:
    """A run the sensor daemon created and the run coordinator enqueued (its RUN_ENQUEUED event)."""
    from dagster._core.events import DagsterEvent

    run = dg.DagsterRun(job_name="rollup_assign", run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.NOT_STARTED,
                        tags={"dagster/sensor_name": "rollups_sensor"}, remote_job_origin=job_origin("rollup_assign"))
    instance.add_run(run)
    instance.report_dagster_event(DagsterEvent.job_enqueue(run), run_id=run.run_id)
    return run.run_id


def test_spans_come_from_the_instances_run_records_and_events() -> None:
    with dg.instance_for_test() as instance:
        first = _queue(instance)
        instance.report_run_failed(instance.get_run_by_id(first), "test: it ended")  # its end, to the microsecond
        second = _queue(instance)
        apart = run_spans(instance)
        third = _queue(instance)
        spans = {s.run_id: s for s in run_spans(instance)}
    assert [(s.run_id, s.status, s.launched_by) for s in apart] == [
        (first, "FAILURE", "sensor rollups_sensor"), (second, "QUEUED", "sensor rollups_sensor")
    ]
    assert apart[0].ended is not None and apart[0].created <= apart[0].ended <= apart[1].created
    assert apart[1].ended is None and overlapping(apart) == []  # one after the other, in the same second or not
    assert overlapping(spans.values()) == [(spans[second], spans[third])]  # queued behind an unfinished one
