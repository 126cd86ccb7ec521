"""Dagster objects of the search domain (module-level in assets.py; Dagster's loader finds them)."""
