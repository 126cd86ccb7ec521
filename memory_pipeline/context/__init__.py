"""Seed 001 §4–6: topics, watchers, the activation gate and the context compiler (no Dagster here).

The names below load on first use (PEP 562), so importing one submodule does not load the compiler."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_pipeline.context.compiler import Compiled, ContextError, Knowledge, Turn, compile_context, read_history
    from memory_pipeline.context.gate import Gate, GateDecision, anthropic_ask
    from memory_pipeline.context.search_adapter import default_search
    from memory_pipeline.context.service import compile_for_agent
    from memory_pipeline.context.topics import Topic, TopicError, load_topics

_WHERE = {
    "Compiled": "compiler", "ContextError": "compiler", "Knowledge": "compiler", "Turn": "compiler",
    "compile_context": "compiler", "read_history": "compiler", "Gate": "gate", "GateDecision": "gate",
    "anthropic_ask": "gate", "Topic": "topics", "TopicError": "topics", "load_topics": "topics",
    "compile_for_agent": "service", "default_search": "search_adapter",
}  # fmt: skip
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
    "compile_for_agent",
    "default_search",
    "load_topics",
    "read_history",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
