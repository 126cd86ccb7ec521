"""Shared infrastructure as Dagster resources: the store, the embedder, the LLM and the engine settings."""

from memory_pipeline.resources.embedder import EmbedderResource
from memory_pipeline.resources.engine import EngineConfig
from memory_pipeline.resources.llm import LLMResource
from memory_pipeline.resources.store import MemoryStoreResource

__all__ = ["EmbedderResource", "EngineConfig", "LLMResource", "MemoryStoreResource"]
