"""A fake Anthropic API that speaks the Messages and Message Batches endpoints well enough for the real SDK.

One request handler, two ways in: `transport()` (an `httpx2.MockTransport` handed to the client) and
`serve()` (a real HTTP server on 127.0.0.1, for whole Dagster runs through `base_url`). It answers like a
careful model would: distillations from the seed's prompt (via the offline extractive distiller, so the
fake-API night compresses what the offline night does) and atoms from the extraction prompt. Faults and
odd replies are queued per endpoint; every request is recorded (body, and whether the key was right).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2 as httpx

from memory_pipeline.distillation.distill import (
    SYSTEM_PROMPT,
    Member,
    OfflineDistiller,
    extract_atom_rule_based,
)
from memory_pipeline.llm.version_judge import SYSTEM_PROMPT as VERSIONS_PROMPT
from memory_pipeline.statements.facts import FRAME
from memory_pipeline.tokens import estimate_tokens

TEST_KEY = "sk-ant-api03-TESTKEY-0123456789abcdefXYZ"
_MEMBER = re.compile(r"^\[(\d+)\] importance=([0-9.eE+-]+) \| (.*)$")


@dataclass
class Fault:
    """A canned failure: an HTTP status (with headers/body), or a timeout (`status=0`)."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    error_type: str = "api_error"
    message: str = "fault injected"
    delay_s: float = 0.0  # for timeouts through the real server: how long to stall

    def body(self) -> dict[str, Any]:
        return {"type": "error", "error": {"type": self.error_type, "message": self.message}}


def rate_limited(retry_after: str = "1") -> Fault:
    return Fault(
        429, {"retry-after": retry_after}, "rate_limit_error", "Number of requests has exceeded your rate limit"
    )


def overloaded() -> Fault:
    return Fault(529, {}, "overloaded_error", "Overloaded")


def server_error() -> Fault:
    return Fault(500, {}, "api_error", "Internal server error")


def timeout(delay_s: float = 2.0) -> Fault:
    return Fault(0, delay_s=delay_s)


@dataclass
class Seen:
    method: str
    path: str
    body: dict[str, Any] | None
    key_ok: bool
    headers: dict[str, str]  # minus the key


def distill_reply(user: str) -> str:
    """What a good model answers: the extractive distillation of the members, as the seed's JSON."""
    members = []
    for line in user.splitlines():
        m = _MEMBER.match(line)
        if m:
            members.append(Member(f"m{m.group(1)}", m.group(3), float(m.group(2))))
    category = re.search(r"category: (.*?)\):", user)
    # a night's span: the frame it writes (then taken off) takes its room in the offline distiller's budget
    d = OfflineDistiller().distill(members, category.group(1) if category else "", ("2026-10-01", "2026-10-31"))
    abstraction = FRAME.sub("", d.abstraction).strip()
    return json.dumps({"abstraction": abstraction, "compression_ratio": 3.4, "is_causal": d.is_causal})


def atom_reply(text: str) -> str:
    atom = extract_atom_rule_based(text)
    return json.dumps(atom if atom else {"not_causal": True})


class FakeAnthropicAPI:
    def __init__(self, api_key: str = TEST_KEY, *, batch_polls: int = 2, cache: bool = True) -> None:
        self.api_key = api_key
        self.batch_polls = batch_polls  # retrieves before a batch has ended
        self.cache = cache  # emulate prompt caching of the system prompt (read after the first write)
        self.seen: list[Seen] = []
        self.faults: dict[str, deque[Fault]] = {}
        self.replies: deque[str | Callable[[str, str], str]] = deque()  # next Messages replies, in order
        # when set, queued faults and replies go only to the Messages requests whose (system, user) match it
        self.only: Callable[[str, str], bool] | None = None
        self.stop_reasons: deque[str] = deque()  # next replies' stop_reason (default end_turn)
        self.reply_rules: list[tuple[Callable[[str, str], bool], str | Callable[[str, str], str]]] = []
        self.batches: dict[str, dict[str, Any]] = {}
        # (system, user) predicate → a batch result object ({"type": "errored", "error": …}) instead of a message
        self.batch_rules: list[tuple[Callable[[str, str], bool], dict[str, Any]]] = []
        self._cached: set[str] = set()
        self._ids = itertools.count(1)
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ scripting

    def fail(self, endpoint: str, *faults: Fault) -> FakeAnthropicAPI:
        """Queue faults for `messages`, `batches.create`, `batches.retrieve` or `batches.results`."""
        self.faults.setdefault(endpoint, deque()).extend(faults)
        return self

    def reply_when(self, predicate: Callable[[str, str], bool], reply: str | Callable[[str, str], str]) -> None:
        """Every Messages request whose (system, user) matches gets `reply` (text, or a function of them)."""
        self.reply_rules.append((predicate, reply))

    def requests(self, endpoint: str) -> list[Seen]:
        return [s for s in self.seen if _endpoint(s.method, s.path) == endpoint]

    # ------------------------------------------------------------------ the model

    def _answer(self, params: dict[str, Any]) -> tuple[str, dict[str, int]]:
        system, user = _prompts(params)
        reply: str | Callable[[str, str], str] | None = None
        for predicate, canned in self.reply_rules:
            if predicate(system, user):
                reply = canned
                break
        if reply is None and self.replies and (self.only is None or self.only(system, user)):
            reply = self.replies.popleft()
        if reply is None and system == VERSIONS_PROMPT:
            reply = '{"facts": []}'  # a careful model: no two memories are versions of one fact
        if reply is None:
            reply = distill_reply(user) if system == SYSTEM_PROMPT else atom_reply(user)
        text = reply(system, user) if callable(reply) else reply
        system_tokens, user_tokens = estimate_tokens(system), estimate_tokens(user) + 8
        cached = params["system"][-1].get("cache_control") is not None and self.cache
        usage = {"input_tokens": user_tokens, "output_tokens": estimate_tokens(text) + 2}
        if cached and system in self._cached:
            usage |= {"cache_read_input_tokens": system_tokens, "cache_creation_input_tokens": 0}
        elif cached:
            self._cached.add(system)
            usage |= {"cache_read_input_tokens": 0, "cache_creation_input_tokens": system_tokens}
        else:
            usage["input_tokens"] += system_tokens
        return text, usage

    def _message(self, params: dict[str, Any]) -> dict[str, Any]:
        text, usage = self._answer(params)
        return {
            "id": f"msg_{next(self._ids):04d}",
            "type": "message",
            "role": "assistant",
            "model": params["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": self.stop_reasons.popleft() if self.stop_reasons else "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }

    # ------------------------------------------------------------------ HTTP

    def handle(
        self, method: str, path: str, headers: Any, content: bytes, base: str
    ) -> tuple[int, dict[str, str], bytes] | Fault:
        with self._lock:
            body = json.loads(content) if content else None
            # SDK 2.12 sends the key as `authorization: Bearer …`; older ones as `x-api-key`
            key_ok = self.api_key in (headers.get("x-api-key"), (headers.get("authorization") or "")[7:])
            kept = {k.lower(): v for k, v in headers.items() if k.lower() not in ("x-api-key", "authorization")}
            self.seen.append(Seen(method, path, body, key_ok, kept))
            if not key_ok:
                return _json(
                    401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
                )
            endpoint = _endpoint(method, path)
            queue = self.faults.get(endpoint)
            if queue and endpoint == "messages" and self.only is not None:
                queue = queue if self.only(*_prompts(body)) else None
            if queue:
                fault = queue.popleft()
                return fault if fault.status == 0 else _json(fault.status, fault.body(), fault.headers)
            if endpoint == "messages":
                message = self._message(body)
                return _streamed(message) if body.get("stream") else _json(200, message)
            if endpoint == "batches.create":
                return _json(200, self._create_batch(body, base))
            batch_id = path.split("/")[4]
            if batch_id not in self.batches:
                return _json(404, {"type": "error", "error": {"type": "not_found_error", "message": "no such batch"}})
            if endpoint == "batches.retrieve":
                batch = self.batches[batch_id]
                batch["polls"] += 1
                return _json(200, self._batch_json(batch))
            lines = [json.dumps(r) for r in self.batches[batch_id]["results"]]
            return 200, {"content-type": "application/binary"}, ("\n".join(lines) + "\n").encode()

    def _create_batch(self, body: dict[str, Any], base: str) -> dict[str, Any]:
        batch_id = f"msgbatch_{next(self._ids):04d}"
        results = []
        for req in body["requests"]:
            system, user = _prompts(req["params"])
            rule = next((result for predicate, result in self.batch_rules if predicate(system, user)), None)
            if rule is not None:
                results.append({"custom_id": req["custom_id"], "result": rule})
                continue
            results.append(
                {
                    "custom_id": req["custom_id"],
                    "result": {"type": "succeeded", "message": self._message(req["params"])},
                }
            )
        created = datetime.now(UTC)
        self.batches[batch_id] = {
            "id": batch_id,
            "requests": body["requests"],
            "results": results,
            "polls": 0,
            "created_at": created,
            "base": base,
        }
        return self._batch_json(self.batches[batch_id])

    def _batch_json(self, batch: dict[str, Any]) -> dict[str, Any]:
        ended = batch["polls"] >= self.batch_polls
        n = len(batch["requests"])
        ok = sum(1 for r in batch["results"] if r["result"]["type"] == "succeeded")
        return {
            "id": batch["id"],
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {
                "processing": 0 if ended else n,
                "succeeded": ok if ended else 0,
                "errored": n - ok if ended else 0,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": batch["created_at"].isoformat(),
            "expires_at": (batch["created_at"] + timedelta(hours=24)).isoformat(),
            "ended_at": datetime.now(UTC).isoformat() if ended else None,
            "cancel_initiated_at": None,
            "archived_at": None,
            "results_url": f"{batch['base']}/v1/messages/batches/{batch['id']}/results" if ended else None,
        }

    # ------------------------------------------------------------------ two ways in

    def transport(self) -> httpx.MockTransport:
        def handler(request: httpx.Request) -> httpx.Response:
            out = self.handle(
                request.method,
                request.url.path,
                request.headers,
                request.content,
                f"{request.url.scheme}://{request.url.netloc.decode()}",
            )
            if isinstance(out, Fault):
                raise httpx.ReadTimeout("timed out (fault injected)", request=request)
            status, headers, payload = out
            return httpx.Response(status, headers=headers, content=payload)

        return httpx.MockTransport(handler)

    def http_client(self) -> httpx.Client:
        return httpx.Client(transport=self.transport())

    @contextmanager
    def serve(self) -> Iterator[str]:
        """A real HTTP server on 127.0.0.1; yields its base URL."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _reply(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                content = self.rfile.read(length) if length else b""
                base = f"http://{self.headers.get('host')}"
                out = fake.handle(self.command, self.path.split("?")[0], self.headers, content, base)
                if isinstance(out, Fault):
                    time.sleep(out.delay_s)  # longer than the client's timeout
                    out = _json(500, out.body())
                status, headers, payload = out
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = _reply

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client killed mid-request (the batch test's SIGKILL) is expected

        server = Server(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()


def _prompts(params: dict[str, Any]) -> tuple[str, str]:
    system = params.get("system", "")
    system = system if isinstance(system, str) else "".join(block["text"] for block in system)
    user = params["messages"][-1]["content"]
    user = user if isinstance(user, str) else "".join(b.get("text", "") for b in user)
    return system, user


def _endpoint(method: str, path: str) -> str:
    if path == "/v1/messages":
        return "messages"
    if path == "/v1/messages/batches":
        return "batches.create" if method == "POST" else "batches.list"
    if path.endswith("/results"):
        return "batches.results"
    return "batches.retrieve"


def _json(
    status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    return status, {"content-type": "application/json", **(headers or {})}, json.dumps(payload).encode()


def _streamed(message: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """`message` as the Messages API streams it (server-sent events): how Claude Code's CLI asks for replies."""
    text, usage = message["content"][0]["text"], message["usage"]
    events = [
        ("message_start", {"message": {**message, "content": [], "stop_reason": None,
                                       "usage": {**usage, "output_tokens": 1}}}),
        ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                           "usage": {"output_tokens": usage["output_tokens"]}}),
        ("message_stop", {}),
    ]  # fmt: skip
    body = "".join(f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n" for name, data in events)
    return 200, {"content-type": "text/event-stream", "cache-control": "no-cache"}, body.encode()
