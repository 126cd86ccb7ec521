"""What the abstraction assets share: the group, seed constants, the run's start record and outcomes."""

from dataclasses import dataclass, field

import dagster as dg

from memory_pipeline.abstraction.report import CompressionError
from memory_pipeline.llm.distill import Distillation
from memory_pipeline.similarity.clustering import MemoryCluster
from memory_pipeline.store import lease
from memory_pipeline.store.db import utcnow

GROUP = "abstraction"
ARCHIVED_IMPORTANCE = 0.5
SUMMARY_IMPORTANCE_FLOOR = 1.0
ATOM_CONFIDENCE_NEW = 0.7
ATOM_CONFIDENCE_STEP = 0.1
ATOM_SUBJECT_THRESHOLD = 0.85
ATOM_ACTION_THRESHOLD = 0.75
EMBED_CHUNK = 512
ARCHIVE_BATCH = 256  # clusters per phase-2 transaction


@dataclass
class RunStart:
    started_at: str
    wall_started: float
    tokens_before: int
    memory_count_before: int
    duplicates_archived: int
    pending_activated: list[str] = field(default_factory=list)
    pending_removed: list[str] = field(default_factory=list)


@dataclass
class ClusterOutcome:
    """What happened to one cluster on its way through the engine."""

    cluster: MemoryCluster
    distillation: Distillation | None = None
    skip_reason: str | None = None
    summary_id: str | None = None
    status: str = "pending"  # pending | skipped | compressed | failed
    errors: list[CompressionError] = field(default_factory=list)


def _error(cluster_id: str, stage: str, exc: BaseException | str) -> CompressionError:
    return CompressionError(cluster_id, stage, str(exc), utcnow().isoformat() + "Z")


def _lease_alive(instance: dg.DagsterInstance, held: lease.Lease) -> bool:
    """A lease is live while its process is (on this host) and its Dagster run, if any, has not finished."""
    run = instance.get_run_by_id(held.holder)
    if run is not None and run.is_finished:
        return False
    return lease.pid_alive(held)
