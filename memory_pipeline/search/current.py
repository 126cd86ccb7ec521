"""What holds now, first: superseded values of a fact ranked below the current one and marked, and reading as of
a past moment (`as_of`). Validity comes from the store (a night's supersessions, `store.validity`); among the
hits themselves two statements of one fact with different values are told apart at read time too (the same rule
as the night's, `llm.values`), so a version the night has not seen yet still reads as the older one."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from memory_pipeline.llm.values import FactKey, fact_key, versions_of
from memory_pipeline.search.hits import Hit, Hits
from memory_pipeline.search.live import reading_store
from memory_pipeline.store.validity import validity

Validity = tuple[datetime, datetime | None, str | None]


def current_first(hits: Hits, home: Path, as_of: datetime | None = None, *, drop_later: bool = True) -> Hits:
    """`hits` with what no longer held (at `as_of`, or now) marked and moved after what did (in search's order),
    the most recently replaced first; a memory stated after `as_of` is left out (`drop_later`) or kept, unmarked,
    after the rest."""
    ids = [h.id for h in hits if h.source == "store"]
    rows: dict[str, Validity] = {}
    if ids:
        with reading_store(home) as con:
            if con is not None:
                rows = validity(con, ids)
    later = [h for h in hits if as_of and h.id in rows and rows[h.id][0] > as_of]
    kept = [h for h in hits if h not in later]
    for h in hits:
        h.superseded_by = h.valid_until = ""
    for h in kept:
        if h.id in rows:
            _, until, by = rows[h.id]
            if until is not None and by and (as_of is None or until <= as_of):
                h.superseded_by, h.valid_until = by, until.isoformat(timespec="seconds")
    _versions_among(kept, rows)
    current = [h for h in kept if not h.superseded_by]
    replaced = sorted((h for h in kept if h.superseded_by), key=lambda h: h.valid_until, reverse=True)  # stable
    return Hits(current + replaced + ([] if drop_later else later), hits.notice, hits.mode)


def _versions_among(hits: list[Hit], rows: dict[str, Validity]) -> None:
    """Two current hits stating one fact with different values: the earlier stated is marked superseded by the
    later, from the later's date."""
    keyed: list[tuple[Hit, FactKey, str]] = []
    for h in hits:
        key = fact_key(h.text or h.snippet) if not h.superseded_by and h.kind != "summary" else None
        if key is not None:
            when = rows[h.id][0].isoformat(timespec="seconds") if h.id in rows else h.date
            keyed.append((h, key, when))
    keyed.sort(key=lambda t: t[2])
    for i, (old, key, _) in enumerate(keyed):
        newer = next(((n, w) for n, k, w in keyed[i + 1 :] if versions_of(key, k)), None)
        if newer is not None and not old.superseded_by:
            old.superseded_by, old.valid_until = newer[0].id, newer[1]
