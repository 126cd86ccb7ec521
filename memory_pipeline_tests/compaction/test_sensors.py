"""Volume sensors (cursor: one request per state) and the weekly schedule (Sunday 03:00 UTC, evaluate first)."""

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from memory_pipeline.definitions import defs_with
from memory_pipeline.defs.compaction.sensors import episodic_volume_sensor, semantic_limit_sensor, working_volume_sensor
from memory_pipeline_tests.compaction.conftest import (
    PARTITION,
    WORKING_NOTE,
    mark_not_first,
    names,
    note,
    report_of,
    semantic_text,
)
from memory_pipeline_tests.conftest import resources_for


def tick(sensor: dg.SensorDefinition, home: Path, cursor: str | None, instance: dg.DagsterInstance) -> tuple:
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources_for(home))
    result = sensor(context)
    return result, context.cursor


def test_working_sensor_fires_once_per_state_and_rearms(home: Path) -> None:
    instance = dg.DagsterInstance.ephemeral()
    for i in range(10):
        note(home, "working", f"n{i}.md", "Short working note about the deploy.\n", age_days=1)
    result, cursor = tick(working_volume_sensor, home, None, instance)
    assert isinstance(result, dg.SkipReason) and "working_file_count=10 ≤ 10" in result.skip_message
    note(home, "working", "n10.md", "Short working note about the deploy.\n", age_days=1)  # 11 files
    request, cursor = tick(working_volume_sensor, home, cursor, instance)
    assert isinstance(request, dg.RunRequest) and cursor == "working_file_count"
    assert request.tags["memory_pipeline/compaction_trigger"] == "volume_overload"
    assert request.partition_key == PARTITION
    assert request.run_config["ops"]["tier_volumes"]["config"] == {"trigger": "sensor:working_volume_sensor"}
    assert "approved" not in str(request.run_config)  # never automatic approval
    note(home, "working", "n11.md", "Short working note about the deploy.\n", age_days=1)  # same fired state
    again, cursor = tick(working_volume_sensor, home, cursor, instance)
    assert isinstance(again, dg.SkipReason) and "already requested" in again.skip_message
    note(home, "working", "n12.md", "x " * 8000, age_days=1)  # now tokens fire too: a new state
    more, cursor = tick(working_volume_sensor, home, cursor, instance)
    assert isinstance(more, dg.RunRequest) and cursor == "working_file_count,working_total_tokens"
    for p in (home / "memory" / "working").iterdir():
        p.rename(home / "memory" / "archive" / p.name)  # the overload clears …
    cleared, cursor = tick(working_volume_sensor, home, cursor, instance)
    assert isinstance(cleared, dg.SkipReason) and cursor == ""
    for i in range(11):
        note(home, "working", f"m{i}.md", "Another short note.\n", age_days=1)  # … and comes back: fires again
    assert isinstance(tick(working_volume_sensor, home, cursor, instance)[0], dg.RunRequest)


def test_semantic_sensor_tags_the_higher_priority_trigger(home: Path) -> None:
    instance = dg.DagsterInstance.ephemeral()
    note(home, "semantic", "openclaw.md", semantic_text(1021), 1)
    risk, cursor = tick(semantic_limit_sensor, home, None, instance)
    assert risk.tags["memory_pipeline/compaction_trigger"] == "semantic_risk"
    note(home, "semantic", "openclaw.md", semantic_text(1201), 1)
    hard, cursor = tick(semantic_limit_sensor, home, cursor, instance)
    assert hard.tags["memory_pipeline/compaction_trigger"] == "semantic_hard_limit"
    assert cursor == "semantic_tokens_hard_limit,semantic_tokens_risk"
    assert isinstance(tick(episodic_volume_sensor, home, None, instance)[0], dg.SkipReason)


def test_sensor_requested_run_with_young_files_ends_cleanly_with_the_reason(home: Path) -> None:
    mark_not_first(home)
    instance = dg.DagsterInstance.ephemeral()
    for i in range(11):
        note(home, "working", f"n{i}.md", WORKING_NOTE, age_days=2)
    request, _ = tick(working_volume_sensor, home, None, instance)
    job = defs_with(resources_for(home)).resolve_job_def("tiered_compaction")
    result = job.execute_in_process(run_config=request.run_config, partition_key=request.partition_key,
                                    tags=request.tags, instance=instance)
    r = report_of(home, result)
    assert r["trigger_fired"].startswith("volume_overload (working_file_count=11 > 10")
    assert "no file is old enough" in r["no_action_reason"] and len(names(home, "working")) == 11
    run = instance.get_run_by_id(result.run_id)
    assert run.tags["memory_pipeline/compaction_trigger"] == "volume_overload"
    assert run.tags["memory_pipeline/approved"] == "false"


def test_weekly_schedule_is_sunday_0300_utc_and_evaluates_before_acting(home: Path) -> None:
    mark_not_first(home)
    defs = defs_with(resources_for(home))
    schedule = defs.resolve_schedule_def("weekly_compaction_schedule")
    assert (schedule.cron_schedule, schedule.execution_timezone) == ("0 3 * * 0", "UTC")
    sunday = datetime(2026, 11, 8, 3, 0, tzinfo=UTC)
    note(home, "working", "young.md", WORKING_NOTE, age_days=3, now=sunday)
    context = dg.build_schedule_context(scheduled_execution_time=sunday, resources=resources_for(home))
    request = schedule(context)
    assert request.partition_key == "2026-11-08" and request.tags["memory_pipeline/compaction_trigger"] == "none"
    config = request.run_config["ops"]["tier_volumes"]["config"]
    assert config == {"trigger": "weekly", "as_of": sunday.isoformat()}
    result = defs.resolve_job_def("tiered_compaction").execute_in_process(
        run_config=request.run_config, partition_key=request.partition_key, instance=dg.DagsterInstance.ephemeral()
    )
    r = report_of(home, result)
    assert result.success and not r["executed"] and r["no_action_reason"].startswith("no threshold met")
    assert names(home, "working") == ["young.md"]
