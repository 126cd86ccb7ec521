"""`memory-pipeline mcp`: the MCP server (official `mcp` SDK, MCPServer) exposing the tools `search`, `context`,
`flush`, `remember` and `forget` over stdio or streamable HTTP on 127.0.0.1. `search` and `context` are
read-only apart from usage events, which go to the spool in the background, and the gate log `context` appends
to; `flush` writes a transcript and rebuilds that day's journal (and MEMORY.md), committed to the workspace's
git; `remember` and `forget` are memory_pipeline.mcp.write_tools. Resources, all read-only: `memory://MEMORY.md`,
`memory://journal/{day}`, `memory://identity/{name}`. No prompts, and none advertised.

Arguments are checked strictly: an argument a tool does not take is refused with the list of those it does, and
a value of the wrong JSON type (`k: true`, `k: "3"`) is refused, not converted; the refusal is one line naming
the argument and what is allowed (`memory_pipeline.mcp.arguments`). A tool's error names workspace files by
their path in the workspace, never the server's absolute path. Malformed protocol params (`"arguments": "TIA"`)
get a one-line -32602 naming them, and an HTTP body that is not one JSON-RPC message (a batch) a one-line
JSON-RPC error (`memory_pipeline.mcp.frames`).

Every tool is async and runs its blocking work on a worker thread (`anyio.to_thread.run_sync`), so a slow call
(a large history, a slow disk) never holds up the calls that come after it; over stdio every line gets an
answer, a JSON-RPC error for one that is not a message (`memory_pipeline.mcp.stdio`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, InputRequiredResult, Tool, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory_pipeline.context.timeframe import parse_as_of
from memory_pipeline.mcp.arguments import argument_error, params_error, titled
from memory_pipeline.mcp.order import writes_in_order
from memory_pipeline.search.engine import SearchInputError, search
from memory_pipeline.search.index import Encode
from memory_pipeline.search.usage_spool import append_later
from memory_pipeline.settings import package_version

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from memory_pipeline.context.gate import Gate
    from memory_pipeline.search.hits import Hits

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
    superseded_by: str = Field(default="", description="a later memory states another value of this fact: its id "
                                                       "(empty while this value holds)")
    valid_until: str = Field(default="", description="when this value stopped holding (ISO), if it did")
    sources: list[SearchHit] = Field(default_factory=list, description="with_sources: the abstraction's sources")


class SearchResponse(BaseModel):
    hits: list[SearchHit]
    notice: str = Field(
        description="'nothing relevant', or what happened to the search index (built or updated now, or why a "
        "keyword scan answered); empty otherwise"
    )
    mode: str = Field(description="'index', or 'fallback' (plain keyword scan while the index is rebuilt)")
    match: str = Field(default="confident", description="'confident': the hits answer closely; 'weak': nothing "
                       "stored matches this closely, the one hit is only the nearest (the notice says so); "
                       "'none': nothing stored matches")


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
        superseded_by=h.superseded_by,
        valid_until=h.valid_until,
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
    model_config = ConfigDict(strict=True, extra="forbid")

    role: Literal["user", "assistant", "agent", "system", "tool"]
    content: str
    tool: str = ""


class FlushResponse(BaseModel):
    transcript: str = Field(description="workspace-relative path of the transcript the turns became")
    written: bool = Field(description="false when the same turns were flushed before (nothing written)")
    journal: str = Field(default="", description="the day's journal, rebuilt from the transcripts")
    note: str = ""


class MemoryServer(MCPServer):
    """MCPServer whose tools take their arguments strictly (no unknown names, no type coercion) and refuse them
    in one line naming the argument and what is allowed, whose writes apply in the order each connection sent them
    (`memory_pipeline.mcp.order`), whose tool errors name workspace files relative to the workspace, and whose
    tool schemas are titled for people (`search arguments`, `search result`) rather than after Python names.
    `workspace`: the workspace the tools read (None: MEMORY_PIPELINE_HOME at call time)."""

    def __init__(self, *args: Any, workspace: Path | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.workspace = workspace
        self._lowlevel_server.middleware.append(_params_in_words)
        self._lowlevel_server.middleware.append(writes_in_order)  # one connection's writes in the order sent

    def add_tool(self, fn: Callable[..., Any], name: str | None = None, *args: Any, **kwargs: Any) -> None:
        super().add_tool(fn, name, *args, **kwargs)
        tool = self._tool_manager.get_tool(name or fn.__name__)
        if tool is not None:
            strict_arguments(tool)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            tool = self._tool_manager.get_tool(name)
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or tool is None:
                raise
            if isinstance(cause, ValidationError):  # `from cause`: the SDK still logs argument names only
                raise ToolError(argument_error(name, tool.parameters, cause, arguments)) from cause
            if type(cause) is ToolError:  # a tool's own one-line refusal: "search: unknown kind 'x' (known: …)"
                text = str(cause) if str(cause).startswith(f"{name}: ") else f"{name}: {cause}"
                raise ToolError(workspace_relative(text, self._home())) from cause
            raise

    def _home(self) -> Path:
        from memory_pipeline.settings import workspace_home

        return Path(self.workspace) if self.workspace else workspace_home()

    def streamable_http_app(self, *args: Any, **kwargs: Any) -> Starlette:
        """The SDK's app, behind `CheckedFrames`: a body that is not one JSON-RPC message is answered in one
        line (the SDK's own answer to a batch is pydantic's multi-line dump)."""
        from memory_pipeline.mcp.frames import CheckedFrames

        app = super().streamable_http_app(*args, **kwargs)
        app.add_middleware(CheckedFrames)
        return app

    async def list_tools(self) -> list[Tool]:
        return [
            t.model_copy(update={"input_schema": titled(t.input_schema, f"{t.name} arguments"),
                                 "output_schema": titled(t.output_schema, f"{t.name} result")})  # fmt: skip
            for t in await super().list_tools()
        ]


def strict_arguments(tool: Any) -> None:
    """`tool`'s argument model made strict (a wrong JSON type is refused, not converted: `k: "3"`, `k: true`)
    and closed (an argument it does not take is refused), and its schema regenerated from it, so the schema a
    client reads says so (`additionalProperties: false`)."""
    base = tool.fn_metadata.arg_model
    config = ConfigDict(strict=True, extra="forbid")
    model: type[BaseModel] = type(base.__name__, (base,), {"__module__": base.__module__, "model_config": config})
    tool.fn_metadata.arg_model = model
    tool.parameters = model.model_json_schema(by_alias=True)


async def _params_in_words(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Params the protocol rejects (`tools/call` with `"arguments": "TIA"`) answered with -32602 and one line
    naming them; the SDK's own answer is "Invalid request parameters" with empty data."""
    try:
        return await call_next(ctx)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"][1:] or e["loc"]) for e in exc.errors()})
        raise MCPError(INVALID_PARAMS, params_error(ctx.method, exc), {"fields": fields}) from None


def workspace_relative(text: str, home: Path) -> str:
    """`text` with the workspace's absolute path taken out of the paths it names (`/srv/ws/knowledge/identity`
    → `knowledge/identity`): the client is told where a file is in the workspace, not on the server's disk."""
    import re

    for root in dict.fromkeys((str(home).rstrip("/"), str(home.resolve()).rstrip("/"))):
        if root:
            text = re.sub(re.escape(root) + r"/+", "", text)
            text = re.sub(re.escape(root) + r"(?![\w.-])", "the workspace", text)
    return text


KIND_HELP = (
    "only this kind: one of the kinds the workspace holds (`memory` is any stored memory but a summary); an "
    "unknown one is refused with the known list"
)
DEFAULT_BUDGET = 8192
AS_OF_HELP = (
    "ISO date or time: answer with what was known and held then (later memories left out; a value replaced since "
    "reads as it was); a day reads as it ended. Left out: now"
)
CATEGORY_HELP = "only this category: one of the workspace's categories; an unknown one is refused with the known list"


def build_server(
    home: Path | None = None, embedder: tuple[Encode, str] | None = None, record_usage: bool = True,
    import_at: int = 1,
) -> MCPServer:
    """The server object; `home`/`embedder` default to MEMORY_PIPELINE_HOME and the configured embedder.
    `import_at`: `remember` imports the spooled writes once this many wait (1: at once)."""
    server = MemoryServer("memory-pipeline", instructions=INSTRUCTIONS, version=package_version(), workspace=home)
    # No prompts to offer: the SDK registers prompts/list regardless, which advertises an empty capability.
    for method in ("prompts/list", "prompts/get"):
        server._lowlevel_server._request_handlers.pop(method, None)
    add_resources(server, home)
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
        category: Annotated[str | None, Field(description=CATEGORY_HELP)] = None,
        kind: Annotated[str | None, Field(description=KIND_HELP)] = None,
        tier: Annotated[
            Literal["active", "archived", "knowledge", "working", "episodic", "semantic", "archive", "raw"] | None,
            Field(description="only this tier"),
        ] = None,
        since: Annotated[str | None, Field(description="ISO date: on or after")] = None,
        until: Annotated[str | None, Field(description="ISO date: on or before")] = None,
        with_sources: Annotated[bool, Field(description="expand abstractions to their sources")] = False,
        as_of: Annotated[str | None, Field(description=AS_OF_HELP)] = None,
    ) -> SearchResponse:
        run = partial(search, query, k, home=home, category=category, kind=kind, tier=tier, since=since,
                      until=until, with_sources=with_sources, embedder=embedder, as_of=as_of)
        return await anyio.to_thread.run_sync(_search_work, run, home, record_usage, query)

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
        # plain typed schemas (an integer with a default, no `anyOf [integer, null]`): a client that types its
        # arguments from the schema (the MCP Inspector's CLI) then sends a number, not the string "1500"
        budget: Annotated[int, Field(description="token budget, as the CLI's --budget", ge=1,
                                     le=1_000_000)] = DEFAULT_BUDGET,  # fmt: skip
        budget_tokens: Annotated[int, Field(description="the same as budget (its older name); 0: not given", ge=0,
                                            le=1_000_000)] = 0,  # fmt: skip
        history: Annotated[list[HistoryTurn], Field(description="session history, oldest first")] = [],  # noqa: B006
        agent_output: Annotated[str, Field(description="the agent's last reply, for output watchers")] = "",
        main_session: Annotated[bool, Field(description="include MEMORY.md (main session only)")] = True,
        as_of: Annotated[str | None, Field(description=AS_OF_HELP)] = None,
    ) -> ContextResponse:
        if budget_tokens and budget != DEFAULT_BUDGET and budget != budget_tokens:
            raise ToolError(f"'budget' ({budget}) and 'budget_tokens' ({budget_tokens}) are the same argument: "
                            "give one of them")  # fmt: skip
        tokens = budget_tokens or budget
        try:
            then = parse_as_of(as_of)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        work = partial(_context_work, home, embedder, gate, record_usage, message, tokens, history,
                       agent_output, main_session, then)
        return await anyio.to_thread.run_sync(work)

    @server.tool(
        name="flush",
        description="Call before your context window is compacted: the turns about to drop out are kept as a "
        "transcript and their durable decisions, lessons and events go to today's journal and MEMORY.md. "
        "It answers when that day's journal is rebuilt: expect 10 to 20 seconds, up to a minute on a busy "
        "machine (it runs the journal pipeline for the day). Calling it again with the same turns writes nothing "
        "and answers at once.",
        # the pre-compaction flush is seed 001 §6.4
        annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True, open_world_hint=False),
    )
    async def flush(
        turns: Annotated[
            list[HistoryTurn], Field(description="the turns about to drop out, oldest first", min_length=1)
        ],
        project: Annotated[
            str | None, Field(description="the project of the session (its journal entries are filed under it)")
        ] = None,
    ) -> FlushResponse:
        return await anyio.to_thread.run_sync(_flush_work, home, turns, project)

    from memory_pipeline.mcp.write_tools import register_write_tools

    register_write_tools(server, home, import_at)  # `remember` and `forget`
    return server


def _search_work(run: Callable[[], Hits], home: Path | None, record_usage: bool, query: str = "") -> SearchResponse:
    from memory_pipeline.search.named import checked

    try:
        hits = checked(query, run())  # a question naming what no hit names is not answered confidently
    except SearchInputError as exc:
        raise ToolError(str(exc)) from None
    if record_usage:
        from memory_pipeline.settings import workspace_home

        append_later(Path(home) if home else workspace_home(), [h.id for h in hits if h.source == "store"])
    match = getattr(hits, "match", "confident" if hits else "none")
    return SearchResponse(hits=[_convert(h) for h in hits], notice=hits.notice, mode=hits.mode, match=match)


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
    as_of: datetime | None = None,
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
            search=default_search(where, embedder, as_of=as_of),
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
        warnings=[workspace_relative(w, where) for w in [str(e) for e in errors] + out.warnings],
    )


def _flush_work(home: Path | None, turns: Sequence[HistoryTurn], project: str | None = None) -> FlushResponse:
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
        out = flush_session(where, parsed, project=(project or "").strip() or None)
    except GitLockError as exc:
        raise ToolError(str(exc)) from None
    if "error" in out:
        raise ToolError(str(out["error"]))
    return FlushResponse(transcript=str(out["transcript"]), written=bool(out["written"]),
                         journal=str(out.get("journal", "")), note=str(out.get("note", "")))  # fmt: skip


MARKDOWN = "text/markdown"


def add_resources(server: MCPServer, home: Path | None) -> None:
    """Read-only resources: MEMORY.md, a day's journal and the identity files, read from the workspace at read
    time (regular files only, as the context compiler reads them; a FIFO in their place is refused, never
    waited on). The identity files present at start are listed; the template reads any of them."""

    def where() -> Path:
        from memory_pipeline.settings import workspace_home

        return Path(home) if home else workspace_home()

    @server.resource("memory://MEMORY.md", name="MEMORY.md", title="Core memory (MEMORY.md)", mime_type=MARKDOWN,
                     description="knowledge/memory/MEMORY.md: the agent's curated long-term memory, rebuilt weekly "
                     "from the journals and by `flush`; meant for the main session only")  # fmt: skip
    def memory_md() -> str:
        return _read_resource(where(), "knowledge/memory/MEMORY.md")

    @server.resource("memory://journal/{day}", name="journal", title="Journal of one day", mime_type=MARKDOWN,
                     description="knowledge/journal/<day>.md for an ISO date (memory://journal/2026-10-03): that "
                     "day's decisions, lessons and events, built from its transcripts")  # fmt: skip
    def journal(day: str) -> str:
        from datetime import date

        try:
            when = date.fromisoformat(day) if len(day) == 10 else None
        except ValueError:
            when = None
        if when is None:
            raise ResourceNotFoundError(f"journal date {day!r} is not an ISO date (YYYY-MM-DD)")
        return _read_resource(where(), f"knowledge/journal/{when.isoformat()}.md")

    def identity(name: str) -> str:
        known = _identity_names(where())
        file = name if name.endswith(".md") else f"{name}.md"
        if file not in known:
            raise ResourceNotFoundError(f"no identity file {name!r} (known: {', '.join(known) or 'none'})")
        return _read_resource(where(), f"knowledge/identity/{file}")

    server.resource("memory://identity/{name}", name="identity", title="Identity file", mime_type=MARKDOWN,
                    description="knowledge/identity/<name>.md (memory://identity/SOUL.md): who the agent is and "
                    "whom it serves; always at the top of the compiled prompt")(identity)  # fmt: skip
    for name in _identity_names(where()):
        server.resource(f"memory://identity/{name}", name=name, title=f"Identity: {name}", mime_type=MARKDOWN,
                        description=f"knowledge/identity/{name}")(_reader(identity, name))  # fmt: skip


def _reader(read: Callable[[str], str], name: str) -> Callable[[], str]:
    def one() -> str:
        return read(name)

    return one


def _identity_names(home: Path) -> list[str]:
    folder = home / "knowledge" / "identity"
    return sorted(p.name for p in folder.glob("*.md")) if folder.is_dir() else []


def _read_resource(home: Path, rel: str) -> str:
    from memory_pipeline.context.files import NotRegularFile, read_regular_text

    try:
        return read_regular_text(home / rel, root=home)
    except FileNotFoundError:
        raise ResourceNotFoundError(f"{rel} does not exist in the workspace") from None
    except NotRegularFile as exc:
        raise ResourceError(f"{rel} {exc.problem}: not read") from None
    except OSError as exc:
        raise ResourceError(f"{rel} cannot be read: {exc.strerror or exc}") from None


def quiet_libraries() -> None:
    """Alembic's schema-check INFO lines (`Context impl SQLiteImpl.`, `Will assume non-transactional DDL.`) and
    Dagster's run logs, both from `flush` opening the Dagster instance, are not the server's to print: WARNING
    and above only. Set after the SDK configures logging, which happens when the server is built."""
    import logging

    for name in ("alembic", "dagster"):
        logging.getLogger(name).setLevel(logging.WARNING)


def warm_server(home: Path | None = None, embedder: tuple[Encode, str] | None = None) -> str:
    """Load what the first call would (the embedder, the index, the topics and the context path) before the server
    accepts it (the first call costs what a later one does). One line for the server's log."""
    import sys
    import time

    from memory_pipeline.search.warm import warm
    from memory_pipeline.settings import workspace_home

    where = Path(home) if home else workspace_home()
    t0 = time.perf_counter()
    done = warm(where, embedder)
    context = _warm_context(where, embedder)
    line = (f"memory-pipeline mcp: warm in {time.perf_counter() - t0:.2f} s (model {done.model or '-'}, index "
            f"{done.version or '-'}{'; ' + done.problem if done.problem else ''}{'; ' + context if context else ''})")
    print(line, file=sys.stderr, flush=True)
    return line


def _warm_context(home: Path, embedder: tuple[Encode, str] | None) -> str:
    """One offline compile (no gate LLM call, nothing logged or recorded): topics, watchers, the search adapter."""
    try:
        from memory_pipeline.context.compiler import compile_context
        from memory_pipeline.context.gate import Gate
        from memory_pipeline.context.search_adapter import default_search
        from memory_pipeline.context.topics import load_topics

        topics, _errors = load_topics(home)
        compile_context(home, "warm up", topics=topics, search=default_search(home, embedder), gate=Gate())
    except Exception as exc:  # noqa: BLE001 - the first `context` call reports it
        return f"context: {type(exc).__name__}"
    return ""


def serve(transport: str, host: str = "127.0.0.1", port: int = 8765) -> int:
    server = build_server()
    quiet_libraries()
    warm_server()  # before the transport reads its first request
    if transport == "stdio":
        from memory_pipeline.mcp.stdio import run_stdio

        anyio.run(run_stdio, server)
    else:
        from memory_pipeline.mcp.http import serve_http

        serve_http(server, host, port)  # the SDK's app, its request headers and body read within bounds
    return 0
