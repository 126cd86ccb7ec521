"""Matching an extracted atom against the atom graph (seed 000 §4.5 deduplication)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Embed = Callable[[Sequence[str]], np.ndarray]


class EmbeddingCache:
    """Memoises an embedder by text: matching every new atom against every existing one re-embeds the same
    subjects and actions, which made the atoms step quadratic in the number of causal clusters."""

    def __init__(self, embed: Embed) -> None:
        self._embed = embed
        self._vectors: dict[str, np.ndarray] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            self._vectors.update(zip(missing, self._embed(missing), strict=True))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])


@dataclass(frozen=True)
class ExistingAtom:
    id: str
    subject: str
    action: str


def find_matching_atom(
    candidate: dict[str, str],
    atoms: Sequence[ExistingAtom],
    embed: Embed,
    subject_threshold: float,
    action_threshold: float,
) -> str | None:
    """The best atom whose subject is ≥ `subject_threshold` similar and whose action is similar too."""
    if not atoms:
        return None
    vectors = embed(
        [candidate["subject"], candidate["action"]] + [a.subject for a in atoms] + [a.action for a in atoms]
    )
    n = len(atoms)
    subject_sims = vectors[2 : 2 + n] @ vectors[0]
    action_sims = vectors[2 + n :] @ vectors[1]
    ok = (subject_sims >= subject_threshold) & (action_sims >= action_threshold)
    if not ok.any():
        return None
    best = int(np.argmax(np.where(ok, subject_sims + action_sims, -np.inf)))
    return atoms[best].id
