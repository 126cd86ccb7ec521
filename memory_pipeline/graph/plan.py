"""Graph-aware cluster planning, called by the engine's `clusters` asset: hub detection, the key-centred
cluster source beside the embedding one (`cluster_source: embedding | keys | both`), and the hooks each
summary must keep (rolled-up tags and keys). Both sources yield the engine's MemoryCluster, with the same
fingerprint (SHA-256 of sorted member ids), so they share the distil → write → archive path and the
fingerprint idempotency. No Dagster here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import numpy as np
import pandas as pd

from memory_pipeline.graph import rollup
from memory_pipeline.graph.hubs import Hub, HubParams, KeyHolder, find_hubs
from memory_pipeline.graph.key_clusters import Candidate, KeyClusterParams, key_clusters
from memory_pipeline.graph.scoring import ScoreWeights, candidate_score, is_spam_raw
from memory_pipeline.graph.usage import UsageState
from memory_pipeline.similarity import clustering
from memory_pipeline.similarity.clustering import MemoryCluster

SOURCES = ("embedding", "keys", "both")


@dataclass(frozen=True)
class GraphSettings:
    """The EngineConfig fields this module reads (kept apart so the logic is testable without Dagster)."""

    min_cluster_size: int = 3
    similarity_threshold: float = 0.82
    fingerprint_ttl_days: float = 7.0
    cluster_source: str = "embedding"
    key: KeyClusterParams = KeyClusterParams()
    hubs: HubParams = HubParams()
    weights: ScoreWeights = ScoreWeights()
    usage_decay: float = 0.95
    rollup_max_keys: int = rollup.K_DEFAULT
    rollup_per_namespace: int = rollup.PER_NAMESPACE_DEFAULT

    @classmethod
    def from_engine(
        cls, engine: Any, source: str = "", key_prefixes: Sequence[str] = (), similarity_threshold: float | None = None
    ) -> GraphSettings:
        source = source or engine.cluster_source
        if source not in SOURCES:
            raise ValueError(f"cluster_source must be one of {', '.join(SOURCES)}, got {source!r}")
        return cls(
            min_cluster_size=engine.min_cluster_size,
            similarity_threshold=similarity_threshold or engine.similarity_threshold or cls.similarity_threshold,
            fingerprint_ttl_days=engine.fingerprint_ttl_days,
            cluster_source=source,
            key=KeyClusterParams(
                window=engine.key_window,
                min_members=engine.min_cluster_size,
                max_members=max(engine.key_max_members, engine.min_cluster_size),
                max_tokens=engine.key_max_tokens,
                seed_count=engine.key_seed_count,
                min_age_days=engine.key_min_age_days,
                max_clusters=engine.key_max_clusters,
                key_prefixes=tuple(key_prefixes),
            ),
            hubs=HubParams(engine.hub_top_keys, engine.hub_list_size, engine.hub_min_lists, engine.hub_policy),
            weights=ScoreWeights(
                engine.score_age_weight,
                engine.score_usage_weight,
                engine.score_pinned_weight,
                engine.score_human_weight,
                engine.score_spam_weight,
            ),
            usage_decay=engine.usage_decay,
            rollup_max_keys=engine.rollup_max_keys,
            rollup_per_namespace=engine.rollup_per_namespace,
        )


@dataclass
class GraphPlan:
    clusters: list[MemoryCluster]
    hubs: list[Hub] = field(default_factory=list)
    hub_actions: dict[str, str] = field(default_factory=dict)  # hub id → what happens to it this night
    by_source: dict[str, int] = field(default_factory=dict)


def _list(value: Any) -> tuple[str, ...]:
    return tuple(value) if value is not None and not (isinstance(value, float) and np.isnan(value)) else ()


def candidates(frame: pd.DataFrame, as_of: date, weights: ScoreWeights, factor: float) -> list[Candidate]:
    """The eligible set as scored candidates (frame columns from repository.load_eligible)."""
    out = []
    for r in frame.itertuples(index=False):
        created = pd.Timestamp(r.created_at).to_pydatetime()
        usage_day = None if pd.isna(r.usage_day) else pd.Timestamp(r.usage_day).date()
        keys, tags = _list(r.nexus_keys), _list(r.tags)
        score = candidate_score(
            created=created.date(),
            as_of=as_of,
            usage=UsageState(0, float(r.included_count_decay or 0.0), usage_day),
            pinned=False,  # eligible memories are never pinned; the weight acts in the seed's formula all the same
            human_authored=bool(r.human_authored),
            spam_raw=is_spam_raw(tags, keys),
            weights=weights,
            factor=factor,
        )
        out.append(Candidate(str(r.id), created, keys, int(r.token_count), score))
    return out


def _rebuild(
    frame: pd.DataFrame,
    vectors: np.ndarray,
    groups: list[np.ndarray],
    s: GraphSettings,
    recent: set[str],
) -> list[MemoryCluster]:
    if not groups:
        return []
    return clustering.build_clusters(
        frame, vectors, s.similarity_threshold, s.min_cluster_size, recent, s.fingerprint_ttl_days, groups=groups
    )


def plan(
    embedding_clusters: list[MemoryCluster],
    frame: pd.DataFrame,
    vectors: np.ndarray,
    holders: Sequence[KeyHolder],
    s: GraphSettings,
    as_of: date,
    recent: set[str],
) -> GraphPlan:
    """The night's clusters from the configured sources, with hubs handled per policy."""
    hubs = find_hubs(holders, s.hubs)
    hub_ids = {h.id for h in hubs}
    row_of = {str(mid): i for i, mid in enumerate(frame["id"].tolist())}
    found = embedding_clusters if s.cluster_source in ("embedding", "both") else []
    if s.hubs.policy == "pin" and hub_ids & {m for c in found for m in c.member_ids}:
        groups = [np.array(sorted(row_of[m] for m in c.member_ids if m not in hub_ids)) for c in found]
        found = _rebuild(frame, vectors, [g for g in groups if g.size >= s.min_cluster_size], s, recent)
    for c in found:
        c.extra["source"] = "embedding"
    out = list(found)
    if s.cluster_source in ("keys", "both"):
        exclude = {m for c in found for m in c.member_ids}
        if s.hubs.policy == "pin":
            exclude |= hub_ids
        groups_k = key_clusters(candidates(frame, as_of, s.weights, s.usage_decay), as_of, s.key, exclude)
        built = _rebuild(
            frame, vectors, [np.array(sorted(row_of[m] for m in g.member_ids)) for g in groups_k], s, recent
        )
        by_fp = {clustering.fingerprint(g.member_ids): g for g in groups_k}
        for c in built:
            g = by_fp[c.fingerprint]
            c.extra.update({"source": "keys", "key": g.key, "window_start": g.window_start.isoformat(), "heat": g.heat})
        out.extend(built)
    out.sort(key=lambda c: (-c.member_count, c.fingerprint))
    actions: dict[str, str] = {}
    for c in out:
        members_hubs = sorted(hub_ids & set(c.member_ids))
        if members_hubs:
            c.extra["hubs"] = members_hubs
            for h in members_hubs:
                actions[h] = f"summarised with cluster {c.cluster_id} (its keys kept)"
    for hub in hubs:
        if hub.id not in actions:
            actions[hub.id] = "pinned" if s.hubs.policy == "pin" else "left active"
    by_source: dict[str, int] = {}
    for c in out:
        src = str(c.extra.get("source", "embedding"))
        by_source[src] = by_source.get(src, 0) + 1
    return GraphPlan(out, hubs, actions, by_source)


@dataclass(frozen=True)
class SummaryHooks:
    tags: list[str]
    nexus_keys: list[str]
    dropped_tags: list[str]
    dropped_nexus_keys: list[str]


def summary_hooks(
    cluster: MemoryCluster,
    members: Mapping[str, tuple[Sequence[str], Sequence[str]]],  # id → (tags, nexus_keys)
    tag_degrees: Mapping[str, int],
    key_degrees: Mapping[str, int],
    s: GraphSettings,
) -> SummaryHooks:
    """Rolled-up tags and keys of one cluster's summary; a hub member's keys are always kept."""
    rows = [members.get(m, ((), ())) for m in cluster.member_ids]
    hub_members = cluster.extra.get("hubs")  # a sorted list of ids, set by `plan`
    hub_ids = hub_members if isinstance(hub_members, list) else []
    forced = {k for h in hub_ids for k in members.get(str(h), ((), ()))[1]}
    tags = rollup.roll_up(
        [r[0] for r in rows],
        namespace="tags",
        degrees=tag_degrees,
        k=s.rollup_max_keys,
        per_namespace=s.rollup_per_namespace,
    )
    keys = rollup.roll_up(
        [r[1] for r in rows],
        namespace="keys",
        degrees=key_degrees,
        k=s.rollup_max_keys,
        per_namespace=s.rollup_per_namespace,
        forced=forced,
    )
    return SummaryHooks(tags.kept, keys.kept, tags.dropped, keys.dropped)
