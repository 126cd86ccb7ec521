"""Pure ranking arithmetic: absolute BM25, fusion (linear 0.4/0.6 and RRF), recency, reference boost,
importance, snippets. Numbers in ranking.json, not here."""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from memory_pipeline.search.index import K1, B

RANKING_FILE = Path(__file__).with_name("ranking.json")


@dataclass(frozen=True)
class Ranking:
    fusion: str = "linear"
    bm25_weight: float = 0.4
    vector_weight: float = 0.6
    rrf_k: int = 60
    candidates: int = 200
    floor: float = 0.20
    recency_per_day: float = 0.1
    recency_weight: float = 0.0
    reference_per_use: float = 0.1
    reference_cap: float = 10
    importance_cap: float = 2.0
    importance_exponent: float = 0.25
    snippet_chars: int = 300
    max_query_chars: int = 4096
    max_k: int = 1000
    # a capitalised query word found in at least this share of the documents is left out of the text the
    # embedder reads (0: off); see vector_query
    vector_query_common: float = 0.0
    # an archived source moved just below its summary (seed 000 §9.2); the context compiler may read by relevance
    abstractions_first: bool = True
    # relevance (what the floor reads) counts the query words no document holds in its BM25 ceiling
    unseen_words: bool = True
    # the query is answered only when a hit over the floor also reaches this with relevance's vector part less the
    # memory's highest cosine to everyday questions on any subject, max(cos − b, 0) (a hub is close to all of
    # them); 0: off
    background_gate: float = 0.0
    # BM25's weight in the gate's value (its vector part keeps `vector_weight`)
    gate_bm25_weight: float = 0.4
    # a question with focus words is answered only when one of its top hits holds one, or reaches
    # `focus_rescue` with the background gate's value (search/focus.py; "": off)
    focus_gate: str = ""
    focus_share: float = 0.05
    focus_rescue: float | None = None
    # the fitted gate over all the signals (search/confidence.py): True, False, or None for its model file's choice
    combined_gate: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def with_(self, **changes: Any) -> Ranking:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def load_ranking(path: Path = RANKING_FILE) -> Ranking:
    """The file's settings, read again only when it changed (every search asks)."""
    st = path.stat()
    return _ranking_of(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=8)
def _ranking_of(path: str, _mtime_ns: int, _size: int) -> Ranking:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    known = {f for f in Ranking.__dataclass_fields__ if f != "extra"}
    return Ranking(**{k: v for k, v in data.items() if k in known})


def bm25_ceiling(idf: Sequence[float]) -> float:
    """The highest BM25 any document can reach for these query terms: Σ idf (bm25s' Lucene variant scores
    idf·tf/(tf + k1·norm), below idf per term). Dividing by it makes BM25 absolute (0..1), comparable across
    queries, which an abstention floor needs."""
    return float(sum(idf)) or 1.0


def bm25_one(doc_tokens: Sequence[str], query_ids: dict[str, float], avgdl: float) -> float:
    """BM25 of one document exactly as bm25s' Lucene variant scores it, with the index's idf (for the
    fresh-write delta and the segment)."""
    if not query_ids:
        return 0.0
    tf = Counter(doc_tokens)
    dl = len(doc_tokens)
    score = 0.0
    for term, idf in query_ids.items():
        f = tf.get(term, 0)
        if f:
            score += idf * f / (f + K1 * (1.0 - B + B * dl / max(avgdl, 1e-9)))
    return score


def linear(bm25_abs: np.ndarray, cosine: np.ndarray, r: Ranking) -> np.ndarray:
    """Seed 001 §6.3/§7.3 weights on absolute parts: 0.4·BM25/ceiling + 0.6·max(cos, 0)."""
    return r.bm25_weight * bm25_abs + r.vector_weight * np.maximum(cosine, 0.0)


def rrf(bm25_abs: np.ndarray, cosine: np.ndarray, r: Ranking) -> np.ndarray:
    """Reciprocal-rank fusion over the candidate set: Σ 1/(k + rank); a document absent from BM25 (score 0)
    gets no BM25 term. Scaled so the best possible value is 1."""
    n = len(cosine)
    if n == 0:
        return np.zeros(0)
    out = np.zeros(n)
    for scores in (bm25_abs, cosine):
        order = np.argsort(-scores, kind="stable")
        ranks = np.empty(n)
        ranks[order] = np.arange(1, n + 1)
        out += np.where(scores > 0, 1.0 / (r.rrf_k + ranks), 0.0)
    return out / (2.0 / (r.rrf_k + 1))


def recency(age_days: np.ndarray, r: Ranking) -> np.ndarray:
    """Seed 001 §6.3 decay exp(-0.1·days), blended: (1 - w) + w·decay (w = 1 is the seed's exact rule)."""
    decay = np.exp(-r.recency_per_day * np.maximum(age_days, 0.0))
    return (1.0 - r.recency_weight) + r.recency_weight * decay


def reference_boost(usage: np.ndarray, r: Ranking) -> np.ndarray:
    """Seed 001 §6.3 frequency boost 1 + 0.1·references, the references being the decayed inclusion count
    of seed 004 §9 (capped so one hot memory cannot drown relevance)."""
    return 1.0 + r.reference_per_use * np.minimum(np.maximum(usage, 0.0), r.reference_cap)


def importance_factor(importance: np.ndarray, r: Ranking) -> np.ndarray:
    """Below 1, √importance: an archived source (0.5, seed 000 §9.2) weighs 0.71 of an ordinary memory.
    Above 1, importance^0.25 (capped): a gentle lift, so a high-importance memory that is only loosely related
    cannot outrank the one that answers the query (measured on the sample workspace)."""
    imp = np.clip(importance, 0.05, r.importance_cap)
    return np.where(imp < 1.0, np.sqrt(imp), imp**r.importance_exponent)


_CAPITALISED = re.compile(r"\b([A-Z][a-z]+)(['’]s)?\b")


def idf_share(idf: float, n: int) -> float:
    """The share of `n` documents that hold a term, from its BM25 idf = ln(1 + (n - df + ½)/(df + ½))."""
    x = math.exp(idf) - 1.0
    return max(0.0, (n + 0.5 - 0.5 * x) / (x + 1.0)) / max(n, 1)


def vector_query(query: str, share: Callable[[str], float], threshold: float) -> str:
    """The query as the embedder reads it: capitalised words found in ≥ `threshold` of the documents (the
    agent's own name, a conversation's speakers) left out. They tell nothing about which memory is meant but
    dominate a small encoder's sentence vector, so short chit-chat that merely names the person outranked the
    memory that answers (measured on LoCoMo: benchmarks/read_path_rule.md). BM25 still reads every word; the
    whole query is kept when nothing else would be left."""
    if threshold <= 0:
        return query
    out = _CAPITALISED.sub(lambda m: "" if share(m.group(1)) >= threshold else m.group(0), query)
    out = " ".join(out.split())
    return out if re.search(r"[^\W_]", out) else query


_WORD = re.compile(r"\w\w+", re.UNICODE)


def snippet(text: str, query: str, limit: int) -> str:
    """The window of `text` with the most query words, cut at word boundaries."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    words = {w.lower() for w in _WORD.findall(query) if len(w) > 2}
    best, best_at = -1, 0
    step = max(20, limit // 4)
    for start in range(0, max(1, len(flat) - limit + step), step):
        window = flat[start : start + limit].lower()
        hits = sum(1 for w in words if w in window)
        if hits > best:
            best, best_at = hits, start
    cut = flat[best_at : best_at + limit]
    if best_at > 0:
        cut = "…" + cut.split(" ", 1)[-1]
    if best_at + limit < len(flat):
        cut = cut.rsplit(" ", 1)[0] + "…"
    return cut


def age_days(dates: np.ndarray, now: float) -> np.ndarray:
    return (now - dates) / 86400.0


def clamp01(x: float) -> float:
    return 0.0 if math.isnan(x) else max(0.0, min(1.0, x))
