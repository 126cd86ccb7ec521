"""JSONL session files read a line at a time, in bounded memory, whatever their size.

A line up to `LINE_CAP` bytes is read and parsed as it is. A longer line — a tool that printed 50 MB — is read in
`CHUNK`s through `Shrinker`, which keeps every JSON string's first `STRING_KEEP` bytes and replaces the rest with
` … [cut: K of N bytes]` (N: the string's size as the file writes it), so the line parses in a few MB and the
transcript's cap (`model.cap`) can still say how big the original was. Each line is decoded as UTF-8 on its own:
a bad byte is one error naming the line. A last line without its newline that does not parse yet is a session
still being written: reading stops before it and `ReadStats.unfinished` says which line it was.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError

LINE_CAP = 1 << 20  # bytes: a longer line has its long strings cut while it is read
CHUNK = 1 << 20  # bytes read at a time from a long line
STRING_KEEP = 16_000  # bytes of a cut string kept: more than any cap applied to a field later
SHRUNK_CAP = 8 << 20  # a line still longer than this once its strings are cut is refused
BOM = b"\xef\xbb\xbf"
TOO_DEEP = "JSON nested too deeply to read (more levels than Python's parser allows)"
CUT_NOTE = re.compile(r" … \[cut: \d+ of (?P<size>\d+) bytes\]\Z")
_BODY = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)  # a run of string content: anything but `"`, escapes whole
_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\Z")


class SourceError(UserError):
    """A source file that cannot be imported; the message is one line naming the file (and line)."""


@dataclass
class ReadStats:
    """What reading one file noticed besides its records."""

    skipped: Counter[str] = field(default_factory=Counter)  # unknown event types (and content blocks) left out
    unfinished: int | None = None  # the line number of an unfinished last line, left for the next import
    cut_lines: int = 0  # lines over LINE_CAP whose long strings were cut while reading

    def skip(self, kind: object) -> None:
        self.skipped[str(kind)[:40]] += 1


def _safe_prefix(kept: bytes) -> bytes:
    """`kept` without a cut escape sequence, UTF-8 character or high surrogate at its end."""
    i, safe = 0, 0
    while i < len(kept):
        step = (6 if kept[i + 1 : i + 2] == b"u" else 2) if kept[i] == 0x5C else 1
        if i + step > len(kept):
            break
        i += step
        safe = i
    kept = kept[:safe]
    end = len(kept)
    while end and kept[end - 1] & 0xC0 == 0x80:  # continuation bytes of a possibly cut character
        end -= 1
    if end and kept[end - 1] >= 0xC0:  # its lead byte
        end -= 1
    kept = kept[:end] if end < len(kept) else kept
    return kept[:-6] if _HIGH_SURROGATE.search(kept) else kept


class Shrinker:
    """A JSON text fed in chunks; `result` is the same text with each string cut to its first STRING_KEEP bytes."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.out = bytearray()
        self.in_string = False
        self.escape = False  # the previous chunk ended with a string's backslash
        self.start = 0  # where the current string's content starts in `out`
        self.size = 0  # bytes of the current string's content so far

    def _take(self, part: bytes) -> None:
        room = STRING_KEEP - self.size
        if room > 0:
            self.out += part[:room]
        self.size += len(part)

    def _close(self) -> None:
        if self.size > STRING_KEEP:
            kept = _safe_prefix(bytes(self.out[self.start :]))
            del self.out[self.start :]
            self.out += kept + f" … [cut: {len(kept)} of {self.size} bytes]".encode()
        self.out += b'"'
        self.in_string = False

    def feed(self, data: bytes) -> None:
        i, n = 0, len(data)
        while i < n:
            if not self.in_string:
                j = data.find(b'"', i)
                if j < 0:
                    self.out += data[i:]
                    break
                self.out += data[i : j + 1]
                self.in_string, self.escape, self.start, self.size = True, False, len(self.out), 0
                i = j + 1
                continue
            if self.escape:
                self._take(data[i : i + 1])
                self.escape, i = False, i + 1
                continue
            match = _BODY.match(data, i)
            end = match.end() if match else i
            self._take(data[i:end])
            i = end
            if i == n:
                break
            if data[i] == 0x5C:  # a backslash that is the chunk's last byte: its escaped byte comes next
                self._take(data[i : i + 1])
                self.escape, i = True, i + 1
            else:
                self._close()
                i += 1
        if len(self.out) > SHRUNK_CAP:
            raise SourceError(f"{self.where}: a line over {SHRUNK_CAP >> 20} MB even with its long strings cut")

    def result(self) -> bytes:
        return bytes(self.out)


def jsonl_records(path: Path, stats: ReadStats | None = None) -> Generator[tuple[int, Any], None, None]:
    """(line number, value) of each non-blank line, streamed. A line that is not JSON or not UTF-8 is one
    `SourceError` naming it — except an unfinished last line (no newline yet, not parseable yet: a live session
    being appended to), which is left for the next import and noted in `stats.unfinished`."""
    stats = stats if stats is not None else ReadStats()
    with open(path, "rb") as fh:
        number = 0
        while raw := fh.readline(LINE_CAP + 1):
            number += 1
            where = f"{path}:{number}"
            if len(raw) > LINE_CAP and not raw.endswith(b"\n"):
                shrinker = Shrinker(where)
                shrinker.feed(raw)
                while part := fh.readline(CHUNK):
                    shrinker.feed(part)
                    if part.endswith(b"\n"):
                        break
                raw = shrinker.result()
                stats.cut_lines += 1
            ended = raw.endswith(b"\n")
            if number == 1 and raw.startswith(BOM):  # an editor's byte-order mark: not part of the JSON
                raw = raw[len(BOM) :]
            if not raw.strip():
                continue
            try:
                value = json.loads((raw[:-1] if ended else raw).decode("utf-8"))
            except RecursionError:
                raise SourceError(f"{where}: {TOO_DEEP}") from None
            except UnicodeDecodeError as exc:
                if not ended:
                    stats.unfinished = number
                    return
                raise SourceError(f"{where}: not UTF-8 (byte {exc.start + 1} of the line)") from None
            except json.JSONDecodeError as exc:
                if not ended:
                    stats.unfinished = number
                    return
                raise SourceError(f"{where}: not a JSON line ({exc.msg} at column {exc.colno})") from None
            yield number, value
