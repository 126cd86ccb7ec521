"""Reconstructable entry points (module-level functions) so backfill steps can run in their own processes."""

from __future__ import annotations

import dagster as dg


def journal_daily_job() -> dg.JobDefinition:
    """`journal_daily` bound to the resources from the environment (MEMORY_PIPELINE_HOME, …)."""
    from memory_pipeline.definitions import defs

    return defs().resolve_job_def("journal_daily")


def journal_weekly_job() -> dg.JobDefinition:
    from memory_pipeline.definitions import defs

    return defs().resolve_job_def("journal_weekly")
