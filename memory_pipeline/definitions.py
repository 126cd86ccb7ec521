"""The code location: Dagster loads every domain's objects from `memory_pipeline/defs/` (`[tool.dg.project]` in
pyproject.toml names the package); here, in one place, every asset gets its owner and the seed it implements."""

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import dagster as dg

OWNER = "team:agent-memory"
# A new group names its seed here (or tags its assets `seed`); search and context implement seed 001 §4–7.
SEEDS = {
    "abstraction": "000", "journals": "001", "rollups": "002", "compaction": "003", "graph": "004",
    "search": "001", "context": "001",
}


def _badged(spec: dg.AssetSpec) -> dg.AssetSpec:
    """Every asset shows an owner and the seed it implements in the UI, whichever domain defined it."""
    spec = spec.replace_attributes(owners=spec.owners or [OWNER])
    seed = SEEDS.get(spec.group_name or "")
    return spec.merge_attributes(tags={"seed": seed}) if seed and "seed" not in spec.tags else spec


def _assembled(loaded: dg.Definitions, resources: Mapping[str, Any]) -> dg.Definitions:
    # A module that imports another module's asset shows it too: badge each asset once.
    assets = list({id(asset): asset for asset in loaded.assets or []}.values())
    specs = [a for a in assets if isinstance(a, dg.AssetsDefinition | dg.AssetSpec)]
    others = [a for a in assets if not isinstance(a, dg.AssetsDefinition | dg.AssetSpec)]  # carry no spec to badge
    return dg.Definitions(
        assets=[*dg.map_asset_specs(_badged, specs), *others],
        asset_checks=loaded.asset_checks,
        jobs=loaded.jobs,
        schedules=loaded.schedules,
        sensors=loaded.sensors,
        resources={**(loaded.resources or {}), **resources},
        executor=loaded.executor,
        loggers=loaded.loggers,
        metadata=loaded.metadata,
        component_tree=loaded.component_tree,
    )


def _load() -> dg.Definitions:
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)


_loaded_once = cache(_load)  # a load walks the folder (~1 s); tests and benchmarks build many locations


def defs_with(resources: Mapping[str, Any]) -> dg.Definitions:
    """The code location with some resources replaced (the CLI's workspace, tests, benchmarks). The folder is
    loaded once per process, so resources not given come from the environment as it was then; a resource
    derived from a shared one (the journals' IO manager from `store`) follows the replacement."""
    return _assembled(_loaded_once(), resources)


@dg.definitions
def defs() -> dg.Definitions:
    """What Dagster loads (workspace.yaml, [tool.dagster], `-m memory_pipeline.definitions`)."""
    return _assembled(_load(), {})
