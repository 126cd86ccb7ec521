"""Synthetic 384-d clustered unit vectors, the benchmarks' data (deterministic by seed).

Clusters of 2–40 members around random centres, each cluster with its own spread so that pairwise cosines
inside clusters straddle the 0.82 threshold (some clusters chain, some break up), plus 30 % background
memories that match nothing. Float32, like the store's vectors.
"""

from __future__ import annotations

import numpy as np

DIM = 384


def clustered_unit_vectors(n: int, dim: int = DIM, seed: int = 0, background: float = 0.3) -> np.ndarray:
    return clustered_with_labels(n, dim, seed, background)[0]


def clustered_with_labels(
    n: int, dim: int = DIM, seed: int = 0, background: float = 0.3
) -> tuple[np.ndarray, np.ndarray]:
    """The vectors and the generator's cluster of each (background memories have a cluster of their own)."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), dtype=np.float32)
    owners = np.empty(n, dtype=np.int64)
    next_label = 0
    n_clustered = int(n * (1 - background))
    i = 0
    chunk = 65536
    while i < n_clustered:  # clusters, written in chunks so a 1M set never needs a float64 copy
        sizes = []
        total = 0
        while total < min(chunk, n_clustered - i):
            s = int(min(40, max(2, rng.geometric(1 / 8))))
            s = min(s, n_clustered - i - total)
            sizes.append(s)
            total += s
        centres = rng.standard_normal((len(sizes), dim)).astype(np.float32)
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)
        spread = rng.uniform(0.30, 0.55, size=len(sizes)).astype(np.float32)
        owner = np.repeat(np.arange(len(sizes)), sizes)
        noise = rng.standard_normal((total, dim)).astype(np.float32) / np.float32(np.sqrt(dim))
        block = centres[owner] + spread[owner, None] * noise
        out[i : i + total] = block / np.linalg.norm(block, axis=1, keepdims=True)
        owners[i : i + total] = owner + next_label
        next_label += len(sizes)
        i += total
    while i < n:
        m = min(chunk, n - i)
        block = rng.standard_normal((m, dim)).astype(np.float32)
        out[i : i + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
        owners[i : i + m] = np.arange(next_label, next_label + m)
        next_label += m
        i += m
    perm = rng.permutation(n)
    return out[perm], owners[perm]
