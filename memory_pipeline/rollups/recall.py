"""Tiered recall (seed 002 §4): Spheres first (most abstract), then Cores, then sessions as the last resort.

Each layer is embedded with the shared embedder and searched by cosine similarity; the search stops at the
first layer whose best match clears the threshold. Sessions are long, so they are scored by their best
passage (a few sentences), which keeps a specific detail findable inside a long conversation.
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


@dataclass
class RecallResult:
    query: str
    threshold: float
    layer: str | None  # the layer that answered; None when nothing was stored at all
    hits: list[Hit]
    cleared: bool  # False: no layer cleared the threshold and the sessions' best is returned as a last resort
    searched: list[tuple[str, float | None]] = field(default_factory=list)  # (layer, best score or None if empty)

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


def _search(layer: str, docs: list[tuple[str, str, list[str]]], q: np.ndarray, embed: Embed, top_k: int) -> list[Hit]:
    texts = [t for _, _, ts in docs for t in ts]
    owners = [i for i, (_, _, ts) in enumerate(docs) for _ in ts]
    vectors = _normalise(embed(texts))
    scores = vectors @ q
    best: dict[int, tuple[float, str]] = {}
    for owner, score, text in zip(owners, scores.tolist(), texts, strict=True):
        if owner not in best or score > best[owner][0]:
            best[owner] = (score, text)
    ranked = sorted(best.items(), key=lambda kv: -kv[1][0])[:top_k]
    return [Hit(layer, docs[i][0], round(float(s), 4), docs[i][1], text) for i, (s, text) in ranked]


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
) -> RecallResult:
    """Search Sphere → Core → session; stop at the first layer whose best score ≥ threshold."""
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
        hits = _search(layer, docs[layer], q, embed, top_k)
        result.searched.append((layer, hits[0].score))
        last = hits
        if hits[0].score >= threshold:
            result.layer, result.hits, result.cleared = layer, hits, True
            return result
    if last:  # nothing cleared: the most detailed layer searched, as the seed's last resort
        result.layer, result.hits = last[0].layer, last
    return result
