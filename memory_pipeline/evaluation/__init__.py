"""Measuring what memory gives back, used by `reconstruct --questions` and by every benchmark. No Dagster here.

locomo               the LoCoMo loader and its answer-support and evidence-recall scoring
locomo_transcripts   LoCoMo conversations → dated transcripts (`memory-pipeline import locomo`, benchmarks)
retention            a branch's knowledge against main's on LoCoMo-style questions (`reconstruct --questions`)
"""

from memory_pipeline.evaluation import locomo

__all__ = ["locomo"]
