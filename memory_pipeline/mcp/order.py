"""One client's writes apply in the order it sent them. The SDK runs every request of a connection as its own
task, and each tool's work on a worker thread, so a client that sends `remember`, `forget`, `remember` without
waiting for the answers would see them applied in whatever order the threads get the store. Here each write
takes a ticket when its request is dispatched — in the order the connection delivered the requests: the SDK
starts their tasks in that order, and nothing before this middleware waits — and runs only once every earlier
write of the same connection has answered. Reads are not held back; other connections are not ordered against
this one (they never were: their writes race as separate clients do)."""

from __future__ import annotations

import weakref
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

WRITE_TOOLS = frozenset({"remember", "forget"})


class Turns:
    """Tickets in dispatch order; `ticket` N runs after N-1 has finished (or was cancelled before its turn)."""

    def __init__(self) -> None:
        self._next = 0
        self._serving = 0
        self._waiting: dict[int, anyio.Event] = {}
        self._abandoned: set[int] = set()

    def take(self) -> int:
        """Synchronous: called before the request's task first waits, so tickets follow dispatch order."""
        ticket, self._next = self._next, self._next + 1
        return ticket

    async def wait(self, ticket: int) -> None:
        while self._serving != ticket:
            await self._waiting.setdefault(ticket, anyio.Event()).wait()

    def done(self, ticket: int) -> None:
        if ticket != self._serving:  # cancelled while waiting: skipped when its turn comes
            self._abandoned.add(ticket)
            self._waiting.pop(ticket, None)
            return
        self._serving += 1
        while self._serving in self._abandoned:
            self._abandoned.discard(self._serving)
            self._serving += 1
        if (event := self._waiting.pop(self._serving, None)) is not None:
            event.set()


_TURNS: weakref.WeakKeyDictionary[Any, Turns] = weakref.WeakKeyDictionary()  # per connection, gone with it


def _is_write(ctx: ServerRequestContext[Any, Any]) -> bool:
    params = ctx.params
    return ctx.method == "tools/call" and isinstance(params, dict) and params.get("name") in WRITE_TOOLS


def _connection(ctx: ServerRequestContext[Any, Any]) -> Any:
    """The connection a request came on: the SDK builds a session object per request, around the connection's
    own (one per stdio server, one per HTTP session id)."""
    return getattr(ctx.session, "_connection", None) or ctx.session


async def writes_in_order(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: a write tool call waits for the connection's earlier writes (see the module)."""
    if not _is_write(ctx):
        return await call_next(ctx)
    client = _connection(ctx)
    turns = _TURNS.get(client)
    if turns is None:
        turns = _TURNS[client] = Turns()
    ticket = turns.take()
    try:
        await turns.wait(ticket)
        return await call_next(ctx)
    finally:
        turns.done(ticket)
