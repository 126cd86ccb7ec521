"""Every place a consolidation run writes, checked before its first write.

A run that finds `reports/` unusable only at its last step has already archived hundreds of memories without
the report that explains them. So the CLI (before launching) and the run's first writing step check each
location here and stop with one line naming the path.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from memory_pipeline.errors import UserError

# Folders under the workspace a night writes to: the store itself (DuckDB writes a .wal beside it), snapshots,
# the run report, the LLM usage ledger and batch state.
OUTPUT_DIRS: tuple[str, ...] = ("", "backups", "reports", "reports/llm-usage", "reports/llm-batches")
# Files appended to in place.
OUTPUT_FILES: tuple[str, ...] = ("reports/alerts.jsonl",)


class OutputNotWritable(UserError):
    """An output location is not a writable directory (or file); nothing was written."""


def _probe(folder: Path) -> str | None:
    """None if a file can be created in `folder`; else why not (a real write: root ignores permission bits)."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-probe-"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def check_dir(path: Path) -> None:
    """`path` is a writable directory, or can be created as one (its nearest existing ancestor is writable)."""
    if path.is_symlink() and not path.exists():
        raise OutputNotWritable(f"{path} is a dangling symlink (to {os.readlink(path)}): fix or remove it")
    if path.exists():
        if not path.is_dir():
            raise OutputNotWritable(f"{path} is a file, not a directory: move it away (runs write there)")
        why = _probe(path)
        if why:
            raise OutputNotWritable(f"{path} is not writable ({why}): fix its permissions or mount")
        return
    ancestor = path.parent
    while not ancestor.exists():
        if ancestor.is_symlink():
            raise OutputNotWritable(f"{ancestor} is a dangling symlink: fix or remove it")
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputNotWritable(f"{ancestor} is a file, not a directory: move it away (runs write under it)")
    why = _probe(ancestor)
    if why:
        raise OutputNotWritable(f"cannot create {path}: {ancestor} is not writable ({why})")


def check_file(path: Path) -> None:
    """`path` is a regular file we may append to, or can be created."""
    if path.exists() or path.is_symlink():
        if path.is_dir():
            raise OutputNotWritable(f"{path} is a directory, not a file: move it away (runs append to it)")
        if not path.exists():
            raise OutputNotWritable(f"{path} is a dangling symlink: fix or remove it")
        try:
            with open(path, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise OutputNotWritable(f"{path} cannot be appended to ({exc.strerror or exc})") from None
    check_dir(path.parent)


def check_outputs(home: Path, extra_dirs: tuple[str, ...] = ()) -> None:
    """Raise OutputNotWritable naming the first output location a run could not write."""
    for rel in (*OUTPUT_DIRS, *extra_dirs):
        check_dir(home / rel if rel else home)
    for rel in OUTPUT_FILES:
        check_file(home / rel)
