"""MCP over stdio where every line gets an answer: the SDK's stdio transport drops a line it cannot parse
(garbage, or a request whose JSON holds a lone UTF-16 surrogate such as `"\\ud800"`) without a reply, and
takes a request whose id is not one (`"id": null`) for a notification, so the client waits for its request
forever. Here each line is checked before the SDK sees it (memory_pipeline.mcp.frames: which lines, which
errors); one that is not a JSON-RPC message is answered with a JSON-RPC error on the same stdout, through the
SDK's own writer, so frames never interleave. A blank line is not a message and is skipped.
"""

from __future__ import annotations

import io
import os
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError

from memory_pipeline.mcp.frames import frame_error

__all__ = ["frame_error", "run_stdio"]


class _CheckedLines:
    """The stdin lines the SDK's transport reads, less those answered here (sent to `answers`)."""

    def __init__(self, lines: Any, answers: anyio.abc.ObjectSendStream[JSONRPCError]) -> None:
        self._lines, self._answers = lines, answers

    async def __aiter__(self) -> AsyncIterator[str]:
        async with self._answers:
            async for line in self._lines:
                error = frame_error(line)
                if error is None:
                    yield line
                else:
                    await self._answers.send(error)


async def run_stdio(server: MCPServer) -> None:
    """`server.run("stdio")`, answering every line (see the module docstring)."""
    lowlevel = server._lowlevel_server  # MCPServer.run_stdio_async does the same with the SDK's plain transport
    # Our own descriptor for stdin (the SDK's transport reads what it is given and leaves fd 0 alone).
    text = io.TextIOWrapper(os.fdopen(os.dup(0), "rb"), encoding="utf-8", errors="replace")
    answers_in, answers_out = anyio.create_memory_object_stream[JSONRPCError](16)
    checked = _CheckedLines(anyio.wrap_file(text), answers_in)
    async with stdio_server(stdin=cast(anyio.AsyncFile[str], checked)) as (read_stream, write_stream):

        async def relay() -> None:
            async with answers_out:
                async for error in answers_out:
                    await write_stream.send(SessionMessage(error))

        async with anyio.create_task_group() as tg:
            tg.start_soon(relay)
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()
