"""Small hand-made workspaces for graph-preserving compaction tests (hashing embedder: fast, offline)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import dagster as dg

from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.resources.embedder import HASHING
from memory_pipeline.resources.notifier import NotifierResource
from memory_pipeline.store import MemoryStore
from memory_pipeline.store import repository as repo
from memory_pipeline.store.records import MemoryRecord

NOW = datetime(2026, 11, 1, 3, 30)

_TOPICS = (
    "the payments API timed out at the charge endpoint and the retry with backoff succeeded later",
    "a timeout from the payments API charge endpoint was retried with exponential backoff and then worked",
    "payments API charge call hit the timeout again, backoff retry recovered it after thirty seconds",
    "charge endpoint of the payments API timed out once more; the backoff retry made it succeed",
    "another payments API timeout at the charge endpoint, resolved by retrying with backoff",
    "the charge endpoint timed out on the payments API and succeeded on the backoff retry",
)


def memory(
    mid: str,
    content: str,
    days_ago: float,
    *,
    keys: list[str] | None = None,
    tags: list[str] | None = None,
    importance: float = 1.0,
    **fields: object,
) -> MemoryRecord:
    return MemoryRecord(
        id=mid,
        content=content,
        importance=importance,
        created_at=NOW - timedelta(days=days_ago),
        categories=["ops"],
        tags=tags or [],
        nexus_keys=keys or [],
        **fields,  # type: ignore[arg-type]
    )


def timeout_family(
    prefix: str, days: list[float], keys: list[str], tags: list[str] | None = None
) -> list[MemoryRecord]:
    """Paraphrases of one incident: the offline distiller compresses them well above the 1.5 floor. Each is made
    unique by a word, not a number (a number would be a fact the abstraction must keep)."""
    return [
        memory(f"{prefix}-{i:02d}", f"{_TOPICS[i % len(_TOPICS)]} (note {prefix} {_word(i)})", d, keys=keys, tags=tags)
        for i, d in enumerate(days)
    ]


def _word(i: int) -> str:
    """aa, ab, …: a distinct lower-case word per index."""
    return "".join(chr(ord("a") + d) for d in divmod(i, 26))


def make_workspace(home: Path, records: list[MemoryRecord]) -> MemoryStore:
    home.mkdir(parents=True, exist_ok=True)
    store = MemoryStore(home / "memory.duckdb")
    store.migrate()
    with store.transaction() as con:
        repo.insert_memories(con, records)
    return store


def resources(home: Path, **engine: object) -> dict[str, dg.ConfigurableResource]:
    return {
        "store": MemoryStoreResource(home=str(home)),
        "embedder": EmbedderResource(model=HASHING),
        "llm": LLMResource(mode="offline"),
        "engine": EngineConfig(as_of=NOW.isoformat(), **engine),  # type: ignore[arg-type]
        "notifier": NotifierResource(alerts_path=str(home / "reports" / "alerts.jsonl")),
    }


def run_nightly(home: Path, run_config: dict | None = None, **engine: object) -> dg.ExecuteInProcessResult:
    from memory_pipeline.definitions import defs_with

    defs = defs_with(resources(home, **engine))
    return defs.resolve_job_def("nightly_consolidation").execute_in_process(
        instance=dg.DagsterInstance.ephemeral(), run_config=run_config or {}, raise_on_error=False
    )
