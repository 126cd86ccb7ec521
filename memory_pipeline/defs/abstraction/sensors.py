"""Alerts from what the instance recorded: failed checks, failed runs and every run report.

Failed asset checks neither fail the run nor trigger run-failure sensors (dagster#29896), so this sensor
reads each finished run's own events. It walks runs, not global event ids: the default SQLite storage
shards events per run, and its event ids are neither unique nor ordered across runs."""

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg
from dagster import DagsterEventType

from memory_pipeline.abstraction import alerts
from memory_pipeline.operator.alert import Alert
from memory_pipeline.resources import EngineConfig, MemoryStoreResource
from memory_pipeline.resources.notifier import NotifierResource

REPORT_KEY = dg.AssetKey("report")
BATCH = 50  # runs per tick
FINISHED = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]
EVENTS = {DagsterEventType.ASSET_CHECK_EVALUATION, DagsterEventType.RUN_FAILURE, DagsterEventType.ASSET_MATERIALIZATION}
# Runs updated within this much of the cursor are re-read and skipped by id: update timestamps can tie.
OVERLAP = timedelta(seconds=1)


@dataclass
class AlertCursor:
    """The last run update time handled, and the runs handled that lie within OVERLAP of it."""

    updated_after: float = 0.0
    seen: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, raw: str | None) -> "AlertCursor":
        try:
            data = json.loads(raw) if raw else {}
            return cls(float(data["updated_after"]), list(data["seen"])) if isinstance(data, dict) and data else cls()
        except (ValueError, KeyError, TypeError):
            return cls()  # a cursor from an older version: start over (alerts are idempotent to read)

    def dump(self) -> str:
        return json.dumps({"updated_after": self.updated_after, "seen": self.seen})


def _metadata(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: getattr(v, "value", v) for k, v in values.items()}


def _run_alerts(instance: dg.DagsterInstance, run: dg.DagsterRun) -> list[Alert]:
    found: list[Alert] = []
    for entry in instance.all_logs(run.run_id, of_type=EVENTS):
        event = entry.dagster_event
        if event is None:
            continue
        if event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
            ev = event.asset_check_evaluation_data
            alert = alerts.from_check(
                run.run_id, ev.asset_key.to_user_string(), ev.check_name, ev.passed, ev.severity.value,
                _metadata(ev.metadata),
            )
            if alert:
                found.append(alert)
        elif event.event_type == DagsterEventType.RUN_FAILURE:
            found.append(alerts.from_run_failure(run.run_id, run.job_name, event.message or "run failed"))
        else:
            materialization = event.step_materialization_data.materialization
            if materialization.asset_key == REPORT_KEY:
                found.append(alerts.from_report(run.run_id, _metadata(materialization.metadata)))
    return found


def collect_alerts(instance: dg.DagsterInstance, cursor: AlertCursor) -> tuple[list[Alert], AlertCursor]:
    """Alerts of the runs that finished since `cursor`, oldest first, and the new cursor."""
    after = datetime.fromtimestamp(cursor.updated_after, UTC) - OVERLAP if cursor.updated_after else None
    records = instance.get_run_records(
        filters=dg.RunsFilter(statuses=FINISHED, updated_after=after),
        order_by="update_timestamp",
        ascending=True,
        limit=BATCH + len(cursor.seen),
    )
    seen = set(cursor.seen)
    fresh = [r for r in records if r.dagster_run.run_id not in seen][:BATCH]
    found = [alert for record in fresh for alert in _run_alerts(instance, record.dagster_run)]
    if not fresh:
        return found, cursor
    newest = max(r.update_timestamp.timestamp() for r in fresh)
    handled = [(r.dagster_run.run_id, r.update_timestamp.timestamp()) for r in records if r.dagster_run.run_id in seen]
    handled += [(r.dagster_run.run_id, r.update_timestamp.timestamp()) for r in fresh]
    window = newest - OVERLAP.total_seconds()
    return found, AlertCursor(newest, sorted({run_id for run_id, ts in handled if ts >= window}))


@dg.sensor(
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Every minute, reads the runs that finished since its last tick and sends one alert per report, "
    "failed check or failed run to reports/alerts.jsonl (and the webhook, when set): `action` on a FAIL verdict, "
    "errors, negative reduction, a run over 30 min, a failed ERROR check or a failed run; `info` otherwise. "
    "If its tick fails, check that reports/ is writable and the webhook reachable; missed runs are sent next tick.",
)
def consolidation_alerts(context: dg.SensorEvaluationContext, notifier: NotifierResource) -> dg.SkipReason:
    """The alert priorities of seed §8.3 (see the description)."""
    found, cursor = collect_alerts(context.instance, AlertCursor.parse(context.cursor))
    for alert in found:
        notifier.send(alert, context.log)
    context.update_cursor(cursor.dump())
    actions = sum(1 for a in found if a.priority == "action")
    return dg.SkipReason(f"sent {len(found)} alert(s), {actions} needing action")


@dg.sensor(
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Frees the store pool's slots of runs that are gone (killed on any host, or ended), so that runs "
    "the UI or a schedule launches never wait for them. A run counts as gone when the instance says it ended, "
    "when it holds the store lease and its heartbeat stopped (6 missed beats of "
    "MEMORY_PIPELINE_LEASE_HEARTBEAT_SECONDS, 15 s), when its lease is from another host and has expired, or "
    "when it is a CLI run on this host whose process has exited.",
)
def free_stale_store_slots(
    context: dg.SensorEvaluationContext, store: MemoryStoreResource, engine: EngineConfig
) -> dg.SkipReason:
    from memory_pipeline.operator.recovery import free_stale
    from memory_pipeline.resources.store import POOL

    freed: list[str] = []

    def report(line: str) -> None:
        freed.append(line)
        context.log.warning(line)

    alive = free_stale(
        context.instance, POOL, store.home_path / "memory.duckdb", timedelta(hours=engine.lease_ttl_hours), report
    )
    held = "; ".join(h.describe() for h in alive) or "nobody"
    return dg.SkipReason(f"freed {len(freed)} slot holder(s); `{POOL}` held by {held}")
