"""Journals: transcript intake, extractors and reconstruction."""
