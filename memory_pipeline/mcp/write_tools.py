"""`remember` and `forget` as MCP tools, registered on a server by `register_write_tools` (the single-agent
server, and through it every agent's server in the fleet gateway). Blocking work runs on a worker thread."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from memory_pipeline.search import index_holds
from memory_pipeline.store.forgotten import WriteError
from memory_pipeline.store.records import MAX_ID_CHARS, MAX_IMPORTANCE, MAX_LABEL_CHARS, MAX_LABELS
from memory_pipeline.store.remember import Remembered, forget, remember
from memory_pipeline.store.spool import MAX_TEXT_CHARS, build_record


class RememberResponse(BaseModel):
    id: str = Field(description="the memory's id: yours, or one derived from the text")
    created: bool = Field(description="false when this id already held this text (nothing written, unless it "
                                      "had been forgotten or superseded: then it is current again)")
    revived: bool = Field(default=False, description="true: this memory had been forgotten; remembering it again "
                                                     "made it active again")
    stored: bool = Field(description="true: in the store; false: kept durably until the store is free or "
                                     "the next batch of writes is imported (searchable already)")
    if_taken: str = Field(default="", description="set when the store could not be read to check your id (another "
                          "process held it): the id this text is stored under if the store holds your id with other "
                          "text by the time it is free (both are kept); empty otherwise")  # fmt: skip
    note: str = ""


class ForgetResponse(BaseModel):
    id: str
    reason: str
    stored: bool = Field(description="true: archived in the store; false: kept durably until the store is free "
                                     "(hidden already)")
    note: str = ""


def _home(home: Path | None) -> Path:
    if home is not None:
        return Path(home)
    from memory_pipeline.settings import workspace_home

    return workspace_home()


def _remember(home: Path | None, import_at: int, text: str, category: str | None, importance: float | None,
              tags: list[str] | None, memory_id: str | None) -> RememberResponse:  # fmt: skip
    from memory_pipeline.faults import hold_point

    hold_point("mcp_write")  # fault injection for tests: keeps this write in flight (a no-op unless set)
    try:
        done = remember(_home(home), build_record(text, category, importance, tags, memory_id), import_at)
    except WriteError as exc:
        raise ToolError(str(exc)) from None
    return RememberResponse(id=done.id, created=done.created, revived=done.revived, stored=done.stored,
                            if_taken=done.if_taken, note=remember_note(done, import_at))  # fmt: skip


def remember_note(done: Remembered, import_at: int) -> str:
    """What the answer's flags mean, in words; a write left in the spool says what holds the store (never a
    night it cannot know of) or that it waits for the next batch of writes."""
    waiting = (f"stored once the store is free (busy: {done.busy})" if done.busy or import_at == 1 else
               "stored with the next batch of writes")  # fmt: skip
    if done.revived:
        return "it had been forgotten: active again" + ("" if done.stored else f"; kept durably and searchable "
                                                         f"already, {waiting}")  # fmt: skip
    if done.restated:
        note = "stated again: this value holds again, the one that had replaced it is marked superseded"
        return note if done.stored else f"{note}; kept durably, {waiting}"
    if not done.created:
        return "already remembered with this text: nothing written"
    if done.stored:
        return ""
    note = f"kept durably and searchable already; {waiting}"
    if done.if_taken:
        note += (f"; your id could not be checked against the store: if it holds {done.id!r} with other text by "
                 f"then, this text is stored as {done.if_taken!r} (both kept)")  # fmt: skip
    return note


def _forget(home: Path | None, memory_id: str, reason: str) -> ForgetResponse:
    try:
        where = _home(home)
        done = forget(where, memory_id, reason, known=lambda mid: index_holds(where, mid))
    except WriteError as exc:
        raise ToolError(str(exc)) from None
    note = "" if done.stored else (f"the store is busy ({done.busy}): kept durably and hidden from search now; "
                                   "applied when the store is free")
    return ForgetResponse(id=done.id, reason=done.reason, stored=done.stored, note=note)


def register_write_tools(server: MCPServer, home: Path | None = None, import_at: int = 1) -> None:
    @server.tool(
        name="remember",
        description="Store a memory now: searchable at once, consolidated by the next night. Give your own `id` "
        "to make retries safe (the same id and text again writes nothing; the same id with other text is an "
        "error, or, while the store cannot be read, kept under the id `if_taken` names). Remembering a forgotten "
        "memory again (same id, or same text without an id) makes it active again. Text up to "
        f"{MAX_TEXT_CHARS:,} characters.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                    open_world_hint=False),  # fmt: skip
    )
    async def remember_tool(
        text: Annotated[str, Field(description="what to remember, in words")],
        category: Annotated[str | None, Field(description="one category, e.g. 'travel'")] = None,
        importance: Annotated[float, Field(description=f"from 0 to {MAX_IMPORTANCE:g}; 2.5 and above is never "
                                                      "consolidated")] = 1.0,  # a plain number schema, as budget's
        tags: Annotated[list[str] | None, Field(description=f"free-form tags, at most {MAX_LABELS} of up to "
                                                            f"{MAX_LABEL_CHARS} printable characters")] = None,
        id: Annotated[str | None, Field(description=f"your id for this memory (idempotency key): up to "
                                                    f"{MAX_ID_CHARS} printable characters")] = None,  # noqa: A002
    ) -> RememberResponse:
        return await anyio.to_thread.run_sync(_remember, home, import_at, text, category, importance, tags, id)

    @server.tool(
        name="forget",
        description="Forget a memory by id: it is archived with your reason and no longer found by search or "
        "put in context. Nothing is deleted; an operator can restore it, and remembering it again makes it active "
        "again. While a night holds the store the forget is kept durably and hidden from search at once, and "
        "applied when the store is free.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                    open_world_hint=False),  # fmt: skip
    )
    async def forget_tool(
        id: Annotated[str, Field(description="the memory's id, as search returned it")],  # noqa: A002
        reason: Annotated[str, Field(description="why it should be forgotten (kept with it)")],
    ) -> ForgetResponse:
        return await anyio.to_thread.run_sync(_forget, home, id, reason)
