"""The read path (issue 17): a derived hybrid index and `search(query, k)` for agents (Python, CLI, MCP)."""

from memory_pipeline.search import usage_spool
from memory_pipeline.search.build import build_index
from memory_pipeline.search.engine import SearchInputError, search
from memory_pipeline.search.hits import Hit, Hits
from memory_pipeline.search.index import BuildStats, IndexMissing, delete_index
from memory_pipeline.search.live import open_store, refresh_index
from memory_pipeline.search.scoring import Ranking, load_ranking

__all__ = [
    "BuildStats",
    "Hit",
    "Hits",
    "IndexMissing",
    "Ranking",
    "SearchInputError",
    "build_index",
    "delete_index",
    "load_ranking",
    "open_store",
    "refresh_index",
    "search",
    "usage_spool",
]
