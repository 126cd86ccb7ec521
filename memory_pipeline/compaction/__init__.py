"""Tiered compaction (seed 003): working → episodic → semantic files under `<workspace>/memory/`, governed."""
