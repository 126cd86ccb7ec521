"""`memory-pipeline mcp`: the MCP server (official `mcp` SDK, MCPServer) exposing `search` over stdio or
streamable HTTP on 127.0.0.1. Read-only apart from usage events, which go to the spool in the background."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from memory_pipeline.search.engine import Encode, SearchInputError, search
from memory_pipeline.search.usage_spool import append_later

INSTRUCTIONS = (
    "Long-term memory of this agent. Call `search` with a natural-language question to get the stored "
    "memories, journals, Cores/Spheres and transcripts that answer it; an empty list means nothing relevant "
    "is stored — do not guess."
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
    notice: str = Field(description="'nothing relevant', or that the index is being rebuilt; empty otherwise")
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


def build_server(
    home: Path | None = None, embedder: tuple[Encode, str] | None = None, record_usage: bool = True
) -> MCPServer:
    """The server object; `home`/`embedder` default to MEMORY_PIPELINE_HOME and the configured embedder."""
    server: MCPServer = MCPServer("memory-pipeline", instructions=INSTRUCTIONS)

    @server.tool(
        name="search",
        description="Hybrid BM25 + vector search over everything the agent remembers (memories, journals, "
        "MEMORY.md, Cores, Spheres, transcripts). Returns no hits when nothing relevant is stored.",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    def search_memory(
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
        try:
            hits = search(
                query,
                k,
                home=home,
                category=category,
                kind=kind,
                tier=tier,
                since=since,
                until=until,
                with_sources=with_sources,
                embedder=embedder,
            )
        except SearchInputError as exc:
            raise ToolError(str(exc)) from None
        if record_usage:
            from memory_pipeline.settings import workspace_home

            append_later(Path(home) if home else workspace_home(), [h.id for h in hits if h.source == "store"])
        return SearchResponse(hits=[_convert(h) for h in hits], notice=hits.notice, mode=hits.mode)

    return server


def serve(transport: str, host: str = "127.0.0.1", port: int = 8765) -> int:
    server = build_server()
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)
    return 0
