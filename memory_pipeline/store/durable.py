"""fsync of one path, file or folder: what every two-phase write here calls before it counts a file (or a rename
in a folder) as durable."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_path(path: Path) -> None:
    """Flush a file's data, or a folder's entries (a rename or a new file in it), to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
