"""Read-time bounds for the HTTP servers (`memory-pipeline fleet serve`, `memory-pipeline mcp --transport http`).

Uvicorn bounds a keep-alive connection's idle time after a response, and nothing else: a client that connects
and sends nothing, or sends headers and part of a body and then stalls, holds its connection (and the request's
task) forever — 31 such connections were all still held after 70 s. The protocol classes here are uvicorn's own
(httptools when it is installed, as uvicorn's "auto" picks, else h11) with two timers per request:

- headers: from the connection (or, on a kept-alive connection, the request's first byte) until its headers are
  complete, at most MEMORY_PIPELINE_HTTP_HEADER_TIMEOUT seconds (default 10);
- body: from the headers until the whole body has arrived, at most MEMORY_PIPELINE_HTTP_BODY_TIMEOUT seconds
  (default 30: a 1 MiB body at ~35 KB/s).

A request over either bound has its connection closed (the application, if it was running, sees the client
disconnect). Pass `HTTP_PROTOCOL` as uvicorn's `http` setting; each worker process reads the variables itself.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
from collections.abc import Mapping
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from memory_pipeline.settings import SettingsError

HEADER_ENV, HEADER_DEFAULT = "MEMORY_PIPELINE_HTTP_HEADER_TIMEOUT", 10.0
BODY_ENV, BODY_DEFAULT = "MEMORY_PIPELINE_HTTP_BODY_TIMEOUT", 30.0
HTTP_PROTOCOL = "memory_pipeline.operator.http_timeouts:BoundedHTTPProtocol"  # uvicorn's `http=` (an import string
# reaches worker processes too)
LOG = logging.getLogger("uvicorn.error")


def _seconds(env: Mapping[str, str], var: str, default: float) -> float:
    raw = env.get(var, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{var}={raw!r}: expected a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise SettingsError(f"{var}={raw!r}: must be a finite number of seconds > 0")
    return value


def read_timeouts(environ: Mapping[str, str] | None = None) -> tuple[float, float]:
    """(header, body) seconds from the environment; a SettingsError naming the variable when malformed."""
    env = os.environ if environ is None else environ
    return _seconds(env, HEADER_ENV, HEADER_DEFAULT), _seconds(env, BODY_ENV, BODY_DEFAULT)


class _ReadDeadlines:
    """The two timers, shared by both protocol classes (which provide `loop` and `transport`)."""

    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    _phase = ""  # "", "headers" or "body"
    _timer: asyncio.TimerHandle | None = None
    _bounds: tuple[float, float] | None = None

    def _start(self, phase: str) -> None:
        if self._phase == phase:
            return
        self._stop()
        if self._bounds is None:
            self._bounds = read_timeouts()
        seconds = self._bounds[0] if phase == "headers" else self._bounds[1]
        self._phase = phase
        self._timer = self.loop.call_later(seconds, self._expired, phase, seconds)

    def _stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._phase = None, ""

    def _expired(self, phase: str, seconds: float) -> None:
        self._timer, self._phase = None, ""
        if self.transport is not None and not self.transport.is_closing():
            peer = self.transport.get_extra_info("peername")
            LOG.info("closed the connection from %s: its request %s did not arrive within %g s", peer,
                     "headers" if phase == "headers" else "body", seconds)  # fmt: skip
            self.transport.close()


class BoundedH11Protocol(_ReadDeadlines, H11Protocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start("headers")

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            self._start("body")
        elif state is h11.IDLE:
            if self.conn.trailing_data[0]:  # part of the next request's headers
                self._start("headers")
        else:  # the request is whole (DONE), or the connection is closing
            self._stop()


def _httptools_class() -> type[Any] | None:
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # uvicorn without httptools: its "auto" is h11
        return None

    class BoundedHttpToolsProtocol(_ReadDeadlines, HttpToolsProtocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._start("headers")

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            self._start("headers")  # kept from the connection's start when this is its first request
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self._start("body")
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._stop()
            super().on_message_complete()

    return BoundedHttpToolsProtocol


BoundedHTTPProtocol: type[Any] = _httptools_class() or BoundedH11Protocol
