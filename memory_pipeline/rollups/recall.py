"""Tiered recall (seed 002 §4): Spheres first (most abstract), then Cores, then sessions as the last resort.

Each layer is searched by cosine similarity to the query; the search stops at the first layer whose best match
clears the threshold. Sessions are long, so they are scored by their best passage (a few sentences), which keeps a
specific detail findable inside a long conversation. With the search index's scores (`stored`), each layer's
documents are shortlisted by their stored vectors and only the shortlist's passages are embedded.

Search's hybrid hits referee the tiered answer (`referee`): both are measured on search's relevance, and the
tier answers only when its best document is at least as relevant as search's best hit (or is that hit's file).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from memory_pipeline.rollups import repository
from memory_pipeline.rollups.compress import sentences
from memory_pipeline.store import MemoryStore

Embed = Callable[[Sequence[str]], np.ndarray]
LAYERS = ("sphere", "core", "session")
DEFAULT_THRESHOLD = 0.45  # MiniLM cosine; calibrated on memory_pipeline_tests/rollups/corpus.py
PASSAGE_SENTENCES = 3


@dataclass(frozen=True)
class Hit:
    layer: str
    key: str
    score: float
    path: str
    passage: str
    relevance: float | None = None  # search's relevance of the document (None: the index does not hold it)


# rel. path → (cosine, relevance) of the file's best chunk in the search index; a file absent is not indexed yet
Stored = Callable[[Sequence[str]], dict[str, tuple[float, float]]]
SHORTLIST = 8  # a layer's documents whose passages are embedded, best by their stored vectors first


@dataclass
class RecallResult:
    query: str
    threshold: float
    layer: str | None  # the layer that answered; None when nothing was stored at all
    hits: list[Hit]
    cleared: bool  # False: no layer cleared the threshold and the sessions' best is returned as a last resort
    searched: list[tuple[str, float | None]] = field(default_factory=list)  # (layer, best score or None if empty)
    tier: Hit | None = None  # the tiers' best when search's hits answer instead (`referee`)

    @property
    def best(self) -> Hit | None:
        return self.hits[0] if self.hits else None


def sphere_text(doc: dict[str, Any]) -> str:
    k = doc["abstracted_knowledge"]
    patterns = ", ".join(p["pattern"] for p in k["behavioral_patterns"])
    return f"{k['summary']} Beliefs: {' '.join(k['core_beliefs'])} Patterns: {patterns}."


def core_text(doc: dict[str, Any]) -> str:
    n = doc["compressed_narrative"]
    events = ", ".join(e["event"] for e in n["key_events"])
    return f"{n['summary']} Themes: {', '.join(n['recurring_themes'])}. Events: {events}."


def passages(text: str, size: int = PASSAGE_SENTENCES) -> list[str]:
    """Windows of `size` sentences overlapping by one; a short session is one passage."""
    sents = sentences(text) or [text.strip() or "(empty)"]
    if len(sents) <= size:
        return [" ".join(sents)]
    return [" ".join(sents[i : i + size]) for i in range(0, len(sents) - 1, max(1, size - 1))]


def _layer_docs(store: MemoryStore, home: Path, as_of: datetime | None = None) -> dict[str, list[tuple[str, str,
                                                                                                   list[str]]]]:
    """layer → [(key, path, texts to score: the best one counts)]; with `as_of`, only what was known then: a Core
    or Sphere whose last session ended by then, a session that started by then."""
    with store.connect() as con:
        spheres = repository.built_spheres(con)
        cores = repository.built_cores(con)
        sessions = con.execute("SELECT session_id, path, title, text FROM sessions WHERE started_at <= ? "
                               "ORDER BY started_at", [as_of or datetime.max]).fetchall()  # fmt: skip
        if as_of is not None:
            ended = ("SELECT core_id FROM rollup_cores WHERE timestamp_end <= ? UNION ALL "
                     "SELECT sphere_id FROM rollup_spheres WHERE timestamp_end <= ?")
            known = {str(r[0]) for r in con.execute(ended, [as_of, as_of]).fetchall()}
            spheres = [x for x in spheres if x[0] in known]
            cores = [x for x in cores if x[0] in known]
    return {
        "sphere": [(k, p, [sphere_text(d)]) for k, p, d in spheres],
        "core": [(k, p, [core_text(d)]) for k, p, d in cores],
        "session": [
            (sid, str(home / path) if not Path(path).is_absolute() else path, passages(f"{title}. {text}"))
            for sid, path, title, text in sessions
        ],
    }


def _relative(home: Path, path: str) -> str:
    p = Path(path)
    try:
        return p.relative_to(home).as_posix() if p.is_absolute() else p.as_posix()
    except ValueError:
        return p.as_posix()


def _search(layer: str, docs: list[tuple[str, str, list[str]]], q: np.ndarray, embed: Embed, top_k: int,
            home: Path, stored: Stored | None) -> list[Hit]:  # fmt: skip
    """The layer's best `top_k` by their best text's cosine. With `stored`, only the SHORTLIST documents whose
    indexed files come closest (and any the index lacks) have their texts embedded."""
    rels = [_relative(home, path) for _, path, _ in docs]
    scores = stored(rels) if stored is not None else {}
    chosen = list(range(len(docs)))
    if scores:
        held = sorted((i for i in chosen if rels[i] in scores), key=lambda i: -scores[rels[i]][0])
        chosen = sorted(held[: max(SHORTLIST, top_k)] + [i for i in chosen if rels[i] not in scores])
    texts = [t for i in chosen for t in docs[i][2]]
    owners = [i for i in chosen for _ in docs[i][2]]
    sims = _normalise(embed(texts)) @ q
    best: dict[int, tuple[float, str]] = {}
    for owner, score, text in zip(owners, sims.tolist(), texts, strict=True):
        if owner not in best or score > best[owner][0]:
            best[owner] = (score, text)
    ranked = sorted(best.items(), key=lambda kv: -kv[1][0])[:top_k]
    return [Hit(layer, docs[i][0], round(float(s), 4), docs[i][1], text,
                round(scores[rels[i]][1], 4) if rels[i] in scores else None)
            for i, (s, text) in ranked]  # fmt: skip


def _normalise(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms


def recall(
    store: MemoryStore,
    home: Path,
    query: str,
    embed: Embed,
    threshold: float = DEFAULT_THRESHOLD,
    top_k: int = 3,
    as_of: datetime | None = None,
    stored: Stored | None = None,
) -> RecallResult:
    """Search Sphere → Core → session; stop at the first layer whose best score ≥ threshold. `stored`: the search
    index's scores of whole files, to embed only each layer's shortlist (and to give each hit its relevance)."""
    if not query.strip():
        raise ValueError("recall: the query is empty")
    q = _normalise(embed([query]))[0]
    docs = _layer_docs(store, home, as_of)
    result = RecallResult(query, threshold, None, [], False)
    last: list[Hit] = []
    for layer in LAYERS:
        if not docs[layer]:
            result.searched.append((layer, None))
            continue
        hits = _search(layer, docs[layer], q, embed, top_k, home, stored)
        result.searched.append((layer, hits[0].score))
        last = hits
        if hits[0].score >= threshold:
            result.layer, result.hits, result.cleared = layer, hits, True
            return result
    if last:  # nothing cleared: the most detailed layer searched, as the seed's last resort
        result.layer, result.hits = last[0].layer, last
    return result


def referee(result: RecallResult, found: Sequence[Hit], top_k: int = 3) -> RecallResult:
    """Search's hits (`found`, best first, `score` = search's relevance) against the tiered answer, on search's one
    scale of relevance: the tier keeps its answer when its best document is at least as relevant as search's best
    hit, or is that hit's own file; otherwise search answers (layer "search"): its hits in its own order, each
    tier hit placed before the first of them it is more relevant than. A tier document the index does not hold yet
    counts 0 on that scale."""
    if not found:
        return result
    top, tier = found[0], result.best
    if tier is not None and result.cleared and (tier.path == top.path or (tier.relevance or 0.0) >= top.score):
        return result
    tiers = sorted((Hit(h.layer, h.key, h.relevance or 0.0, h.path, h.passage, h.relevance)
                    for h in result.hits if all(h.path != f.path for f in found)), key=lambda h: -h.score)  # fmt: skip
    ranked: list[Hit] = []
    for f in found:  # search's own order kept; a tier hit goes in before the first search hit it is more relevant than
        while tiers and tiers[0].score > f.score:
            ranked.append(tiers.pop(0))
        ranked.append(f)
    ranked += tiers
    return RecallResult(result.query, result.threshold, "search", ranked[:top_k], True, [*result.searched,
                        ("search", top.score)], tier=tier)  # fmt: skip
