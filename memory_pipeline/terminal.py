"""What the CLI prints is text, never terminal control. Stored content comes from transcripts and tools, which
can hold escape sequences (a window title, a cleared screen, a hidden line) or bidirectional overrides; printed
raw, they would act on the reader's terminal. Every such character is shown as its `\\uXXXX` escape instead,
which is also a valid escape inside the JSON the CLI prints."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

# C0 and C1 controls but tab and newline, DEL, and the bidirectional embeddings, overrides and isolates
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class VisibleText:
    """A text stream that writes `visible(text)` to the stream it wraps; everything else (its buffer, which the
    MCP server's stdio transport writes its own JSON to, fileno, isatty, encoding) is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(visible(text))
        return len(text)

    def writelines(self, lines: Iterator[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def visible_stdout() -> Iterator[None]:
    """While open, what is printed to stdout shows control characters as escapes (see the module)."""
    original = sys.stdout
    sys.stdout = VisibleText(original)
    try:
        yield
    finally:
        sys.stdout = original
