"""Graph-preserving compaction (seed 004) as one domain of the code location."""

from memory_pipeline.domain import Domain
from memory_pipeline.graph.assets import drain_outbox_job, outbox_drain, summary_rollup_job
from memory_pipeline.graph.sensors import compaction_triggers, outbox_drain_sensor

DOMAIN = Domain(
    assets=[outbox_drain],
    jobs=[drain_outbox_job, summary_rollup_job],
    sensors=[compaction_triggers, outbox_drain_sensor],
)
