"""Dagster objects only, one folder per domain, loaded by `dg.load_from_defs_folder` (see definitions.py).

A module here holds assets, asset checks, jobs, schedules, sensors or partitions at module level, or a
`@dg.definitions` function (for resources); the domain's pure logic lives in `memory_pipeline/<domain>/`.
"""

import warnings

import dagster as dg

# Journals and rollups use single-run backfills on purpose (one run per range); Dagster marks the parameter beta.
warnings.filterwarnings("ignore", message=r"Parameter `backfill_policy`.*is currently in beta", category=dg.BetaWarning)
