from collections.abc import Sequence

import numpy as np

from memory_pipeline.abstraction.atoms import AtomIndex, ExistingAtom, find_matching_atom


class CountingEmbed:
    """Unit vectors that only equal texts share; records every text it was asked to embed."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, hash(t) % 64] = 1.0
        return out


def test_matching_finds_the_atom_with_the_same_subject_and_action() -> None:
    atoms = [ExistingAtom("a1", "deploy script", "ran without lock"), ExistingAtom("a2", "cache", "was cleared")]
    embed = CountingEmbed()
    candidate = {"subject": "cache", "action": "was cleared"}
    assert find_matching_atom(candidate, atoms, embed, 0.85, 0.8) == "a2"
    assert find_matching_atom({"subject": "cache", "action": "grew"}, atoms, embed, 0.85, 0.8) is None


def test_index_embeds_each_text_once_and_matches_what_the_night_created() -> None:
    raw = CountingEmbed()
    seeded = [ExistingAtom("old", "subject 0", "action 0")]
    index = AtomIndex(seeded, raw)
    candidates = [{"subject": f"subject {i % 30}", "action": f"action {i % 30}"} for i in range(60)]
    vectors = raw([t for c in candidates for t in (c["subject"], c["action"])])  # one batch, as the asset does
    created: list[ExistingAtom] = list(seeded)
    for i, c in enumerate(candidates):  # more atoms than the index's first capacity: it has to grow
        subject, action = vectors[2 * i], vectors[2 * i + 1]
        found = index.match(subject, action, 0.85, 0.8)
        assert found == find_matching_atom(c, created, CountingEmbed(), 0.85, 0.8)
        if found is None:
            index.add(f"a{i}", subject, action)
            created.append(ExistingAtom(f"a{i}", c["subject"], c["action"]))
    assert len(index) == 30  # subjects 1..29 once each, plus the seeded subject 0
    assert len(raw.seen) == 2 + 120  # the seeded atom once, each candidate once: nothing re-embedded
    assert index.match(vectors[0], vectors[1], 0.85, 0.8) == "old"
