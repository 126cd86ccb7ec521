"""Graph-preserving compaction (seed 004): memories are linked by tags and nexus keys, and compaction keeps
those links. Pure logic (usage decay, candidate score, key-centred clusters, roll-ups, hubs, triggers) lives
in plain modules here; Dagster only in assets.py, checks.py, sensors.py, definitions.py and cli.py."""
