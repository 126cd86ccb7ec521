"""Key-centred clusters (seed 004 §3.1–3.2), the second cluster source beside embedding similarity.

1. Hot compaction keys: among old memories, take the best compaction candidates (highest seed-004 score:
   oldest, least used) and count their nexus keys; hottest first (count, then key name).
2. For each hot key: the not-yet-taken memories carrying it, grouped by a deterministic window bucket (UTC
   day, or ISO week starting Monday); inside a bucket, members by score (then id) into chunks capped at
   `max_members` and `max_tokens`; a chunk with at least `min_members` becomes a cluster and its members are
   taken (one memory joins at most one cluster per night).
Same input, same clusters: every choice is ordered by values, never by dict or set iteration order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

WINDOWS = ("day", "week")


@dataclass(frozen=True)
class Candidate:
    id: str
    created_at: datetime
    nexus_keys: tuple[str, ...]
    tokens: int
    score: float


@dataclass(frozen=True)
class KeyClusterParams:
    window: str = "week"
    min_members: int = 3
    max_members: int = 25
    max_tokens: int = 3000
    seed_count: int = 200  # how many top candidates vote for hot keys
    min_age_days: int = 7  # "older memories" for the vote (members may be younger, down to the freshness cut)
    max_hot_keys: int = 64
    max_clusters: int = 100
    key_prefixes: tuple[str, ...] = ()  # only keys starting with one of these (e.g. ("spam:",)); empty = all

    def __post_init__(self) -> None:
        if self.window not in WINDOWS:
            raise ValueError(f"key cluster window must be one of {', '.join(WINDOWS)}, got {self.window!r}")
        if self.min_members < 2 or self.max_members < self.min_members:
            raise ValueError(f"need 2 ≤ min_members ≤ max_members, got {self.min_members}, {self.max_members}")


@dataclass(frozen=True)
class KeyCluster:
    key: str
    window_start: date
    member_ids: tuple[str, ...]  # sorted
    tokens: int
    heat: int
    extra: dict[str, object] = field(default_factory=dict)


def window_start(ts: datetime, window: str) -> date:
    """The bucket an instant falls in: its UTC day, or the Monday of its ISO week."""
    day = ts.date()
    return day if window == "day" else day - timedelta(days=day.weekday())


def _allowed(key: str, prefixes: tuple[str, ...]) -> bool:
    return not prefixes or key.startswith(prefixes)


def hot_keys(candidates: Sequence[Candidate], as_of: date, params: KeyClusterParams) -> list[tuple[str, int]]:
    """(key, votes) from the top `seed_count` old candidates by score; keys with fewer than 2 votes cannot
    seed a cluster of ≥ 2 and are left out."""
    old = [c for c in candidates if (as_of - c.created_at.date()).days >= params.min_age_days]
    seeds = sorted(old, key=lambda c: (-c.score, c.id))[: params.seed_count]
    votes = Counter(k for c in seeds for k in set(c.nexus_keys) if _allowed(k, params.key_prefixes))
    ranked = sorted(((k, n) for k, n in votes.items() if n >= 2), key=lambda kv: (-kv[1], kv[0]))
    return ranked[: params.max_hot_keys]


def key_clusters(
    candidates: Sequence[Candidate],
    as_of: date,
    params: KeyClusterParams,
    exclude: frozenset[str] | set[str] = frozenset(),
) -> list[KeyCluster]:
    """Clusters in creation order (hottest key first, then window, then chunk)."""
    pool = {c.id: c for c in candidates if c.id not in exclude}
    by_key: dict[str, list[Candidate]] = defaultdict(list)
    for c in sorted(pool.values(), key=lambda c: c.id):
        for k in set(c.nexus_keys):
            by_key[k].append(c)
    out: list[KeyCluster] = []
    for key, heat in hot_keys(list(pool.values()), as_of, params):
        buckets: dict[date, list[Candidate]] = defaultdict(list)
        for c in by_key.get(key, []):
            if c.id in pool:
                buckets[window_start(c.created_at, params.window)].append(c)
        for start in sorted(buckets):
            ranked = sorted(buckets[start], key=lambda c: (-c.score, c.id))
            while len(ranked) >= params.min_members and len(out) < params.max_clusters:
                chosen: list[Candidate] = []
                tokens = 0
                for c in ranked:
                    if len(chosen) >= params.max_members:
                        break
                    if tokens + c.tokens > params.max_tokens:
                        continue
                    chosen.append(c)
                    tokens += c.tokens
                if len(chosen) < params.min_members:
                    break
                out.append(KeyCluster(key, start, tuple(sorted(c.id for c in chosen)), tokens, heat))
                taken = {c.id for c in chosen}
                for cid in taken:
                    del pool[cid]
                ranked = [c for c in ranked if c.id not in taken]
            if len(out) >= params.max_clusters:
                return out
    return out
