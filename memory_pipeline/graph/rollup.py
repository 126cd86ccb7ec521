"""Rolled-up tags and nexus keys of a summary (seed 004 §4.2–4.3): the structural hooks that keep the
graph connected once the sources are archived.

Union of the members' items, scored frequency × type weight × inverse-degree penalty (an item that links
half the store says little about this cluster), capped per namespace and at K. Always kept, outside the
caps: tags `topic/gc` and `src/system` (or `src/tool` when a tool wrote the summary), every `ops/*` tag
present, the top `err/*` families; for keys likewise every `ops:*` key and the top `err:*` keys; plus any
item the caller forces (a hub's keys). Everything cut is returned as `dropped`, so it is reported, never
lost silently. Deterministic: ties break on the item's name.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

K_DEFAULT = 32
PER_NAMESPACE_DEFAULT = 8
TOP_ERR_FAMILIES = 3
GC_TAG = "topic/gc"

TAG_WEIGHTS: dict[str, float] = {"err": 2.0, "ops": 2.0, "topic": 1.5, "path": 1.5, "tool": 1.2, "src": 0.5}
KEY_WEIGHTS: dict[str, float] = {
    "err": 2.0,
    "ops": 2.0,
    "path": 1.5,
    "tool": 1.2,
    "thread": 1.2,
    "chan": 1.0,
    "host": 1.0,
    "job": 1.0,
    "spam": 0.5,
}


@dataclass(frozen=True)
class RollUp:
    kept: list[str]  # forced first (sorted), then by score
    dropped: list[str]  # sorted
    scores: dict[str, float]


def tag_namespace(tag: str) -> str:
    return tag.split("/", 1)[0] if "/" in tag else ""


def key_namespace(key: str) -> str:
    return key.split(":", 1)[0] if ":" in key else ""


def inverse_degree(degree: int, frequency: int) -> float:
    """1 for an item only these members carry, falling slowly (log) with how many memories outside the
    cluster carry it too: a key that links half the store says little about this cluster."""
    return 1.0 / (1.0 + math.log2(max(degree, frequency, 1) / max(frequency, 1)))


def err_family(item: str, sep: str) -> str:
    """`err/timeout/db` → `err/timeout`: the family is the first two levels."""
    parts = item.split(sep)
    return sep.join(parts[:2])


def roll_up(
    member_items: Sequence[Iterable[str]],
    *,
    namespace: str,  # "tags" | "keys"
    degrees: Mapping[str, int] | None = None,
    k: int = K_DEFAULT,
    per_namespace: int = PER_NAMESPACE_DEFAULT,
    forced: Iterable[str] = (),
    generated_by_tool: bool = False,
) -> RollUp:
    if namespace not in ("tags", "keys"):
        raise ValueError(f"namespace must be 'tags' or 'keys', got {namespace!r}")
    ns_of = tag_namespace if namespace == "tags" else key_namespace
    weights = TAG_WEIGHTS if namespace == "tags" else KEY_WEIGHTS
    sep = "/" if namespace == "tags" else ":"
    freq = Counter(item for items in member_items for item in set(items))
    degrees = degrees or {}
    scores = {
        item: round(n * weights.get(ns_of(item), 1.0) * inverse_degree(degrees.get(item, n), n), 9)
        for item, n in freq.items()
    }
    must: set[str] = {f for f in forced if f in freq}
    must |= {item for item in freq if ns_of(item) == "ops"}
    errs = sorted((item for item in freq if ns_of(item) == "err"), key=lambda i: (-scores[i], i))
    best_of_family: dict[str, str] = {}  # insertion order = order of each family's best item
    for item in errs:
        best_of_family.setdefault(err_family(item, sep), item)
    must |= set(list(best_of_family.values())[:TOP_ERR_FAMILIES])
    if namespace == "tags":
        must |= {GC_TAG, "src/tool" if generated_by_tool else "src/system"}
        scores.setdefault(GC_TAG, 0.0)
        scores.setdefault("src/tool" if generated_by_tool else "src/system", 0.0)
    kept = sorted(must)
    per_ns = Counter(ns_of(i) for i in kept)
    for item in sorted(freq, key=lambda i: (-scores[i], i)):
        if item in must:
            continue
        if len(kept) >= k:
            break
        if per_ns[ns_of(item)] >= per_namespace:
            continue
        kept.append(item)
        per_ns[ns_of(item)] += 1
    dropped = sorted(set(freq) - set(kept))
    return RollUp(kept=kept, dropped=dropped, scores=scores)
