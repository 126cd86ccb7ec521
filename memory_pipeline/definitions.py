"""The one Definitions object of the memory_pipeline code location."""

import os
from pathlib import Path

import dagster as dg

from memory_pipeline.abstraction.checks import CHECKS
from memory_pipeline.abstraction.rollback_job import rollback_consolidation
from memory_pipeline.abstraction.schedules import (
    PIPELINE,
    consolidation_dry_run,
    nightly_consolidation,
    nightly_schedule,
)
from memory_pipeline.abstraction.sensors import consolidation_alerts
from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.resources.embedder import MINILM
from memory_pipeline.resources.notifier import NotifierResource
from memory_pipeline.settings import workspace_home

REPO_ROOT = Path(__file__).resolve().parent.parent


def default_resources(home: str | None = None, as_of: str = "") -> dict[str, dg.ConfigurableResource]:
    """Resources from the environment: workspace, embedder model, LLM key (optional), seed constants."""
    return {
        "store": MemoryStoreResource(home=home or str(workspace_home())),
        "embedder": EmbedderResource(model=os.environ.get("MEMORY_PIPELINE_EMBEDDER", MINILM)),
        "llm": LLMResource(
            api_key=dg.EnvVar("ANTHROPIC_API_KEY") if os.environ.get("ANTHROPIC_API_KEY") else None,
            mode=os.environ.get("MEMORY_PIPELINE_LLM", "auto"),
        ),
        "engine": EngineConfig.from_env(as_of=as_of),
        "notifier": NotifierResource(
            alerts_path=str(Path(home or workspace_home()) / "reports" / "alerts.jsonl"),
            webhook_url=os.environ.get("MEMORY_PIPELINE_WEBHOOK_URL") or None,
        ),
    }


def build_definitions(resources: dict[str, dg.ConfigurableResource] | None = None) -> dg.Definitions:
    return dg.Definitions(
        assets=PIPELINE,
        asset_checks=CHECKS,
        jobs=[nightly_consolidation, consolidation_dry_run, rollback_consolidation],
        schedules=[nightly_schedule],
        sensors=[consolidation_alerts],
        resources=resources or default_resources(),
    )


defs = build_definitions()
