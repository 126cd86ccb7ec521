"""One call for agents (CLI, Python, MCP): load the workspace's topics, gate with the `llm` resource when
it has a key, compile, log the gate's decisions and report the included memories as usage."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from memory_pipeline.context.compiler import DEFAULT_BUDGET, Compiled, Search, Turn, compile_context
from memory_pipeline.context.gate import Gate, anthropic_ask, append_log
from memory_pipeline.context.read_path import ReadPath
from memory_pipeline.context.topics import TopicError, load_topics
from memory_pipeline.store.file_usage import record_files

GATE_LOG = Path("reports") / "gate-log.jsonl"
RecordUsage = Callable[[Sequence[str]], None]


def make_gate(llm: Any = None, http_client: Any = None) -> Gate:
    """The LLM gate when `llm` (an LLMResource) has a key, else the offline gate."""
    if llm is not None and llm.uses_anthropic():
        return Gate(ask=anthropic_ask(llm.make_client(http_client), llm.model), model=llm.model)
    return Gate()


def gate_from_env() -> Gate:
    """The gate the CLI and the MCP server use: Claude when ANTHROPIC_API_KEY is set (and the mode allows it)."""
    import os

    key, mode = os.environ.get("ANTHROPIC_API_KEY") or None, os.environ.get("MEMORY_PIPELINE_LLM", "auto")
    if mode == "offline" or (mode == "auto" and not key):
        return Gate()  # the offline gate: no LLM resource to build (nor Dagster to import) on the read path
    from memory_pipeline.resources.llm import LLMResource

    return make_gate(LLMResource(api_key=key, mode=mode))


def compile_for_agent(
    home: Path,
    message: str,
    *,
    session_history: Sequence[Turn] = (),
    budget_tokens: int = DEFAULT_BUDGET,
    main_session: bool = True,
    search: Search | None = None,
    gate: Gate | None = None,
    agent_output: str = "",
    record_usage: RecordUsage | None = None,
    read: ReadPath | None = None,
    today: date | None = None,
) -> tuple[Compiled, list[TopicError]]:
    """Compile `message`'s context; returns it and the topics that were rejected (by file and field)."""
    topics, errors = load_topics(home)
    out = compile_context(
        home,
        message,
        topics=topics,
        session_history=session_history,
        budget_tokens=budget_tokens,
        main_session=main_session,
        search=search,
        gate=gate or Gate(),
        agent_output=agent_output,
        read=read,
        today=today,
    )
    append_log(home / GATE_LOG, out.gate)
    if record_usage is not None:
        if out.memory_ids:
            record_usage(out.memory_ids)
        record_files(home, [e.path for e in out.manifest if e.included and e.path])  # prune-by-decay references
    return out, errors
