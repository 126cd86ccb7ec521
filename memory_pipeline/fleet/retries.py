"""Failed runs whose retry Dagster decided on but never made.

Dagster's run-retry daemon reads new RUN_FAILURE events every few seconds and retries a run whose status is then
FAILURE. The instance stores a failure event first and sets the run's status a moment later (two writes), so a
daemon tick that falls between them reads a run still STARTED, passes over it, and moves its cursor past the
event: the run ends FAILURE with `dagster/will_retry=true` and is never retried (a lost night stays lost). Seen
under load, when the writing thread is descheduled between the two writes. `missed_retries` names such runs; the
fleet's sensor of the same name announces each failure once more, which the daemon then reads with the status
already FAILURE and retries as usual. Plain code: the sensor passes it the run records' fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

WILL_RETRY_TAG = "dagster/will_retry"
AUTO_RETRY_RUN_ID_TAG = "dagster/auto_retry_run_id"
REANNOUNCED_TAG = "memory_pipeline/failure_reannounced"
# The daemon looks every 5 s (DAGSTER_EVENT_LOG_CONSUMER_DAEMON_INTERVAL_SECONDS): a failure it has not retried
# after two minutes was passed over, not merely not reached yet.
MISSED_AFTER_S = 120.0


@dataclass(frozen=True)
class Failed:
    run_id: str
    tags: Mapping[str, str]
    failed_at: float | None  # epoch seconds: the run's end time (its last failure event)


def missed_retries(failed: Iterable[Failed], now: float, after_s: float) -> list[str]:
    """The runs Dagster decided to retry (`will_retry=true`) that have no retry `after_s` after they failed and
    were not announced again already (once only: a run whose retry fails for another reason is not looped on)."""
    return [f.run_id for f in failed
            if f.tags.get(WILL_RETRY_TAG) == "true" and AUTO_RETRY_RUN_ID_TAG not in f.tags
            and REANNOUNCED_TAG not in f.tags and f.failed_at is not None and now - f.failed_at >= after_s]
