"""The sample workspace's knowledge layout (seed 001 §2.2): identity, projects, people, procedures, topics.

Shipped as package data under `context/sample/`; copied into a workspace without overwriting what is there,
so a user's own files always win.
"""

from __future__ import annotations

from importlib import resources
from importlib.abc import Traversable
from pathlib import Path


def _walk(node: Traversable, rel: Path) -> list[tuple[Path, Traversable]]:
    out: list[tuple[Path, Traversable]] = []
    for child in node.iterdir():
        if child.is_dir():
            out.extend(_walk(child, rel / child.name))
        elif child.name.endswith(".md"):
            out.append((rel / child.name, child))
    return out


def install_sample_knowledge(home: Path) -> list[Path]:
    """Copy the sample topics and knowledge files into `home`; returns the files written (new ones only)."""
    written: list[Path] = []
    root = resources.files("memory_pipeline.context").joinpath("sample")
    for rel, node in sorted(_walk(root, Path()), key=lambda item: str(item[0])):
        target = home / rel
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(node.read_text(encoding="utf-8"), encoding="utf-8")
        tmp.replace(target)
        written.append(target)
    return written
