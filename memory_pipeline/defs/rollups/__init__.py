"""Seed 002 in Dagster: Session → Core → Sphere on dynamic partitions, the assignment sensor."""
