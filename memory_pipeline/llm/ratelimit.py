"""A token bucket: `rate_per_min` calls per minute on average, bursts of up to `burst`, and a minimum gap
between two calls (seed 000 §4.2: 10 per minute, burst 10, 100 ms apart).

The bucket is shared by every call of a run, across steps and processes, by replaying the run's recorded
call times (from the usage ledger) when a step builds its bucket. Clock and sleep are injectable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable


class TokenBucket:
    def __init__(
        self,
        rate_per_min: float,
        burst: int,
        min_interval_s: float = 0.1,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate_per_min <= 0 or burst < 1:
            raise ValueError(f"rate limit needs rate_per_min > 0 and burst ≥ 1, got {rate_per_min}, {burst}")
        self.rate = rate_per_min / 60.0  # tokens per second
        self.capacity = float(burst)
        self.min_interval_s = min_interval_s
        self.clock = clock
        self.sleep = sleep
        self.tokens = float(burst)
        self._refilled_at: float | None = None
        self._last_call = float("-inf")
        self.waited_s = 0.0

    def _refill(self, now: float) -> None:
        if self._refilled_at is not None and now > self._refilled_at:
            self.tokens = min(self.capacity, self.tokens + (now - self._refilled_at) * self.rate)
        if self._refilled_at is None or now > self._refilled_at:
            self._refilled_at = now

    def replay(self, call_times: Iterable[float]) -> TokenBucket:
        """Account for calls already made in this run (epoch seconds), e.g. by an earlier step."""
        for t in sorted(call_times):
            self._refill(t)
            self.tokens -= 1.0  # may go negative: a debt the refill pays off
            self._last_call = max(self._last_call, t)
        return self

    def wait_time(self) -> float:
        now = self.clock()
        self._refill(now)
        for_token = 0.0 if self.tokens >= 1.0 - 1e-9 else (1.0 - self.tokens) / self.rate
        for_gap = self._last_call + self.min_interval_s - now
        wait = max(0.0, for_token, for_gap)
        return wait if wait > 1e-9 else 0.0

    def acquire(self) -> float:
        """Block until a call may go out; returns the seconds waited."""
        waited = 0.0
        while (wait := self.wait_time()) > 0:
            self.sleep(wait)
            waited += wait
        now = self.clock()
        self._refill(now)
        self.tokens -= 1.0
        self._last_call = now
        self.waited_s += waited
        return waited
