"""Watchers (seed 001 §4): Tier 1 pattern match, Tier 2 similarity, and output-triggered steering.

Tier 1 is free (regexes, keyword lists, globs on tool-call paths, URLs, mentions, webhook/cron events); a
topic's own regular expressions run with a time bound (`memory_pipeline.context.patterns`): one that exceeds it
is skipped for that text and reported as a `SlowTrigger`, the others still fire.
Tier 2 scores the message against each topic's text with TF-IDF cosine, as the seed writes it
(scikit-learn's TfidfVectorizer fitted on the topics). Tier 3, the gate, is `memory_pipeline.context.gate`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from memory_pipeline.context.patterns import PatternTimeout, search_bounded
from memory_pipeline.context.topics import Topic, Trigger

if TYPE_CHECKING:  # scikit-learn is imported when a scorer is fitted: the CLI's start-up stays light
    from sklearn.feature_extraction.text import TfidfVectorizer

_URL = re.compile(r"https?://[^\s<>\"')]+", re.I)
_PATHLIKE = re.compile(r"[\w./~-]+\.\w{1,8}\b")
_PATH_RUN = re.compile(r"[\w./~-]+")


def _pathlike(text: str) -> list[str]:
    """`_PATHLIKE.findall(text)` in linear time: findall retries every start of a long run of path characters
    with no extension in it (quadratic: seconds for a 64 KB message). One match per maximal run, from its
    start, finds the same strings: the greedy run ends at the run's last `.ext`, and any later start matches
    only if the run's start does."""
    found = (_PATHLIKE.match(run.group()) for run in _PATH_RUN.finditer(text))
    return [m.group() for m in found if m]


@dataclass(frozen=True)
class Event:
    """A non-message trigger payload: a webhook (`source`, `event`) or a cron tick (`schedule`)."""

    type: str  # "webhook" | "cron"
    source: str = ""
    event: str = ""
    schedule: str = ""


@dataclass(frozen=True)
class SlowTrigger:
    """A topic's pattern that ran past its time bound on one text; `line` is what a person reads."""

    topic: Topic
    trigger: Trigger
    seconds: float
    text: str  # "message" or "agent output": what it was matched against

    @property
    def line(self) -> str:
        return (f"{self.topic.path}: field {self.trigger.where or 'match'!r}: pattern {self.trigger.match!r} ran "
                f"longer than {self.seconds:g} s on the {self.text}, so this trigger was skipped for this turn; "
                "rewrite it without nested repetition such as (a+)+ or (a|aa)+")


def _fires(trigger: Trigger, text: str, paths: Sequence[str], events: Sequence[Event]) -> bool:
    """Whether one trigger fires; raises `PatternTimeout` when its pattern runs past the time bound."""
    kind = trigger.type
    if kind == "pattern":
        return search_bounded(trigger.match, (text,))
    if kind == "keywords":
        return any(re.search(rf"\b{re.escape(w)}\b", text, re.I) for w in trigger.keywords)
    if kind == "glob":
        candidates = [*paths, *_pathlike(text)]
        return any(fnmatch.fnmatch(p, trigger.match) or fnmatch.fnmatch(p.rsplit("/", 1)[-1], trigger.match)
                   for p in candidates)
    if kind == "url":
        return search_bounded(trigger.match, _URL.findall(text))
    if kind == "mention":
        name = trigger.match.lstrip("@")
        return re.search(rf"(?<![\w@])@?{re.escape(name)}\b", text, re.I) is not None
    if kind == "webhook":
        return any(e.type == "webhook" and e.source == trigger.source and trigger.event in ("", e.event)
                   for e in events)
    return any(e.type == "cron" and e.schedule == trigger.schedule for e in events)  # cron


def _fires_bounded(
    topic: Topic,
    trigger: Trigger,
    text: str,
    paths: Sequence[str],
    events: Sequence[Event],
    slow: list[SlowTrigger] | None,
    what: str,
) -> bool:
    """`_fires`, with a pattern past its time bound counted as not firing (and added to `slow`)."""
    try:
        return _fires(trigger, text, paths, events)
    except PatternTimeout as exc:
        if slow is not None:
            slow.append(SlowTrigger(topic, trigger, exc.seconds, what))
        return False


def tier1_matches(
    topics: Iterable[Topic],
    message: str,
    *,
    tool_paths: Sequence[str] = (),
    events: Sequence[Event] = (),
    slow: list[SlowTrigger] | None = None,
) -> set[str]:
    """Names of the topics whose input (or both-scope) triggers fire on the message, its tool-call paths or
    the events that came with it. A pattern that runs past its time bound does not fire; it is appended to
    `slow` when given."""
    return {
        t.name
        for t in topics
        if any(tr.scope in ("input", "both") and _fires_bounded(t, tr, message, tool_paths, events, slow, "message")
               for tr in t.triggers)
    }


def output_corrections(
    topics: Iterable[Topic], agent_output: str, slow: list[SlowTrigger] | None = None
) -> list[tuple[str, str]]:
    """Seed 001 §4.3: `(topic, correction hint)` for every output-scope trigger the agent's own output fires,
    so the topic's correction is injected on the next turn. Slow patterns as in `tier1_matches`."""
    hits: list[tuple[str, str]] = []
    for t in topics:
        for tr in t.triggers:
            if tr.scope in ("output", "both") and _fires_bounded(t, tr, agent_output, (), (), slow, "agent output"):
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
            from sklearn.feature_extraction.text import TfidfVectorizer

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
