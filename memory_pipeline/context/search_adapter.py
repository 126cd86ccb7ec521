"""P3's source: issue 17's hybrid search as the compiler's `Search`, and its usage spool as `RecordUsage`.

Search's calibrated floor decides whether anything relevant is stored (if not, P3 stays empty); when something
is, the whole ranking is offered and the compiler decides what fits (issue 20: stopping at the floor left most
of a 2,000-token budget empty on LoCoMo). Inclusions go to the usage spool in the background (never blocking a turn,
never contending with the nightly writer)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memory_pipeline.context.compiler import Knowledge, Search
from memory_pipeline.context.service import RecordUsage
from memory_pipeline.search import SearchInputError, search, usage_spool


def default_search(home: Path, embedder: object | None = None, floor: float | None = None) -> Search:
    """`floor`: search's abstention floor (None: its calibrated default)."""

    def run(query: str, k: int) -> list[Knowledge]:
        try:
            hits = search(query[:4096], k, home=home, embedder=embedder, floor=floor)  # type: ignore[arg-type]
            if hits and len(hits) < k and floor != 0.0:
                # the floor answered "is anything relevant?" (issue 20): yes, so the rest of the ranking is
                # knowledge too and the compiler's own MIN_SCORE and budget decide what goes in
                hits = search(query[:4096], k, home=home, embedder=embedder, floor=0.0)  # type: ignore[arg-type]
        except SearchInputError:
            return []
        return [
            Knowledge(
                text=h.snippet,
                score=h.score,
                kind=h.kind,
                memory_id=h.id if h.source == "store" else None,
                path=None if h.source == "store" else h.id,
                date=h.date or None,
            )
            for h in hits
        ]

    return run


def usage_recorder(home: Path, background: bool = False) -> RecordUsage:
    """`background`: a server queues the batch and returns at once; a CLI process appends before it exits."""

    def record(memory_ids: Sequence[str]) -> None:
        if background:
            usage_spool.append_later(home, list(memory_ids))
        else:
            usage_spool.append_now(home, list(memory_ids))

    return record
