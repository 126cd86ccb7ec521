"""Seed 004 in Dagster: the outbox drain, the summary roll-up job and the graph triggers."""
