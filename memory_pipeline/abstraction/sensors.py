"""Alerts from what the instance recorded: failed checks, failed runs and every run report.

Failed asset checks neither fail the run nor trigger run-failure sensors (dagster#29896), so this sensor
reads check evaluations from the event log itself, with a cursor so each event alerts once."""

import dagster as dg
from dagster import DagsterEventType

from memory_pipeline.abstraction import alerts
from memory_pipeline.resources.notifier import NotifierResource

REPORT_KEY = dg.AssetKey("report")
BATCH = 200


def _events(instance: dg.DagsterInstance, event_type: DagsterEventType, after: int) -> list[dg.EventLogRecord]:
    return list(
        instance.get_event_records(
            dg.EventRecordsFilter(event_type=event_type, after_cursor=after), limit=BATCH, ascending=True
        )
    )


def _metadata(values: dict) -> dict:
    return {k: getattr(v, "value", v) for k, v in values.items()}


def collect_alerts(instance: dg.DagsterInstance, after: int) -> tuple[list[alerts.Alert], int]:
    """Alerts for events after storage id `after`, and the new cursor.

    Each event type is read in batches; when one type fills its batch, the cursor stops at that batch's last
    event, so another type's later events are never skipped — they are read on the next tick."""
    checks = _events(instance, DagsterEventType.ASSET_CHECK_EVALUATION, after)
    failures = _events(instance, DagsterEventType.RUN_FAILURE, after)
    materializations = _events(instance, DagsterEventType.ASSET_MATERIALIZATION, after)
    full = [batch[-1].storage_id for batch in (checks, failures, materializations) if len(batch) >= BATCH]
    horizon = min(full) if full else None

    def within(records: list[dg.EventLogRecord]) -> list[dg.EventLogRecord]:
        return [r for r in records if horizon is None or r.storage_id <= horizon]

    found: list[tuple[int, alerts.Alert]] = []
    cursor = after
    for record in within(checks):
        cursor = max(cursor, record.storage_id)
        ev = record.event_log_entry.dagster_event.asset_check_evaluation_data
        alert = alerts.from_check(
            record.run_id,
            ev.asset_key.to_user_string(),
            ev.check_name,
            ev.passed,
            ev.severity.value,
            _metadata(ev.metadata),
        )
        if alert:
            found.append((record.storage_id, alert))
    for record in within(failures):
        cursor = max(cursor, record.storage_id)
        run = instance.get_run_by_id(record.run_id)
        message = record.event_log_entry.dagster_event.message or "run failed"
        found.append((record.storage_id, alerts.from_run_failure(record.run_id, run.job_name if run else "?", message)))
    for record in within(materializations):
        cursor = max(cursor, record.storage_id)
        materialization = record.asset_materialization
        if materialization is None or materialization.asset_key != REPORT_KEY:
            continue
        found.append((record.storage_id, alerts.from_report(record.run_id, _metadata(materialization.metadata))))
    found.sort(key=lambda pair: pair[0])
    return [a for _, a in found], cursor


@dg.sensor(minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING)
def consolidation_alerts(context: dg.SensorEvaluationContext, notifier: NotifierResource) -> dg.SkipReason:
    """Seed §8.3 priorities: `action` on a FAIL verdict, errors, negative reduction, a run over 30 min, a
    failed ERROR check or a failed run; `info` otherwise."""
    after = int(context.cursor) if context.cursor else 0
    found, cursor = collect_alerts(context.instance, after)
    for alert in found:
        notifier.send(alert, context.log)
    context.update_cursor(str(cursor))
    actions = sum(1 for a in found if a.priority == "action")
    return dg.SkipReason(f"sent {len(found)} alert(s), {actions} needing action")
