"""How well whole files the index holds match a query, read from the index's stored vectors and postings: each
file's best chunk by cosine and by search's relevance (the scale search's floor and `recall`'s referee read).

Recall asks this of every session, Core and Sphere on each call: nothing is embedded here but the query."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory_pipeline.search.index import Encode, LoadedIndex, tokenize
from memory_pipeline.search.live import index_for, query_vector
from memory_pipeline.search.scoring import Ranking, bm25_ceiling, linear, load_ranking


@dataclass(frozen=True)
class FileScore:
    cosine: float  # the best chunk's cosine to the whole query (the index's model)
    relevance: float  # the best chunk's relevance as search measures it: BM25 share and cosine, fused linearly


def floor_scale(idx: LoadedIndex, q_tokens: Sequence[str], idf: dict[str, float], n_all: int, r: Ranking) -> float:
    """The BM25 share's scale: a query word no document holds counts in the ceiling at the highest idf a word can
    have, so a question about something never stored is not judged by its commonest words alone."""
    ceiling = bm25_ceiling(list(idf.values()))
    unseen = sum(1 for t in q_tokens if t not in idf) if r.unseen_words else 0
    return ceiling / (ceiling + unseen * float(np.log(1.0 + (n_all + 0.5) / 0.5)))


def file_scores(home: Path, query: str, paths: Sequence[str], embedder: tuple[Encode, str],
                ranking: Ranking | None = None) -> dict[str, FileScore]:  # fmt: skip
    """path (relative to the workspace, as the index keeps it) → its best chunk's scores, for every file of
    `paths` the index holds (a file written since the index's last update is absent: the caller embeds it)."""
    r = ranking or load_ranking()
    encode, model = embedder
    idx, _, _ = index_for(home, encode, model)
    if idx is None or not paths or not query.strip():
        return {}
    found = idx.chunks_of(list(dict.fromkeys(paths)))
    if not found:
        return {}
    q_tokens = [t for t in dict.fromkeys(tokenize([query])[0]) if t]
    idf, bm25 = idx.bm25(q_tokens)
    ceiling = bm25_ceiling(list(idf.values()))
    scale = floor_scale(idx, q_tokens, idf, idx.n_live, r)
    whole = query_vector(encode, model, query)
    chunks = list(found)
    seg = np.array([found[c][0] for c in chunks], np.int64)
    row = np.array([found[c][1] for c in chunks], np.int64)
    bm, cos = np.zeros(len(chunks)), np.zeros(len(chunks))
    for s in np.unique(seg).tolist():
        at = np.flatnonzero(seg == s)
        bm[at] = bm25.of(s, row[at])
        cos[at] = idx.segments[s].cosine_of(row[at], whole)
    rel = linear(bm / ceiling * scale, cos, r)
    out: dict[str, FileScore] = {}
    for chunk, c, v in zip(chunks, cos.tolist(), rel.tolist(), strict=True):
        path = chunk.rsplit("#", 1)[0]
        had = out.get(path)
        out[path] = FileScore(max(c, had.cosine), max(v, had.relevance)) if had else FileScore(c, v)
    return out
