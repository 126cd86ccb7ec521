"""`memory-pipeline mcp`: the MCP server (official `mcp` SDK, MCPServer) exposing `search`, `context` and
`flush` over stdio or streamable HTTP on 127.0.0.1. `search` and `context` are read-only apart from usage
events, which go to the spool in the background, and the gate log `context` appends to; `flush` writes a
transcript and rebuilds that day's journal.

Every tool is async and runs its blocking work on a worker thread (`anyio.to_thread.run_sync`), so a slow call
(a large history, a slow disk) never holds up the calls that come after it; over stdio every line gets an
answer, a JSON-RPC error for one that is not a message (`memory_pipeline.mcp_stdio`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from memory_pipeline.search.engine import SearchInputError, search
from memory_pipeline.search.index import Encode
from memory_pipeline.search.usage_spool import append_later

if TYPE_CHECKING:
    from memory_pipeline.context.gate import Gate
    from memory_pipeline.search.engine import Hits

INSTRUCTIONS = (
    "Long-term memory of this agent. Call `search` with a natural-language question to get the stored "
    "memories, journals, Cores/Spheres and transcripts that answer it; an empty list means nothing relevant "
    "is stored — do not guess. Call `context` with the message you just received to get the compiled prompt "
    "(identity, core memory, journals, woken topics, ranked knowledge) within a token budget. Call `flush` with "
    "the turns about to drop out of your context window before it is compacted."
)


class SearchHit(BaseModel):
    id: str = Field(description="memory id, or workspace-relative path of a file")
    kind: str
    snippet: str
    score: float
    parts: dict[str, float] = Field(description="score components: bm25, vector, relevance, fused, recency, …")
    date: str
    tier: str
    categories: list[str]
    sources: list[SearchHit] = Field(default_factory=list, description="with_sources: the abstraction's sources")


class SearchResponse(BaseModel):
    hits: list[SearchHit]
    notice: str = Field(
        description="'nothing relevant', or what happened to the search index (built or updated now, or why a "
        "keyword scan answered); empty otherwise"
    )
    mode: str = Field(description="'index', or 'fallback' (plain keyword scan while the index is rebuilt)")


def _convert(h: Any) -> SearchHit:
    return SearchHit(
        id=h.id,
        kind=h.kind,
        snippet=h.snippet,
        score=h.score,
        parts=h.parts,
        date=h.date,
        tier=h.tier,
        categories=h.categories,
        sources=[_convert(s) for s in h.sources],
    )


class ContextSection(BaseModel):
    slot: str = Field(description="P0 identity … P4 history")
    label: str
    tokens: int
    included: bool
    reason: str = Field(description="why it was included or left out")
    path: str | None = None
    memory_id: str | None = None
    score: float | None = None


class ContextResponse(BaseModel):
    prompt: str
    tokens: int = Field(description="tokens used (3.5 characters per token); never above the budget")
    budget: int
    manifest: list[ContextSection]
    corrections: list[str] = Field(description="output watchers' correction hints for the agent's last reply")
    warnings: list[str] = Field(
        description="one line each: topic files that were skipped (by file and field), topic patterns that ran "
        "past their time bound this turn, and files skipped because they are not regular files"
    )


class HistoryTurn(BaseModel):
    role: Literal["user", "assistant", "agent", "system", "tool"]
    content: str
    tool: str = ""


class FlushResponse(BaseModel):
    transcript: str = Field(description="workspace-relative path of the transcript the turns became")
    written: bool = Field(description="false when the same turns were flushed before (nothing written)")
    journal: str = Field(default="", description="the day's journal, rebuilt from the transcripts")
    note: str = ""


def build_server(
    home: Path | None = None, embedder: tuple[Encode, str] | None = None, record_usage: bool = True
) -> MCPServer:
    """The server object; `home`/`embedder` default to MEMORY_PIPELINE_HOME and the configured embedder."""
    server: MCPServer = MCPServer("memory-pipeline", instructions=INSTRUCTIONS)
    from memory_pipeline.context.service import gate_from_env

    gate = gate_from_env()  # one per server: its cache spares a second LLM call for the same message and topic

    @server.tool(
        name="search",
        description="Hybrid BM25 + vector search over everything the agent remembers (memories, journals, "
        "MEMORY.md, Cores, Spheres, transcripts). Returns no hits when nothing relevant is stored.",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    async def search_memory(
        query: Annotated[str, Field(description="what to look for, in words", min_length=1, max_length=4096)],
        k: Annotated[int, Field(description="number of hits", ge=1, le=1000)] = 10,
        category: Annotated[str | None, Field(description="only this category")] = None,
        kind: Annotated[str | None, Field(description="memory, summary, journal, core, sphere, transcript…")] = None,
        tier: Annotated[
            Literal["active", "archived", "knowledge", "working", "episodic", "semantic", "archive", "raw"] | None,
            Field(description="only this tier"),
        ] = None,
        since: Annotated[str | None, Field(description="ISO date: on or after")] = None,
        until: Annotated[str | None, Field(description="ISO date: on or before")] = None,
        with_sources: Annotated[bool, Field(description="expand abstractions to their sources")] = False,
    ) -> SearchResponse:
        run = partial(search, query, k, home=home, category=category, kind=kind, tier=tier, since=since,
                      until=until, with_sources=with_sources, embedder=embedder)
        return await anyio.to_thread.run_sync(_search_work, run, home, record_usage)

    @server.tool(
        name="context",
        # The compiled prompt is seed 001 §6.
        description="The densest prompt for this message within a token budget: identity, "
        "MEMORY.md, today's journals, active topics, ranked knowledge and as much history as fits, with a "
        "manifest saying what went in and why.",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    async def compile_prompt(
        message: Annotated[str, Field(description="the message just received", min_length=1, max_length=65536)],
        budget_tokens: Annotated[int, Field(description="token budget", ge=1, le=1_000_000)] = 8192,
        history: Annotated[list[HistoryTurn], Field(description="session history, oldest first")] = [],  # noqa: B006
        agent_output: Annotated[str, Field(description="the agent's last reply, for output watchers")] = "",
        main_session: Annotated[bool, Field(description="include MEMORY.md (main session only)")] = True,
    ) -> ContextResponse:
        work = partial(_context_work, home, embedder, gate, record_usage, message, budget_tokens, history,
                       agent_output, main_session)
        return await anyio.to_thread.run_sync(work)

    @server.tool(
        name="flush",
        description="Call before your context window is compacted: the turns about to drop out are kept as a "
        "transcript and their durable decisions, lessons and events go to today's journal and MEMORY.md. "
        "Calling it again with the same turns writes nothing.",  # the pre-compaction flush is seed 001 §6.4
        annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True, open_world_hint=False),
    )
    async def flush(
        turns: Annotated[
            list[HistoryTurn], Field(description="the turns about to drop out, oldest first", min_length=1)
        ],
    ) -> FlushResponse:
        return await anyio.to_thread.run_sync(_flush_work, home, turns)

    from memory_pipeline.writes.tools import register_write_tools

    register_write_tools(server, home)  # `remember` and `forget`
    return server


def _search_work(run: Callable[[], Hits], home: Path | None, record_usage: bool) -> SearchResponse:
    try:
        hits = run()
    except SearchInputError as exc:
        raise ToolError(str(exc)) from None
    if record_usage:
        from memory_pipeline.settings import workspace_home

        append_later(Path(home) if home else workspace_home(), [h.id for h in hits if h.source == "store"])
    return SearchResponse(hits=[_convert(h) for h in hits], notice=hits.notice, mode=hits.mode)


def _context_work(
    home: Path | None,
    embedder: tuple[Encode, str] | None,
    gate: Gate,
    record_usage: bool,
    message: str,
    budget_tokens: int,
    history: Sequence[HistoryTurn],
    agent_output: str,
    main_session: bool,
) -> ContextResponse:
    from memory_pipeline.context import ContextError, Turn
    from memory_pipeline.context.search_adapter import default_search, usage_recorder
    from memory_pipeline.context.service import compile_for_agent
    from memory_pipeline.faults import hold_point
    from memory_pipeline.settings import workspace_home

    hold_point("mcp_context")  # fault injection for tests: keeps this call in flight (a no-op unless set)
    where = Path(home) if home else workspace_home()
    try:
        out, errors = compile_for_agent(
            where,
            message,
            session_history=[Turn(t.role, t.content, t.tool) for t in history],
            budget_tokens=budget_tokens,
            main_session=main_session,
            search=default_search(where, embedder),
            gate=gate,
            agent_output=agent_output,
            record_usage=usage_recorder(where, background=True) if record_usage else None,
        )
    except ContextError as exc:
        raise ToolError(str(exc)) from None
    return ContextResponse(
        prompt=out.prompt,
        tokens=out.tokens,
        budget=out.budget,
        manifest=[ContextSection(**vars(e)) for e in out.manifest],
        corrections=[f"{topic}: {hint}" for topic, hint in out.corrections],
        warnings=[str(e) for e in errors] + out.warnings,
    )


def _flush_work(home: Path | None, turns: Sequence[HistoryTurn]) -> FlushResponse:
    from memory_pipeline.journals.cli import flush_session
    from memory_pipeline.journals.flush import FlushInputError, parse_turns
    from memory_pipeline.settings import workspace_home

    where = Path(home) if home else workspace_home()
    roles = {"agent": "assistant"}
    try:
        parsed = parse_turns([{"role": roles.get(t.role, t.role), "content": t.content} for t in turns])
    except FlushInputError as exc:
        raise ToolError(str(exc)) from None
    from memory_pipeline.journals.gitlog import GitLockError

    try:
        out = flush_session(where, parsed)
    except GitLockError as exc:
        raise ToolError(str(exc)) from None
    if "error" in out:
        raise ToolError(str(out["error"]))
    return FlushResponse(transcript=str(out["transcript"]), written=bool(out["written"]),
                         journal=str(out.get("journal", "")), note=str(out.get("note", "")))  # fmt: skip


def serve(transport: str, host: str = "127.0.0.1", port: int = 8765) -> int:
    server = build_server()
    if transport == "stdio":
        from memory_pipeline.mcp_stdio import run_stdio

        anyio.run(run_stdio, server)
    else:
        server.run("streamable-http", host=host, port=port)
    return 0
