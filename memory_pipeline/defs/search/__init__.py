"""Dagster objects of the search domain (module-level in assets.py and sensors.py; Dagster's loader finds them)."""
