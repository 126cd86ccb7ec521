import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from memory_pipeline.resources.embedder import MINILM, EmbedderResource
from memory_pipeline.search import build_index
from memory_pipeline.search.engine import clear_cache
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "search_memories.jsonl"
JOURNAL = """---
date: 2026-10-20
---
## 2026-10-20

### travel
- Booked the ferry to Naxos for the second week of June; cabins sold out, deck seats only.
"""


def minilm() -> tuple[Callable[[list[str]], np.ndarray], str]:
    return EmbedderResource(model=MINILM).encode, MINILM


@pytest.fixture(scope="session")
def built_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture memories plus one journal file, indexed once with MiniLM (the slow part)."""
    home = tmp_path_factory.mktemp("search")
    import_jsonl(MemoryStore(home / "memory.duckdb"), FIXTURE)
    journal = home / "knowledge" / "journal" / "2026-10-20.md"
    journal.parent.mkdir(parents=True)
    journal.write_text(JOURNAL, encoding="utf-8")
    encode, model = minilm()
    build_index(home, encode, model)
    return home


@pytest.fixture
def workspace(built_workspace: Path, tmp_path: Path) -> Path:
    home = tmp_path / "ws"
    shutil.copytree(built_workspace, home)
    clear_cache()
    yield home
    clear_cache()


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
