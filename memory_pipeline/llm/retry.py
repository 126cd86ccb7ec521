"""Retries with exponential backoff and jitter, honouring `retry-after`.

Why not the SDK's own retry loop: anthropic 2.12 classifies errors well (408/409/429/5xx including 529
`overloaded_error`, timeouts, connection errors, the `x-should-retry` header) and we copy that
classification, but it obeys any `retry-after` without bound (`retry-after: 3600` sleeps an hour inside a
nightly step; the upstream SDK ignored values above 60 s), its sleep cannot be injected, and its retries
bypass a rate limiter that sits outside the client. So the client is built with `max_retries=0` and every
attempt goes through `RetryPolicy.call`, which takes a rate-limit token before each attempt.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anthropic

from memory_pipeline.llm.secrets import redact

T = TypeVar("T")


class LLMCallFailed(RuntimeError):
    """An API call that failed for good (retries exhausted or not retryable). The message is short, names
    the status and the attempts, and never carries a secret; the SDK exception is not chained (it holds
    the request, headers included)."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


def parse_retry_after(headers: Any, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from `retry-after-ms`, `retry-after` (seconds) or `retry-after` (HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    return max(0.0, float(email.utils.mktime_tz(parsed)) - now())


def status_of(exc: BaseException) -> int | None:
    return exc.status_code if isinstance(exc, anthropic.APIStatusError) else None


def describe(exc: BaseException, secrets: Iterable[str | None] = ()) -> str:
    """`429 rate_limit_error: …`, `timeout`, `connection error` — what a skip reason should say."""
    if isinstance(exc, anthropic.APIStatusError):
        kind = exc.type or ""
        detail = exc.api_message or ""
        text = f"{exc.status_code} {kind}".strip() + (f": {detail}" if detail else "")
    elif isinstance(exc, anthropic.APITimeoutError):
        text = "timeout"
    elif isinstance(exc, anthropic.APIConnectionError):
        text = "connection error"
    else:
        text = f"{type(exc).__name__}: {exc}"
    return redact(text[:300], secrets)


def is_retryable(exc: BaseException, connection_errors: bool = True) -> bool:
    if isinstance(exc, anthropic.APIStatusError):
        hint = exc.response.headers.get("x-should-retry")
        if hint in ("true", "false"):
            return hint == "true"
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return connection_errors and isinstance(exc, anthropic.APIConnectionError)  # includes APITimeoutError


@dataclass
class RetryPolicy:
    max_retries: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    max_retry_after_s: float = 60.0
    sleep: Callable[[float], None] = time.sleep
    random: Callable[[], float] = random.random
    clock: Callable[[], float] = time.time
    secrets: tuple[str, ...] = ()
    waits: list[float] = field(default_factory=list)  # every wait taken, for tests and metadata

    def backoff(self, retry_index: int) -> float:
        """Exponential, capped, with "equal jitter": half the step fixed, half random."""
        step = min(self.max_delay_s, self.base_delay_s * (2.0 ** min(retry_index, 30)))
        return step / 2 + self.random() * step / 2

    def call(
        self,
        fn: Callable[[], T],
        *,
        before_attempt: Callable[[], object] | None = None,
        connection_errors: bool = True,
        on_retry: Callable[[int, float, str], object] | None = None,
    ) -> tuple[T, int]:
        """`fn()` with retries; returns (result, attempts). `connection_errors=False` does not retry a
        timeout or a dropped connection — for requests that must not be sent twice (creating a batch)."""
        attempt = 0
        while True:
            if before_attempt is not None:
                before_attempt()
            attempt += 1
            try:
                return fn(), attempt
            except (anthropic.APIStatusError, anthropic.APIConnectionError) as exc:
                what = describe(exc, self.secrets)
                if not is_retryable(exc, connection_errors):
                    raise LLMCallFailed(what, status=status_of(exc), attempts=attempt) from None
                if attempt > self.max_retries:
                    raise LLMCallFailed(
                        f"{what} (after {attempt} attempts)", status=status_of(exc), attempts=attempt
                    ) from None
                headers = exc.response.headers if isinstance(exc, anthropic.APIStatusError) else None
                retry_after = parse_retry_after(headers, self.clock)
                if retry_after is not None and retry_after > self.max_retry_after_s:
                    raise LLMCallFailed(
                        f"{what} (retry-after {retry_after:g} s is above the {self.max_retry_after_s:g} s cap)",
                        status=status_of(exc),
                        attempts=attempt,
                    ) from None
                delay = retry_after if retry_after is not None else self.backoff(attempt - 1)
                if on_retry is not None:
                    on_retry(attempt, delay, what)
                self.waits.append(delay)
                self.sleep(delay)
