"""Reading the workspace's files: regular files that really are inside the workspace.

Every reader of workspace files (search's documents, the context compiler, topics, the journal and knowledge
pipelines) goes through here, so two kinds of file are refused the same way everywhere:

- anything but a regular file: a named pipe (FIFO) would block a plain `open()` until some process writes to it.
  The file is opened without blocking (`O_NONBLOCK`) and checked with `fstat` on the same descriptor.
- a file whose real location is outside the workspace: a symlink `knowledge/passwd.md -> /etc/passwd`, or a
  folder on the way that links out. The path is resolved, the resolved path checked against the workspace's own
  resolved path (a workspace reached through a symlink is fine), and that resolved path opened with `O_NOFOLLOW`,
  so a link put in its place after the check fails the open instead of being followed.

Both raise `NotRegularFile` (`OutsideWorkspace` is one), whose `problem` callers report once and skip.
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

    def __init__(self, path: Path, kind: str, problem: str | None = None) -> None:
        self.path, self.kind = path, kind
        self.problem = problem or f"is {kind}, not a regular file"
        super().__init__(f"{path} {self.problem}")


class OutsideWorkspace(NotRegularFile):
    """The path leads out of the workspace (a symlink, or a folder on its way that links out)."""

    def __init__(self, path: Path, target: str) -> None:
        self.target = target
        super().__init__(path, "a link out of the workspace", f"leads outside the workspace (to {target})")


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def real_root(root: Path | str) -> str:
    return os.path.realpath(root)


def outside(path: Path | str, root: Path | str) -> str | None:
    """Where `path` really is when that is outside `root`, else None (inside, or missing)."""
    real = os.path.realpath(path)
    return None if _inside(real, real_root(root)) else real


class Containment:
    """`outside` for the many files of one listing: each folder is resolved once, each file costs one `lstat`
    (a resolve only when it is itself a link)."""

    def __init__(self, root: Path | str) -> None:
        self.root = real_root(root)
        self._folders: dict[str, str] = {}

    def outside(self, path: Path | str) -> str | None:
        folder, name = os.path.split(os.fspath(path))
        real_folder = self._folders.get(folder)
        if real_folder is None:
            real_folder = self._folders[folder] = os.path.realpath(folder)
        if not _inside(real_folder, self.root):
            return os.path.join(real_folder, name)
        try:
            is_link = stat.S_ISLNK(os.lstat(path).st_mode)
        except OSError:
            return None
        if not is_link:
            return None
        real = os.path.realpath(path)
        return None if _inside(real, self.root) else real


def _default_root(path: Path) -> Path | None:
    """The workspace (MEMORY_PIPELINE_HOME) when `path` is written under it, else None."""
    from memory_pipeline.settings import workspace_home

    home = workspace_home()
    return home if Path(os.path.abspath(path)).is_relative_to(home) else None


def read_regular_text(path: Path, root: Path | None = None, errors: str = "replace") -> str:
    """The UTF-8 text of `path` if it is a regular file inside `root` (default: the workspace, when `path` is under
    it); raises `NotRegularFile` (or `OutsideWorkspace`) otherwise and `OSError` when it cannot be opened. With
    `errors="replace"` bytes that are not UTF-8 (one latin-1 "é" in SOUL.md) are read as U+FFFD, as search indexes
    the same file: a file search finds is never silently missing from the prompt; `errors="strict"` raises
    UnicodeDecodeError instead."""
    path = Path(path)
    root = root if root is not None else _default_root(path)
    target = os.path.realpath(path)
    if root is not None and not _inside(target, real_root(root)):
        raise OutsideWorkspace(path, target)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(target, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, kind_of(mode))
    except BaseException:
        os.close(fd)
        raise
    # `open` takes the descriptor; O_NONBLOCK changes nothing for a regular file
    with open(fd, encoding="utf-8", errors=errors) as fh:
        return fh.read()
