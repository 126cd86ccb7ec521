"""The read path: a derived hybrid index and `search(query, k)` for agents (Python, CLI, MCP).

The names below load on first use (PEP 562): importing one light submodule (the usage spool, the CLI's
registration) does not pull in the engine, pandas and pyarrow."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_pipeline.search import usage_spool
    from memory_pipeline.search.build import build_index
    from memory_pipeline.search.confidence import WEAK, weak_line
    from memory_pipeline.search.current import current_first
    from memory_pipeline.search.documents import store_stamp
    from memory_pipeline.search.engine import SearchInputError, search
    from memory_pipeline.search.hits import Hit, Hits
    from memory_pipeline.search.index import BuildStats, IndexMissing, delete_index
    from memory_pipeline.search.live import ReadView, reading_store, refresh_index
    from memory_pipeline.search.overlay import ViewUnavailable, query_texts, read_view, store_rows, with_rows
    from memory_pipeline.search.relevance import FileScore, file_scores
    from memory_pipeline.search.scoring import Ranking, load_ranking

_WHERE = {
    "usage_spool": "", "build_index": "build", "SearchInputError": "engine", "search": "engine", "Hit": "hits",
    "Hits": "hits", "BuildStats": "index", "IndexMissing": "index", "delete_index": "index", "reading_store": "live",
    "refresh_index": "live", "Ranking": "scoring", "load_ranking": "scoring", "current_first": "current",
    "ReadView": "live", "ViewUnavailable": "overlay", "read_view": "overlay", "store_rows": "overlay",
    "with_rows": "overlay", "query_texts": "overlay", "store_stamp": "documents", "WEAK": "confidence",
    "weak_line": "confidence", "index_holds": "index", "file_scores": "relevance", "FileScore": "relevance",
}  # fmt: skip
__all__ = [
    "BuildStats",
    "FileScore",
    "Hit",
    "Hits",
    "IndexMissing",
    "Ranking",
    "ReadView",
    "SearchInputError",
    "ViewUnavailable",
    "WEAK",
    "build_index",
    "current_first",
    "delete_index",
    "file_scores",
    "index_holds",
    "load_ranking",
    "query_texts",
    "read_view",
    "reading_store",
    "refresh_index",
    "search",
    "store_rows",
    "store_stamp",
    "usage_spool",
    "weak_line",
    "with_rows",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_WHERE[name] or name}")
    return module if not _WHERE[name] else getattr(module, name)
