"""Journals: transcript intake, extractors and reconstruction."""

# Public to other domains: the transcript format (evaluation writes LoCoMo sessions as transcripts).
__all__ = ["transcript"]
