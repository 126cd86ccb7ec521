"""Hub protection (seed 004 §10) with the seed's cheap centrality proxy: how many hot keys' neighbour lists
a memory appears in. Hot keys = the `top_keys` keys carried by the most active memories (the digest's
top-k); a key's neighbour list = the `list_size` memories retrieval would return first for it (most used,
then most important, then newest, then id). A memory in ≥ `min_lists` lists is a hub: it is never archived
raw — its cluster's summary keeps all of its keys, or it is pinned (policy)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

POLICIES = ("summarise", "pin")


@dataclass(frozen=True)
class KeyHolder:
    id: str
    nexus_keys: tuple[str, ...]
    usage: float  # decayed inclusions as of the run's day
    importance: float
    created_at: datetime


@dataclass(frozen=True)
class HubParams:
    top_keys: int = 32
    list_size: int = 8
    min_lists: int = 3
    policy: str = "summarise"

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"hub policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")


@dataclass(frozen=True)
class Hub:
    id: str
    centrality: int
    keys: tuple[str, ...]  # the hot keys whose lists it is in, sorted


def top_keys(holders: Sequence[KeyHolder], k: int) -> list[str]:
    degree = Counter(key for h in holders for key in set(h.nexus_keys))
    return [key for key, _ in sorted(degree.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


def neighbour_lists(holders: Sequence[KeyHolder], keys: Sequence[str], size: int) -> dict[str, list[str]]:
    wanted = set(keys)
    carriers: dict[str, list[KeyHolder]] = defaultdict(list)
    for h in holders:
        for key in set(h.nexus_keys) & wanted:
            carriers[key].append(h)
    rank = lambda h: (-h.usage, -h.importance, -h.created_at.timestamp(), h.id)  # noqa: E731
    return {key: [h.id for h in sorted(carriers[key], key=rank)[:size]] for key in keys}


def find_hubs(holders: Sequence[KeyHolder], params: HubParams = HubParams()) -> list[Hub]:
    """Hubs by centrality (highest first, then id)."""
    lists = neighbour_lists(holders, top_keys(holders, params.top_keys), params.list_size)
    appears: dict[str, list[str]] = defaultdict(list)
    for key, ids in lists.items():
        for mid in ids:
            appears[mid].append(key)
    hubs = [Hub(mid, len(keys), tuple(sorted(keys))) for mid, keys in appears.items() if len(keys) >= params.min_lists]
    return sorted(hubs, key=lambda h: (-h.centrality, h.id))
