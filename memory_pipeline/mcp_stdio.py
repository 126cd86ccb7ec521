"""MCP over stdio where every line gets an answer: the SDK's stdio transport drops a line it cannot parse
(garbage, or a request whose JSON holds a lone UTF-16 surrogate such as `"\\ud800"`) without a reply, so the
client waits for its request forever. Here each line is checked before the SDK sees it; one that is not a
JSON-RPC message is answered with a JSON-RPC error on the same stdout (through the SDK's own writer, so frames
never interleave): -32700 "Parse error" for text that is not JSON or not valid Unicode, with `id: null` unless
the request's id can still be read; -32600 "Invalid Request" for JSON that is not a JSON-RPC message. A blank
line is not a message and is skipped; a malformed *response* (no `method`) is not answered, as JSON-RPC says.
"""

from __future__ import annotations

import io
import json
import logging
import os
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, jsonrpc_message_adapter
from pydantic import ValidationError

log = logging.getLogger(__name__)


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _request_id(obj: Any) -> str | int | None:
    rid = obj.get("id") if isinstance(obj, dict) else None
    return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None


def frame_error(line: str) -> JSONRPCError | None:
    """The JSON-RPC error that answers `line`, or None when the SDK can take it as it is (or it needs no
    answer: a blank line, a malformed response)."""
    if not line.strip():
        return None
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValidationError as exc:
        first = exc.errors()[0]
        detail = f"{first['msg']} at {'.'.join(str(p) for p in first['loc']) or 'top level'}"
    try:
        obj = json.loads(line)  # Python's decoder reads lone surrogates, so the id can still be found
    except (json.JSONDecodeError, RecursionError) as exc:
        why = f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        return _error(None, PARSE_ERROR, f"Parse error: the line is not JSON ({why}); send one JSON-RPC message "
                                         "per line")
    if isinstance(obj, dict) and "method" not in obj and ("result" in obj or "error" in obj):
        log.warning("dropped a malformed JSON-RPC response from the client: %s", detail)
        return None
    if _has_lone_surrogate(obj):
        return _error(_request_id(obj), PARSE_ERROR, "Parse error: a string holds a lone UTF-16 surrogate (such as "
                                                     "\\ud800), which is not Unicode text; send valid UTF-8")
    return _error(_request_id(obj), INVALID_REQUEST, f"Invalid Request: not a JSON-RPC 2.0 message ({detail})")


def _error(rid: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=code, message=message))


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
