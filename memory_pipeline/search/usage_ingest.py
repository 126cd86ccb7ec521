"""Batch ingestion of the usage spool through the graph domain's own `usage import` path (idempotent by
event id, so a file ingested twice after a crash changes nothing)."""

from __future__ import annotations

import os
from pathlib import Path

from memory_pipeline.search.usage_spool import pending_files, spool_dir


def ingest_spool(home: Path, factor: float | None = None) -> dict[str, int]:
    """Import every closed spool file, then move it to `done/`. Returns files and events ingested."""
    from memory_pipeline.graph.usage_store import import_usage
    from memory_pipeline.settings import env_overrides
    from memory_pipeline.store import MemoryStore

    factor = float(env_overrides().get("usage_decay", 0.95)) if factor is None else factor
    files = events = 0
    claimed_dir, done = spool_dir(home) / "claimed", spool_dir(home) / "done"
    claimed_dir.mkdir(parents=True, exist_ok=True)
    for path in pending_files(home):  # writers append to spool/usage/*.jsonl only: claim by moving away
        os.replace(path, claimed_dir / path.name)
    for claimed in sorted(claimed_dir.glob("*.jsonl")):  # also files a crashed ingest left claimed
        result = import_usage(MemoryStore(Path(home) / "memory.duckdb"), claimed, factor)
        done.mkdir(parents=True, exist_ok=True)
        os.replace(claimed, done / claimed.name)
        files += 1
        events += result.events
    return {"files": files, "events": events}
