"""The compaction domain (seed 003) as seen by the code location."""

from memory_pipeline.compaction.assets import ASSETS
from memory_pipeline.compaction.checks import CHECKS
from memory_pipeline.compaction.schedules import tiered_compaction, weekly_compaction_schedule
from memory_pipeline.compaction.sensors import SENSORS
from memory_pipeline.domain import Domain

DOMAIN = Domain(
    assets=ASSETS,
    asset_checks=CHECKS,
    jobs=[tiered_compaction],
    schedules=[weekly_compaction_schedule],
    sensors=SENSORS,
)
