"""Reading the workspace's files on the read path: regular files inside the workspace only.

A named pipe (FIFO) in place of a topic, an identity file or today's journal would block a plain `open()` until
some process writes to it, and a symlink such as `knowledge/identity/host.md -> /etc/hostname` would put a file
from outside the workspace into the prompt. Both are refused by the store's reader
(`memory_pipeline.store.workspace_files`), which every reader of workspace files shares: it raises
`NotRegularFile` (`OutsideWorkspace` for a link out), which callers report and skip.
"""

from __future__ import annotations

from memory_pipeline.store.workspace_files import NotRegularFile, OutsideWorkspace, kind_of, read_regular_text

__all__ = ["NotRegularFile", "OutsideWorkspace", "kind_of", "read_regular_text"]
