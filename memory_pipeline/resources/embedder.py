"""The embedder resource. Default: all-MiniLM-L6-v2 run offline by a numpy forward pass."""

import hashlib
import re
from collections.abc import Sequence

import dagster as dg
import numpy as np

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
HASHING = "hashing-bow-256"


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


class EmbedderResource(dg.ConfigurableResource):
    """`model` picks the implementation; the model name is stored with every vector, so a change re-embeds."""

    model: str = MINILM
    batch_size: int = 64

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self.model == MINILM:
            from memory_pipeline.embedding.minilm import get_encoder

            return get_encoder().encode(list(texts), batch_size=self.batch_size)
        if self.model == HASHING:
            return hashing_embed(texts)
        raise ValueError(f"EmbedderResource.model: unknown model {self.model!r} (known: {MINILM}, {HASHING})")
