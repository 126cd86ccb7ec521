"""The `hashing-bow-256` embedder: numpy only, so tests and plug-in examples need no model weights."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np


def hashing_embed(texts: Sequence[str], dim: int = 256) -> np.ndarray:
    """Bag-of-words feature hashing: a cheap, deterministic embedder for quick tests, not for production."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            out[i, h % dim] += np.float32(1.0 if (h >> 32) & 1 else -1.0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = np.float32(1)
    return out / norms
