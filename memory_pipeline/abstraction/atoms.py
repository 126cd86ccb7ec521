"""Matching an extracted atom against the atom graph (seed 000 §4.5 deduplication)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Embed = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class ExistingAtom:
    id: str
    subject: str
    action: str


class AtomIndex:
    """The atoms' subject and action vectors as two matrices that grow as the night creates atoms.

    Each atom is embedded once, when it enters the index, and a candidate costs one matrix-vector product per
    field: re-embedding every atom for every candidate made the atoms step quadratic in the causal clusters.
    """

    def __init__(self, atoms: Sequence[ExistingAtom], embed: Embed) -> None:
        self._embed = embed
        self.ids = [a.id for a in atoms]
        vectors = embed([a.subject for a in atoms] + [a.action for a in atoms]) if atoms else None
        dim = 0 if vectors is None else int(vectors.shape[1])
        capacity = max(16, 2 * len(atoms))
        self._subjects = np.zeros((capacity, dim), dtype=np.float32)
        self._actions = np.zeros((capacity, dim), dtype=np.float32)
        if vectors is not None:
            n = len(atoms)
            self._subjects[:n], self._actions[:n] = vectors[:n], vectors[n:]

    def __len__(self) -> int:
        return len(self.ids)

    def match(
        self, subject: np.ndarray, action: np.ndarray, subject_threshold: float, action_threshold: float
    ) -> str | None:
        """The best atom whose subject is ≥ `subject_threshold` similar and whose action is similar too."""
        n = len(self.ids)
        if n == 0:
            return None
        subject_sims = self._subjects[:n] @ subject
        action_sims = self._actions[:n] @ action
        ok = (subject_sims >= subject_threshold) & (action_sims >= action_threshold)
        if not ok.any():
            return None
        return self.ids[int(np.argmax(np.where(ok, subject_sims + action_sims, -np.inf)))]

    def add(self, atom_id: str, subject: np.ndarray, action: np.ndarray) -> None:
        n = len(self.ids)
        if self._subjects.shape[1] == 0:  # the first atom of an empty index fixes the dimension
            self._subjects = np.zeros((16, subject.shape[0]), dtype=np.float32)
            self._actions = np.zeros_like(self._subjects)
        if n == self._subjects.shape[0]:
            self._subjects = np.vstack([self._subjects, np.zeros_like(self._subjects)])
            self._actions = np.vstack([self._actions, np.zeros_like(self._actions)])
        self._subjects[n], self._actions[n] = subject, action
        self.ids.append(atom_id)

