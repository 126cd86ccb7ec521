"""The memory store: a DuckDB file in the workspace, versioned migrations, and repository functions."""

from memory_pipeline.store.db import MemoryStore, StoreError

__all__ = ["MemoryStore", "StoreError"]
