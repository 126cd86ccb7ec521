"""Seed 001 in Dagster: transcripts → sessions → memories, journals and MEMORY.md on daily/weekly partitions."""
