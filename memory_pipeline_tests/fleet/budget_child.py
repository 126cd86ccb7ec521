"""What each spawned process of test_fleet_location's concurrency test runs. Its own module, importing only the
budget: a spawned child imports the module its function lives in, and the test module (Dagster and the fleet
location) would cost every child ~2.5 s of start-up."""

from __future__ import annotations

from pathlib import Path

from memory_pipeline.fleet import budget


def reserve_in_child(args: tuple[str, int]) -> float:
    root, i = args
    return budget.reserve(Path(root), "n", f"run-{i}", f"a{i}", 0.1, 1.0, lambda a, r: None).allowance_usd
