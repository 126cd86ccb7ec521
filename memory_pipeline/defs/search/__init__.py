"""Dagster objects of the search domain; `DOMAIN` for today's per-domain merge in memory_pipeline.definitions."""

from memory_pipeline.defs.search.assets import (
    search_index,
    search_index_rebuild,
    search_index_sensor,
    search_index_update,
    search_usage,
    search_usage_ingest,
    search_usage_sensor,
)
from memory_pipeline.domain import Domain

DOMAIN = Domain(
    assets=[search_index, search_usage],
    jobs=[search_index_rebuild, search_index_update, search_usage_ingest],
    sensors=[search_index_sensor, search_usage_sensor],
)
