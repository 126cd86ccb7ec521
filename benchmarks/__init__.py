"""Benchmarks for the memory pipeline: `python -m benchmarks` (see benchmarks/README section in the README)."""
