"""Watchers (seed 001 §4): Tier 1 pattern match, Tier 2 similarity, and output-triggered steering.

Tier 1 is free (regexes, keyword lists, globs on tool-call paths, URLs, mentions, webhook/cron events);
Tier 2 scores the message against each topic's text with TF-IDF cosine, as the seed writes it
(scikit-learn's TfidfVectorizer fitted on the topics). Tier 3, the gate, is `memory_pipeline.context.gate`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from memory_pipeline.context.topics import Topic, Trigger

_URL = re.compile(r"https?://[^\s<>\"')]+", re.I)
_PATHLIKE = re.compile(r"[\w./~-]+\.\w{1,8}\b")


@dataclass(frozen=True)
class Event:
    """A non-message trigger payload: a webhook (`source`, `event`) or a cron tick (`schedule`)."""

    type: str  # "webhook" | "cron"
    source: str = ""
    event: str = ""
    schedule: str = ""


def _fires(trigger: Trigger, text: str, paths: Sequence[str], events: Sequence[Event]) -> bool:
    kind = trigger.type
    if kind == "pattern":
        return re.search(trigger.match, text, re.I) is not None
    if kind == "keywords":
        return any(re.search(rf"\b{re.escape(w)}\b", text, re.I) for w in trigger.keywords)
    if kind == "glob":
        candidates = [*paths, *_PATHLIKE.findall(text)]
        return any(fnmatch.fnmatch(p, trigger.match) or fnmatch.fnmatch(p.rsplit("/", 1)[-1], trigger.match)
                   for p in candidates)
    if kind == "url":
        return any(re.search(trigger.match, url, re.I) for url in _URL.findall(text))
    if kind == "mention":
        name = trigger.match.lstrip("@")
        return re.search(rf"(?<![\w@])@?{re.escape(name)}\b", text, re.I) is not None
    if kind == "webhook":
        return any(e.type == "webhook" and e.source == trigger.source and trigger.event in ("", e.event)
                   for e in events)
    return any(e.type == "cron" and e.schedule == trigger.schedule for e in events)  # cron


def tier1_matches(
    topics: Iterable[Topic],
    message: str,
    *,
    tool_paths: Sequence[str] = (),
    events: Sequence[Event] = (),
) -> set[str]:
    """Names of the topics whose input (or both-scope) triggers fire on the message, its tool-call paths or
    the events that came with it."""
    return {
        t.name
        for t in topics
        if any(tr.scope in ("input", "both") and _fires(tr, message, tool_paths, events) for tr in t.triggers)
    }


def output_corrections(topics: Iterable[Topic], agent_output: str) -> list[tuple[str, str]]:
    """Seed 001 §4.3: `(topic, correction hint)` for every output-scope trigger the agent's own output fires,
    so the topic's correction is injected on the next turn."""
    hits: list[tuple[str, str]] = []
    for t in topics:
        for tr in t.triggers:
            if tr.scope in ("output", "both") and _fires(tr, agent_output, (), ()):
                hits.append((t.name, tr.correction_hint or f"follow the `{t.name}` topic's instructions"))
                break
    return hits


@lru_cache(maxsize=32)
def scorer_for(topics: tuple[Topic, ...]) -> SimilarityScorer:
    """One fitted scorer per set of topics (fitting TF-IDF on every turn would cost more than the turn)."""
    return SimilarityScorer(topics)


class SimilarityScorer:
    """Tier 2: TF-IDF cosine between a message and each topic's title, instructions and keywords."""

    def __init__(self, topics: Sequence[Topic]) -> None:
        self.names = [t.name for t in topics]
        self._vectorizer: TfidfVectorizer | None = None
        if topics:
            texts = [f"{t.title} {t.instructions} {' '.join(t.keywords)}" for t in topics]
            self._vectorizer = TfidfVectorizer(max_features=5000, sublinear_tf=True, stop_words="english")
            try:
                self._matrix = self._vectorizer.fit_transform(texts)
            except ValueError:  # every topic text is stop words: nothing to score against
                self._vectorizer = None

    def scores(self, message: str) -> dict[str, float]:
        """Cosine in [0, 1] per topic (rows are L2-normalised, so a dot product is the cosine)."""
        if self._vectorizer is None or not message.strip():
            return dict.fromkeys(self.names, 0.0)
        vec = self._vectorizer.transform([message])
        sims = np.asarray((self._matrix @ vec.T).todense()).ravel()
        return {name: float(min(1.0, max(0.0, s))) for name, s in zip(self.names, sims, strict=True)}
