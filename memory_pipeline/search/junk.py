"""What search does not index: text that is mostly not text, and files that are not the workspace's.

Bytes appended to MEMORY.md by accident (a binary pasted, a disk error) are read as U+FFFD and control
characters; indexed, each 1,200-character piece of them became a document whose vector sat near any question.
Such a piece is left out (`not_text`), per piece, so the real text around it is still indexed. A file whose real
location is outside the workspace (a symlink to /etc/passwd) is never read. Each is said once per process, as a
warning line on the `memory_pipeline.search` logger (shown on stderr by the CLI, in the run's log by Dagster)."""

from __future__ import annotations

import logging
import re
import threading

LOG = logging.getLogger("memory_pipeline.search")
BAD_SHARE = 0.10  # of a piece's visible characters: control, U+FFFD, private-use or surrogate
NO_WORDS_MIN = 200  # visible characters from which a piece without a single word (two letters) is not text
_WORD = re.compile(r"[^\W\d_]{2,}")
# control characters but tab and line breaks, U+FFFD (bytes that were not UTF-8), surrogates, private use
_BAD = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\ufffd\ud800-\udfff\ue000-\uf8ff\U000f0000-\U0010ffff]")
_SPACE = re.compile(r"\s")
_SAID: set[tuple[str, ...]] = set()
_SAID_LOCK = threading.Lock()


def not_text(piece: str) -> bool:
    """Whether a piece of a file is mostly not text: more than 10 % of its visible characters are control
    characters, U+FFFD (bytes that were not UTF-8), surrogates or private-use code points; or, from 200 visible
    characters on, it holds no word at all and three quarters of it are symbols. One latin-1 "é" in a page, a
    table of numbers, emoji, any script's words: text."""
    visible = len(piece) - len(_SPACE.findall(piece))
    if not visible:
        return False
    if len(_BAD.findall(piece)) > BAD_SHARE * visible:
        return True
    if visible >= NO_WORDS_MIN and _WORD.search(piece) is None:
        return sum(1 for ch in piece if ch.isalnum()) < visible / 4
    return False


def say_once(key: tuple[str, ...], message: str) -> None:
    """Log `message` as a warning the first time `key` is seen in this process."""
    with _SAID_LOCK:
        if key in _SAID:
            return
        _SAID.add(key)
    LOG.warning(message)
