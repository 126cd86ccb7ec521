"""Partition keys of time-partitioned assets, alone or as a fleet's agent × time multi-partition."""


def time_part(key: str) -> str:
    """The date of a partition key: "2026-11-01" as it is, "ada|2026-11-01" (agent × day, agent × week: Dagster
    joins a multi-partition's keys with "|" in dimension-name order, and "agent" sorts first) → "2026-11-01"."""
    return key.rsplit("|", 1)[-1]
