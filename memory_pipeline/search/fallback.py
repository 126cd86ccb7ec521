"""Seed 001 §7.4: the index is an optimisation, not a requirement. When it cannot be built (the store busy,
the disk full), a plain keyword scan of the store and the files answers — rare words weigh more than common
ones (each term's inverse document frequency over what was scanned) — and the caller is told why."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from memory_pipeline.search.documents import all_file_docs, store_docs
from memory_pipeline.search.hits import NOTHING, Filters, Hits, make_hit
from memory_pipeline.search.scoring import Ranking, importance_factor

_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)


def _terms(query: str) -> list[str]:
    from memory_pipeline.search.tokens import STOPWORDS

    return list(dict.fromkeys(w for w in (m.lower() for m in _WORD.findall(query)) if w not in STOPWORDS))[:32]


def search_plain(
    home: Path,
    query: str,
    k: int,
    filters: Filters,
    check_choice: Callable[[str | None, set[str], str], None],
    r: Ranking,
    now_ts: float,
    notice: str,
) -> Hits:

    terms = _terms(query)
    docs = all_file_docs(home)
    path = home / "memory.duckdb"
    if path.exists():
        try:
            con = duckdb.connect(str(path), read_only=True)
        except duckdb.Error:
            con = None
            notice += "; store busy, files only"
        if con is not None:
            try:
                docs = store_docs(con) + docs
            except duckdb.Error:
                pass
            finally:
                con.close()
    from memory_pipeline.search.live import spool_doc
    from memory_pipeline.store.spool import pending

    spool = pending(home)  # agents' writes not in the store yet: remembered ones found, forgotten ones hidden
    have = {d.key for d in docs if d.source == "store"}
    docs = [d for d in docs if d.key not in spool.forgotten] + [
        spool_doc(r) for rid, r in spool.records.items() if rid not in have and rid not in spool.forgotten
    ]
    check_choice(filters.category, {c for d in docs for c in d.categories}, "category")
    check_choice(filters.kind, {d.kind for d in docs} | {"memory"}, "kind")
    if not terms:
        return Hits([], f"{notice}; {NOTHING}", mode="fallback")
    need = max(1, math.ceil(len(terms) / 2))
    kept = [(d, d.text.lower()) for d in docs if filters.keep(d)]
    df = {t: sum(1 for _, text in kept if t in text) for t in terms}
    idf = {t: math.log(1.0 + (len(kept) - n + 0.5) / (n + 0.5)) for t, n in df.items()}
    total = sum(idf.values()) or 1.0
    scored: list[tuple[float, Any, float]] = []
    for d, text in kept:
        matched = [t for t in terms if t in text]
        if len(matched) >= need:
            rel = sum(idf[t] for t in matched) / total
            imp = float(importance_factor(np.array([d.importance]), r)[0])
            scored.append((rel * imp, d, rel))
    scored.sort(key=lambda s: -s[0])
    hits = [
        make_hit(
            d,
            query,
            score,
            {"keyword": round(rel, 4), "importance": round(score / rel, 4)},
            r,
            d.lifecycle,
            d.archived_by,
        )
        for score, d, rel in scored[:k]
    ]
    return Hits(hits, notice if hits else f"{notice}; {NOTHING}", mode="fallback")
