"""Engine settings as a resource, so the UI shows them and tests can set the clock."""

from datetime import datetime

import dagster as dg

from memory_pipeline.settings import env_overrides
from memory_pipeline.store.db import utcnow
from memory_pipeline.store.records import parse_timestamp


class EngineConfig(dg.ConfigurableResource):
    """Seed 000 §7.1 constants (defaults from the seed's env vars) and an optional fixed clock."""

    similarity_threshold: float = 0.82
    min_cluster_size: int = 3
    freshness_hours: float = 24.0
    critical_floor: float = 2.5
    rate_limit_per_min: int = 10
    min_compression_ratio: float = 1.5
    fingerprint_ttl_days: float = 7.0
    max_abstraction_tokens: int = 2000
    max_cost_usd: float = 0.25
    lease_ttl_hours: float = 6.0  # a lease from a process that died on another host expires after this
    backups_keep: int = 7
    as_of: str = ""  # ISO timestamp; empty = now. Lets a replay or a benchmark run "after" its data.

    @classmethod
    def from_env(cls, as_of: str = "") -> "EngineConfig":
        """Defaults overridden by the seed's environment variables."""
        return cls(as_of=as_of, **env_overrides())

    def now(self) -> datetime:
        return parse_timestamp(self.as_of, "EngineConfig", "as_of") if self.as_of else utcnow()
