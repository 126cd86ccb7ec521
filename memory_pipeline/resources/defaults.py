"""The shared resources as the environment configures them (workspace, embedder model, LLM key, seed constants)."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from memory_pipeline.resources.embedder import MINILM, EmbedderResource
from memory_pipeline.resources.engine import EngineConfig
from memory_pipeline.resources.llm import LLMResource
from memory_pipeline.resources.notifier import NotifierResource
from memory_pipeline.resources.store import MemoryStoreResource
from memory_pipeline.settings import workspace_home


def default_resources(home: str | None = None, as_of: str = "") -> dict[str, dg.ConfigurableResource]:
    """`store`, `embedder`, `llm`, `engine`, `notifier` from the environment; `home` and `as_of` override it."""
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
