"""Graph-preserving compaction (seed 004): memories are linked by tags and nexus keys, and compaction keeps
those links. Pure logic (usage decay, candidate score, key-centred clusters, roll-ups, hubs, triggers) lives
in plain modules here; its Dagster objects in memory_pipeline/defs/graph/, its commands in cli.py."""

# The public surface other domains may import (memory_pipeline_tests/test_layering.py): the abstraction engine
# plans each night's clusters with `plan` and reads usage, hubs and reachability with `queries`; search feeds
# the inclusions it served into usage decay through `usage_store` (seed 004 §9).
__all__ = ["plan", "queries", "usage_store"]
