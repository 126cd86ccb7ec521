import zlib
from collections.abc import Sequence

import numpy as np

from memory_pipeline.abstraction.atoms import AtomIndex, ExistingAtom


class CountingEmbed:
    """A random unit vector per text, seeded by the text (distinct texts: cosine ~ N(0, 1/64), far below the
    thresholds; equal texts: 1); records every text it was asked to embed."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        out = np.array([np.random.default_rng(zlib.crc32(t.encode())).normal(size=64) for t in texts]).reshape(-1, 64)
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def brute_force(candidate: dict[str, str], atoms: Sequence[ExistingAtom], embed: CountingEmbed) -> str | None:
    """The rule, atom by atom: subject ≥ 0.85 and action ≥ 0.8 similar, the best sum wins."""
    s, a = embed([candidate["subject"], candidate["action"]])
    best, best_id = -np.inf, None
    for atom in atoms:
        ss, aa = embed([atom.subject, atom.action])
        if s @ ss >= 0.85 and a @ aa >= 0.8 and s @ ss + a @ aa > best:
            best, best_id = s @ ss + a @ aa, atom.id
    return best_id


def test_matching_finds_the_atom_with_the_same_subject_and_action() -> None:
    atoms = [ExistingAtom("a1", "deploy script", "ran without lock"), ExistingAtom("a2", "cache", "was cleared")]
    embed = CountingEmbed()
    index = AtomIndex(atoms, embed)
    assert index.match(*embed(["cache", "was cleared"]), 0.85, 0.8) == "a2"
    assert index.match(*embed(["cache", "grew"]), 0.85, 0.8) is None
    assert AtomIndex([], embed).match(*embed(["cache", "was cleared"]), 0.85, 0.8) is None


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
        assert found == brute_force(c, created, CountingEmbed())
        if found is None:
            index.add(f"a{i}", subject, action)
            created.append(ExistingAtom(f"a{i}", c["subject"], c["action"]))
    assert len(index) == 30  # subjects 1..29 once each, plus the seeded subject 0
    assert len(raw.seen) == 2 + 120  # the seeded atom once, each candidate once: nothing re-embedded
    assert index.match(vectors[0], vectors[1], 0.85, 0.8) == "old"
