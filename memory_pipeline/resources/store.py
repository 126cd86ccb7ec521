"""The memory store resource: the DuckDB file inside the workspace."""

from pathlib import Path

import dagster as dg

from memory_pipeline.store import MemoryStore
from memory_pipeline.store.lease import POOL as POOL  # re-exported: assets name their pool from here
from memory_pipeline.store.outputs import OutputNotWritable, check_outputs


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

    def check_outputs(self) -> None:
        """Fail the step before its first write when a place the run writes to is unusable (one line)."""
        try:
            check_outputs(self.home_path)
        except OutputNotWritable as exc:
            raise dg.Failure(str(exc), allow_retries=False) from None
