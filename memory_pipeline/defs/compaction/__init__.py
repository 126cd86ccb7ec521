"""Seed 003 in Dagster: tiered compaction on weekly partitions, its checks, schedule and volume sensors."""
