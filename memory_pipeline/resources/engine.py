"""Engine settings as a resource, so the UI shows them and tests can set the clock."""

from datetime import datetime

import dagster as dg
from pydantic import field_validator

from memory_pipeline.embedding.defaults import ClusteringChoice, resolve
from memory_pipeline.settings import check_as_of, env_overrides
from memory_pipeline.similarity.linkage import MAX_EXACT_COMPONENT, LinkageParams
from memory_pipeline.store.db import utcnow
from memory_pipeline.store.lease import DEFAULT_HEARTBEAT_S
from memory_pipeline.store.records import parse_timestamp


class EngineConfig(dg.ConfigurableResource):
    """Engine settings (defaults from the COMPRESSION_* and MEMORY_PIPELINE_* environment variables) and an
    optional fixed clock."""
    # The constants and their env vars are seed 000 §7.1.

    # None = the embedder's default (embedding/defaults.json: 0.82 for seed-calibrated models); see
    # `clustering_choice`. linkage: single | complete | average (None = the embedder's default).
    similarity_threshold: float | None = None
    linkage: str | None = None
    # caps on an embedding cluster (seed 004 §3.1; 0 = no cap): a summary within 2,000 tokens cannot keep what more
    # than 40 memories each said, and single linkage would otherwise chain thousands of distinct facts into one
    max_cluster_members: int = 40
    max_cluster_tokens: int = 0
    linkage_max_component: int = MAX_EXACT_COMPONENT  # larger components are left unclustered, named
    min_cluster_size: int = 3
    freshness_hours: float = 24.0
    critical_floor: float = 2.5
    rate_limit_per_min: int = 10
    min_compression_ratio: float = 1.5
    fingerprint_ttl_days: float = 7.0
    max_abstraction_tokens: int = 2000
    max_cost_usd: float = 0.25
    lease_ttl_hours: float = 6.0  # a lease from a process that died on another host expires after this
    lease_heartbeat_seconds: float = DEFAULT_HEARTBEAT_S  # a night's heartbeat; stale on any host after 6 missed
    backups_keep: int = 7
    as_of: str = ""  # ISO timestamp; empty = now. Lets a replay or a benchmark run "after" its data.
    # graph-preserving compaction (seed 004); the defaults keep the engine's embedding-only behaviour
    cluster_source: str = "embedding"  # embedding | keys | both
    key_window: str = "week"  # day | week: deterministic window buckets of key-centred clusters
    key_max_members: int = 25
    key_max_tokens: int = 3000
    key_seed_count: int = 200  # top candidates (seed-004 score) that vote for hot compaction keys
    key_min_age_days: int = 7
    key_max_clusters: int = 100
    score_age_weight: float = 1.0  # a
    score_usage_weight: float = 2.0  # b
    score_pinned_weight: float = 100.0  # c
    score_human_weight: float = 10.0  # d
    score_spam_weight: float = 5.0  # e
    usage_decay: float = 0.95  # per day bucket
    rollup_max_keys: int = 32  # K, for rolled-up tags and for rolled-up nexus keys
    rollup_per_namespace: int = 8
    hub_policy: str = "summarise"  # summarise | pin
    hub_top_keys: int = 32
    hub_list_size: int = 8
    hub_min_lists: int = 3
    external_indexes: str = ""  # comma-separated names of external indexes kept in step through the outbox
    outbox_critical: int = 10_000  # open outbox actions at which compaction pauses
    summary_rollup_min_sources: int = 6  # explicit summary-of-summary only: higher than min_cluster_size
    # a night that would supersede more than this share of the facts it reads is stopped (a runaway rule)
    max_superseded_share: float = 0.5
    # knowledge-retention probes before the archive: the share of probes a night must keep (blocking below it),
    # how many of the memories it would archive are probed (0: none, the check passes), the read path's budget
    retention_floor: float = 0.97
    retention_probes: int = 300
    retention_budget: int = 1000
    retention_seed: int = 0
    retention_seconds: float = 60.0  # the probes stop being asked after this long (0: no bound)
    retention_share: float = 0.1  # ... or once they took this share of the night's time so far (0: no such bound)
    # the night's grade: the share of its distillations' source statements they must say (0: not checked)
    grade_floor: float = 0.9

    @field_validator("as_of")
    @classmethod
    def _as_of_is_iso(cls, value: str) -> str:
        """A bad clock is refused when the resource is built, in one sentence, not deep inside a step."""
        return check_as_of(value, "EngineConfig.as_of")

    @classmethod
    def from_env(cls, as_of: str = "") -> "EngineConfig":
        """Defaults overridden by the seed's environment variables."""
        # env_overrides parses each value to its field's type; mypy cannot tie the keys to the fields
        return cls(as_of=as_of, **env_overrides())  # type: ignore[arg-type]

    def clustering_choice(self, model: str, linkage: str = "") -> ClusteringChoice:
        """The threshold and linkage tonight's clusters use with `model`'s vectors, and why; `linkage` is a
        run's override."""
        return resolve(model, self.similarity_threshold, linkage or self.linkage)

    def linkage_params(self, choice: ClusteringChoice) -> LinkageParams:
        return LinkageParams(
            method=choice.linkage,
            threshold=choice.threshold,
            min_size=self.min_cluster_size,
            max_members=self.max_cluster_members,
            max_tokens=self.max_cluster_tokens,
            max_component=self.linkage_max_component,
        )

    def now(self) -> datetime:
        return parse_timestamp(self.as_of, "EngineConfig", "as_of") if self.as_of else utcnow()
