from collections.abc import Sequence

import numpy as np

from memory_pipeline.abstraction.atoms import EmbeddingCache, ExistingAtom, find_matching_atom


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


def test_cache_embeds_each_text_once_across_a_night_of_matches() -> None:
    raw = CountingEmbed()
    embed = EmbeddingCache(raw)
    atoms: list[ExistingAtom] = []
    for i in range(40):  # each new atom is matched against all earlier ones, as the atoms asset does
        candidate = {"subject": f"subject {i}", "action": f"action {i}"}
        assert find_matching_atom(candidate, atoms, embed, 0.85, 0.8) is None
        atoms.append(ExistingAtom(f"a{i}", candidate["subject"], candidate["action"]))
    assert len(raw.seen) == len(set(raw.seen)) == 80  # every subject and action embedded exactly once
    direct = CountingEmbed()
    vectors = embed(["subject 3", "action 7", "subject 3"])
    assert np.array_equal(vectors, direct(["subject 3", "action 7", "subject 3"]))
