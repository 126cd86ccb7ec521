"""Seed 001 §4–6: topics, watchers, the activation gate and the context compiler (no Dagster here)."""

from memory_pipeline.context.compiler import Compiled, ContextError, Knowledge, Turn, compile_context, read_history
from memory_pipeline.context.gate import Gate, GateDecision, anthropic_ask
from memory_pipeline.context.topics import Topic, TopicError, load_topics

__all__ = [
    "Compiled",
    "ContextError",
    "Gate",
    "GateDecision",
    "Knowledge",
    "Topic",
    "TopicError",
    "Turn",
    "anthropic_ask",
    "compile_context",
    "load_topics",
    "read_history",
]
