"""The one Definitions object of the memory_pipeline code location."""

import importlib
import os
import warnings
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
# Journals and rollups use single-run backfills on purpose (one run per range); Dagster marks the parameter beta.
warnings.filterwarnings("ignore", message=r"Parameter `backfill_policy`.*is currently in beta", category=dg.BetaWarning)

OWNER = "team:agent-memory"
SEEDS = {
    "abstraction": "000",
    "journals": "001",
    "rollups": "002",
    "compaction": "003",
    "graph": "004",
    "search": "001",
}

# Each module exposes `DOMAIN: memory_pipeline.domain.Domain`; one line per domain.
DOMAINS: tuple[str, ...] = (
    "memory_pipeline.graph.definitions",
    "memory_pipeline.rollups.definitions",
    "memory_pipeline.compaction.definitions",
    "memory_pipeline.journals.definitions",
    "memory_pipeline.defs.search",
)


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


def _badged(spec: dg.AssetSpec) -> dg.AssetSpec:
    """Every asset shows an owner and the seed it implements in the UI, whichever domain defined it."""
    spec = spec.replace_attributes(owners=spec.owners or [OWNER])
    seed = SEEDS.get(spec.group_name or "")
    return spec.merge_attributes(tags={"seed": seed}) if seed and "seed" not in spec.tags else spec


def build_definitions(resources: dict[str, dg.ConfigurableResource] | None = None) -> dg.Definitions:
    shared = dict(resources or default_resources())
    domains = [importlib.import_module(name).DOMAIN for name in DOMAINS]
    for domain in domains:
        shared = {**domain.resources(shared), **shared}
    return dg.Definitions(
        assets=dg.map_asset_specs(_badged, [*PIPELINE, *(a for d in domains for a in d.assets)]),
        asset_checks=[*CHECKS, *(c for d in domains for c in d.asset_checks)],
        jobs=[
            nightly_consolidation,
            consolidation_dry_run,
            rollback_consolidation,
            *(j for d in domains for j in d.jobs),
        ],
        schedules=[nightly_schedule, *(s for d in domains for s in d.schedules)],
        sensors=[consolidation_alerts, *(s for d in domains for s in d.sensors)],
        resources=shared,
    )


defs = build_definitions()
