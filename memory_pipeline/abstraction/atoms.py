"""The AtomEnricher's logic (seed 000 §4.5): causal abstractions become {subject, action, outcome, consequences}
atoms, matched against the atom graph so a matching atom is strengthened instead of duplicated. Failures here
never undo compression: each cluster's atom is its own transaction, and an error is recorded and passed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from memory_pipeline.abstraction.outcomes import (
    ATOM_ACTION_THRESHOLD,
    ATOM_CONFIDENCE_NEW,
    ATOM_CONFIDENCE_STEP,
    ATOM_SUBJECT_THRESHOLD,
    AtomResults,
    ClusterOutcome,
    stage_error,
)
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import MemoryStore, atomic

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


def _has_fields(extracted: dict[str, str], *names: str) -> bool:
    return all(isinstance(extracted.get(n), str) and extracted[n].strip() for n in names)


def enrich(
    db: MemoryStore,
    causal: list[ClusterOutcome],
    extractions: list[Any],
    embed: Embed,
    run_id: str,
    now: Callable[[], datetime],
    warn: Callable[[str], Any],
) -> AtomResults:
    """Each causal cluster's extracted atom (None: not causal after all; an exception: that cluster's error)
    strengthens its match (+0.1, capped at 1.0) or becomes a new atom. The subjects and actions are embedded in
    one batch; the index grows with the atoms created, so two clusters of one night can match each other."""
    results = AtomResults()
    usable = [i for i, e in enumerate(extractions) if isinstance(e, dict) and _has_fields(e, "subject", "action")]
    flat = embed([str(extractions[i][f]) for i in usable for f in ("subject", "action")])
    field_vectors = {i: (flat[2 * k], flat[2 * k + 1]) for k, i in enumerate(usable)}
    with db.connect() as con:
        existing = [ExistingAtom(r.id, r.subject, r.action) for r in repo.all_atoms(con).itertuples()]
        index = AtomIndex(existing, embed)
        for i, (o, extracted) in enumerate(zip(causal, extractions, strict=True)):
            assert o.distillation is not None
            try:
                if isinstance(extracted, BaseException):
                    raise extracted
                if extracted is None:
                    results.not_causal += 1
                    continue
                if i not in field_vectors:
                    raise ValueError(f"extracted atom lacks a subject or an action: {extracted!r}")
                subject, action = field_vectors[i]
                match = index.match(subject, action, ATOM_SUBJECT_THRESHOLD, ATOM_ACTION_THRESHOLD)
                with atomic(con):
                    if match:
                        repo.strengthen_atom(con, match, ATOM_CONFIDENCE_STEP, o.summary_id or "", run_id, now())
                        results.strengthened += 1
                    else:
                        origin = f"distilled:{o.distillation.distiller}"
                        atom_id = repo.create_atom(
                            con, extracted, ATOM_CONFIDENCE_NEW, origin, o.summary_id or "", run_id, now()
                        )
                        index.add(atom_id, subject, action)
                        results.created += 1
            except Exception as exc:
                results.errors.append(stage_error(o.cluster.cluster_id, "enrich", exc))
                warn(f"AtomEnricher: cluster {o.cluster.cluster_id}: {exc}")
    return results
