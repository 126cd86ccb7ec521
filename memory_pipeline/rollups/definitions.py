"""The rollups domain (seed 002) as registered in the code location."""

from memory_pipeline.domain import Domain
from memory_pipeline.rollups.assets import ASSETS, JOBS
from memory_pipeline.rollups.sensors import rollups_sensor

DOMAIN = Domain(assets=ASSETS, jobs=JOBS, sensors=[rollups_sensor])
