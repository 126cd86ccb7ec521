"""Seed 004 §2 candidate score: old and unused → high; pinned and human-authored → low; raw spam → high.

    score(m) = a·age_days − b·included_count_decay − c·pinned − d·human_authored + e·spam_raw

Memories are never compacted one by one on this score; it seeds key-centred clusters (key_clusters.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from memory_pipeline.graph.usage import DEFAULT_FACTOR, UsageState, decayed_as_of

SPAM_KEY_PREFIX = "spam:"  # seed's cluster.spam_family_id as a nexus key: spam:<family>
SPAM_TAG = "spam"  # or a tag spam / spam/<family>


@dataclass(frozen=True)
class ScoreWeights:
    age: float = 1.0  # a, per whole day of age
    usage: float = 2.0  # b, per decayed inclusion
    pinned: float = 100.0  # c
    human_authored: float = 10.0  # d
    spam_raw: float = 5.0  # e


def is_spam_raw(tags: Iterable[str], nexus_keys: Iterable[str], kind: str = "observation") -> bool:
    """A raw (not yet summarised) member of a spam family."""
    if kind in ("summary", "aggregate"):
        return False
    return any(k.startswith(SPAM_KEY_PREFIX) for k in nexus_keys) or any(
        t == SPAM_TAG or t.startswith(SPAM_TAG + "/") for t in tags
    )


def spam_family(tags: Iterable[str], nexus_keys: Iterable[str]) -> str | None:
    """The family key (`spam:<family>`; a tag spam/<family> maps to the same key), if any."""
    for k in sorted(nexus_keys):
        if k.startswith(SPAM_KEY_PREFIX):
            return k
    for t in sorted(tags):
        if t.startswith(SPAM_TAG + "/"):
            return SPAM_KEY_PREFIX + t[len(SPAM_TAG) + 1 :]
    return None


def age_days(created: date, as_of: date) -> int:
    """Whole day buckets, so the score does not move with the hour of the run."""
    return max(0, (as_of - created).days)


def candidate_score(
    *,
    created: date,
    as_of: date,
    usage: UsageState,
    pinned: bool,
    human_authored: bool,
    spam_raw: bool,
    weights: ScoreWeights = ScoreWeights(),
    factor: float = DEFAULT_FACTOR,
) -> float:
    w = weights
    return round(
        w.age * age_days(created, as_of)
        - w.usage * decayed_as_of(usage, as_of, factor)
        - w.pinned * float(pinned)
        - w.human_authored * float(human_authored)
        + w.spam_raw * float(spam_raw),
        9,
    )
