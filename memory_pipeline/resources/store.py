"""The memory store resource: the DuckDB file inside the workspace."""

from pathlib import Path

import dagster as dg

from memory_pipeline.store import MemoryStore

# DuckDB allows one writer process: every asset or op that writes the store shares this concurrency pool.
POOL = "memory_store"


class MemoryStoreResource(dg.ConfigurableResource):
    """Workspace folder (MEMORY_PIPELINE_HOME); the store is `memory.duckdb` inside it."""

    home: str

    @property
    def home_path(self) -> Path:
        return Path(self.home).expanduser().resolve()

    @property
    def reports_dir(self) -> Path:
        return self.home_path / "reports"

    def open(self) -> MemoryStore:
        """The store, migrated to the current schema."""
        home = self.home_path
        if not home.is_dir():
            raise FileNotFoundError(
                f"workspace {home} does not exist: run `memory-pipeline demo` or set MEMORY_PIPELINE_HOME"
            )
        store = MemoryStore(home / "memory.duckdb")
        store.migrate()
        return store
