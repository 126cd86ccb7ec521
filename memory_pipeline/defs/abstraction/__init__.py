"""Seed 000 in Dagster: the nightly consolidation as one asset module per component of the seed's diagram
(ClusterFinder, Distiller, MemoryWriter, Archiver, AtomEnricher, Reporter), its checks, jobs, schedule and sensors."""

# Public to other domains' definitions: the nightly job (the graph domain's sensors watch it).
__all__ = ["schedules"]
