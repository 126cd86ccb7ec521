"""Measuring what memory gives back: the LoCoMo loader and its answer-support and evidence-recall scoring,
used by `reconstruct --questions` and by every benchmark. No Dagster here."""

from memory_pipeline.evaluation import locomo

__all__ = ["locomo"]
