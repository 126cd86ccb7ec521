"""Every JSON-RPC frame a client sends to the MCP server gets an answer, in one line.

The SDK's transports let some frames through unanswered or answer them with pydantic's dump: its stdio transport
drops a line it cannot parse (garbage, or a request whose JSON holds a lone UTF-16 surrogate such as
`"\\ud800"`), both transports take a request whose `id` is neither a string nor a whole number (`"id": null`,
`"id": {"a": 1}`) for a notification and never answer it, and the HTTP one answers a batch (`[{…}]`) with
`Validation error: 4 validation errors for union[JSONRPCRequest,…]`. `frame_error` is the JSON-RPC error for
such a frame — one stdio line (memory_pipeline.mcp.stdio) or one HTTP body (`CheckedFrames`, and the fleet
gateway through `frame_response`): -32700 "Parse error" for text that is not JSON or not valid Unicode, with
`id: null` unless the request's id can still be read; -32600 "Invalid Request" with `id: null` for a batch (not
supported), for a request whose id is not one, and for JSON that is not a JSON-RPC message. A blank frame is
not a message; a malformed *response* (no `method`) is not answered, as JSON-RPC says.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CheckedFrames", "frame_error", "frame_response"]

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


def frame_error(line: str, unit: str = "line") -> JSONRPCError | None:
    """The JSON-RPC error that answers `line` (one stdio line, or one HTTP body: `unit`), or None when the SDK
    can take it as it is (or it needs no answer: a blank line, a malformed response)."""
    if not line.strip():
        return None
    try:
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        detail = f"{first['msg']} at {'.'.join(str(p) for p in first['loc']) or 'top level'}"
    else:
        if not isinstance(message, JSONRPCNotification) or '"id"' not in line:
            return None
        return _id_error(json.loads(line))  # a request whose id the SDK could not read passes as a notification
    try:
        obj = json.loads(line)  # Python's decoder reads lone surrogates, so the id can still be found
    except (json.JSONDecodeError, RecursionError) as exc:
        why = f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        return _error(None, PARSE_ERROR, f"Parse error: the {unit} is not JSON ({why}); send one JSON-RPC message "
                                         f"per {unit}")  # fmt: skip
    if isinstance(obj, list):
        return _error(None, INVALID_REQUEST, "Invalid Request: a batch (a JSON array of messages) is not "
                                             f"supported; send one JSON-RPC message per {unit}")  # fmt: skip
    if isinstance(obj, dict) and "method" not in obj and ("result" in obj or "error" in obj):
        log.warning("dropped a malformed JSON-RPC response from the client: %s", detail)
        return None
    if _has_lone_surrogate(obj):
        return _error(_request_id(obj), PARSE_ERROR, "Parse error: a string holds a lone UTF-16 surrogate (such as "
                                                     "\\ud800), which is not Unicode text; send valid UTF-8")
    return _id_error(obj) or _error(_request_id(obj), INVALID_REQUEST,
                                    f"Invalid Request: not a JSON-RPC 2.0 message ({detail})")  # fmt: skip


def _id_error(obj: Any) -> JSONRPCError | None:
    """-32600 for a message with an `id` that is neither a string nor a whole number (JSON-RPC: the answer to a
    request whose id cannot be read has `id: null`)."""
    if not isinstance(obj, dict) or "id" not in obj or _request_id(obj) is not None:
        return None
    return _error(None, INVALID_REQUEST, f"Invalid Request: 'id' must be a string or a whole number; got "
                                         f"{json.dumps(obj['id'])[:40]}")  # fmt: skip


def _error(rid: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=code, message=message))


CHECK_LIMIT = 4 << 20  # bodies above this are passed on unread (the transport's own size limit answers them)


def frame_response(body: bytes) -> Response | None:
    """The 400 answering `body`, or None when it is one JSON-RPC message (or the transport's to answer)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        error: JSONRPCError | None = _error(None, PARSE_ERROR, "Parse error: the request body is not UTF-8 text "
                                                               f"(byte {exc.start})")  # fmt: skip
    else:
        error = frame_error(text, unit="request")
    if error is None:
        return None
    return JSONResponse(error.model_dump(mode="json", by_alias=True, exclude_unset=True), status_code=400)


class CheckedFrames:
    """ASGI middleware: a POST whose body `frame_response` answers is answered here; the rest go to `app`."""

    def __init__(self, app: ASGIApp, limit: int = CHECK_LIMIT) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        read: list[Message] = []
        size, whole = 0, False
        while size <= self.limit:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":  # the client went away
                break
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                whole = True
                break
        if whole:
            answer = frame_response(b"".join(m.get("body", b"") for m in read))
            if answer is not None:
                await answer(scope, receive, send)
                return

        async def replay() -> Message:
            return read.pop(0) if read else await receive()

        await self.app(scope, replay, send)
