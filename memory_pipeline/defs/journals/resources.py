"""The journals' Parquet IO manager, under the workspace of whichever `store` resource the run is given."""

from pathlib import Path

import dagster as dg

from memory_pipeline.defs.journals.common import IO_MANAGER
from memory_pipeline.defs.journals.io import ParquetIOManager


@dg.io_manager(required_resource_keys={"store"})
def workspace_parquet_io_manager(init_context: dg.InitResourceContext) -> ParquetIOManager:
    """`<workspace>/parquet/`: derived from `store` at run time, so replacing `store` (tests, the CLI) moves it."""
    home = Path(init_context.resources.store.home).expanduser().resolve()
    return ParquetIOManager(base_dir=str(home / "parquet"))


@dg.definitions
def journals_resources() -> dg.Definitions:
    return dg.Definitions(resources={IO_MANAGER: workspace_parquet_io_manager})
