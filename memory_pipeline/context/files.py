"""Reading the workspace's files on the read path: regular files only.

A named pipe (FIFO) in place of a topic, an identity file or today's journal would block a plain `open()`
until some process writes to it, so every turn would hang. The file is opened without blocking
(`O_NONBLOCK`), checked with `fstat` on the same descriptor (no window for a swap between check and read),
and anything but a regular file raises `NotRegularFile`, which callers report and skip.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def kind_of(mode: int) -> str:
    """What a file of this `st_mode` is, in words."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


class NotRegularFile(OSError):
    """The path is a FIFO, a directory, a socket or a device; `problem` says which."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path, self.kind = path, kind
        self.problem = f"is {kind}, not a regular file"
        super().__init__(f"{path} {self.problem}")


def read_regular_text(path: Path) -> str:
    """The UTF-8 text of `path` if it is a regular file (symlinks followed); raises `NotRegularFile`
    otherwise and `OSError` when it cannot be opened. Bytes that are not UTF-8 (one latin-1 "é" in SOUL.md) are
    read as U+FFFD, as search indexes the same file (search/documents.py): a file search finds is never silently
    missing from the prompt."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, kind_of(mode))
    except BaseException:
        os.close(fd)
        raise
    # `open` takes the descriptor; O_NONBLOCK changes nothing for a regular file
    with open(fd, encoding="utf-8", errors="replace") as fh:
        return fh.read()
