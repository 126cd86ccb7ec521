"""The journals domain (seed 001): assets, checks, jobs, schedules and the Parquet IO manager."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_pipeline.domain import Domain, Resources
from memory_pipeline.journals.assets import ASSETS, CHECKS, IO_MANAGER
from memory_pipeline.journals.io import ParquetIOManager
from memory_pipeline.journals.schedules import JOBS, SCHEDULES


def _resources(shared: Resources) -> dict[str, Any]:
    store = shared.get("store")
    if store is None:
        return {}
    return {IO_MANAGER: ParquetIOManager(base_dir=str(Path(store.home).expanduser().resolve() / "parquet"))}


DOMAIN = Domain(assets=ASSETS, asset_checks=CHECKS, jobs=JOBS, schedules=SCHEDULES, resources=_resources)
