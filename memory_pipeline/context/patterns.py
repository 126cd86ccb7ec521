"""Topics' user-written regular expressions (`pattern` and `url` triggers), run with a time bound.

A topic file is user input, and a regular expression such as `(a|aa)+$` backtracks exponentially on a
message like `"a" * 40 + "b"`: with the standard library's `re` one such trigger hangs every turn (and, since
`re` holds the GIL while it matches, every other call of the same process). Patterns are compiled and run
with the `regex` package instead: the same syntax as `re`, a per-call `timeout`, and the GIL released while it
matches. A search that exceeds `PATTERN_TIMEOUT_S` raises `PatternTimeout`; the caller reports the trigger by
file and field and goes on without it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import regex

# Seconds one trigger may spend on one message (all its URLs together, for a `url` trigger). A sane pattern
# needs well under a millisecond per kilobyte; only runaway backtracking comes near this.
PATTERN_TIMEOUT_S = 0.25
_FLAGS = regex.IGNORECASE | regex.V0  # V0: the `re` module's behaviour, so existing topics mean what they meant


class PatternTimeout(Exception):
    """A user-written pattern ran longer than its time bound on one text."""

    def __init__(self, pattern: str, seconds: float) -> None:
        self.pattern, self.seconds = pattern, seconds
        super().__init__(f"pattern {pattern!r} ran longer than {seconds:g} s")


@lru_cache(maxsize=1024)
def compile_pattern(text: str) -> Any:
    """The compiled pattern (case-insensitive); raises `regex.error` for invalid syntax."""
    return regex.compile(text, _FLAGS)


def pattern_problem(text: str) -> str | None:
    """Why `text` is not a valid pattern, or None when it is."""
    try:
        compile_pattern(text)
    except (regex.error, ValueError, OverflowError) as exc:
        return str(exc)
    return None


def search_bounded(pattern: str, texts: Iterable[str], seconds: float = PATTERN_TIMEOUT_S) -> bool:
    """Whether `pattern` matches any of `texts`, within `seconds` for all of them together."""
    compiled = compile_pattern(pattern)
    deadline = time.monotonic() + seconds
    for text in texts:
        left = deadline - time.monotonic()
        if left <= 0:
            raise PatternTimeout(pattern, seconds)
        try:
            if compiled.search(text, concurrent=True, timeout=left) is not None:
                return True
        except TimeoutError:
            raise PatternTimeout(pattern, seconds) from None
    return False
