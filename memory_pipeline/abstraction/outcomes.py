"""What the nightly consolidation's steps hand each other (seed 000): the run's start record, each cluster's
outcome on its way through the engine, the atoms' tally, and the seed's constants. Plain data, so the steps'
logic in this package and the assets in defs/abstraction share one definition."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_pipeline.abstraction.grade import SummaryGrade
from memory_pipeline.abstraction.report import CompressionError
from memory_pipeline.distillation.distill import Distillation
from memory_pipeline.similarity.clustering import MemoryCluster
from memory_pipeline.store.db import utcnow

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
    grade: SummaryGrade | None = None  # its distillation held to its sources (None: not distilled)


@dataclass
class AtomResults:
    created: int = 0
    strengthened: int = 0
    not_causal: int = 0
    errors: list[CompressionError] = field(default_factory=list)


def stage_error(cluster_id: str, stage: str, exc: BaseException | str) -> CompressionError:
    """A cluster's failure at one stage (distill | write | archive | enrich), timestamped for the report."""
    return CompressionError(cluster_id, stage, str(exc), utcnow().isoformat() + "Z")
