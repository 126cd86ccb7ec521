"""Whether a question's hits speak of what it asks: the focus-word gate.

A question about something never stored can still find memories close to it in MiniLM's space (an everyday note
is near any everyday question) and hold a common word or two of theirs. What such hits lack is the question's
focus: its rare, content-bearing words ("birthday", "dentist", "BigQuery"). The gate reads a question's content
words with their share of the documents (0: no memory holds the word) and its top hits' words, with no weights.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from memory_pipeline.search.tokens import _WORDS, stem

_LINES = Path(__file__).with_name("function_words_en.txt").read_text(encoding="utf-8").splitlines()
FUNCTION_WORDS = frozenset(w.strip() for w in _LINES if w.strip() and not w.startswith("#"))
TOP_HITS = 10  # the hits the gate reads: those a caller sees first


def content_words(question: str) -> set[str]:
    """The question's words as the index stems them, less the words any question asks with ("what", "does",
    "my", "how much"): the index's stop list is short, and a store of notes never writes "what"."""
    return {stem(w) for w in _WORDS.findall(question.lower()) if w not in FUNCTION_WORDS}


def focus_words(shares: Mapping[str, float], gate: str, share: float) -> set[str]:
    """`unseen`: the words no memory holds; `focus` and `cover`: those held by at most `share` of the memories
    (unseen ones included); `rarest`: the rarest word (all of them on a tie)."""
    if gate == "unseen":
        return {w for w, s in shares.items() if s == 0}
    if gate in ("focus", "cover"):
        return {w for w, s in shares.items() if s <= share}
    low = min(shares.values(), default=None)
    return {w for w, s in shares.items() if s == low}


def focus_open(shares: Mapping[str, float], hits: Iterable[tuple[float, frozenset[str]]], gate: str,
               share: float, rescue: float | None) -> bool:  # fmt: skip
    """Whether the hits — (gate value, the hit's words) — answer the question: one holds a focus word, or one's
    gate value reaches `rescue` (None: none is rescued). A question with no focus word passes; no hit never does.
    `unseen` asks more: a question with a word no memory holds passes only by rescue; `cover` asks that one hit
    hold every focus word (a note naming Maya does not answer "Maya's shoe size")."""
    listed = list(hits)
    if not listed:
        return False
    focus = focus_words(shares, gate, share)
    if not focus:
        return True
    if rescue is not None and any(s >= rescue for s, _ in listed):
        return True
    if gate == "cover":
        return any(focus <= words for _, words in listed)
    return gate != "unseen" and any(focus & words for _, words in listed)
