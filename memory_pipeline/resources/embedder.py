"""The embedder resource: the workspace's `Embedder` (memory_pipeline/embedding/embedder.py) as Dagster config,
so the night's steps get it from their resources while the read path builds the same thing without Dagster."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict

import dagster as dg
import numpy as np

from memory_pipeline.embedding.embedder import Embedder
from memory_pipeline.embedding.hashing import hashing_embed
from memory_pipeline.embedding.spec import HASHING, MINILM

__all__ = ["HASHING", "MINILM", "EmbedderResource", "hashing_embed"]


class EmbedderResource(dg.ConfigurableResource):
    """The night's `Embedder`, configurable in Dagster: the same fields, meaning what they mean there."""

    model: str = MINILM
    batch_size: int = 64
    imported: bool = False
    plugin: str = ""

    @classmethod
    def from_env(cls) -> EmbedderResource:
        """The environment's setting (`Embedder.from_env`, which names a bad variable)."""
        return cls(**asdict(Embedder.from_env()))

    @property
    def embedder(self) -> Embedder:
        return Embedder(self.model, self.batch_size, self.imported, self.plugin)

    def check(self) -> None:
        self.embedder.check()

    @property
    def can_encode(self) -> bool:
        return self.embedder.can_encode

    @property
    def compute_source(self) -> str:
        return self.embedder.compute_source

    @property
    def summary_method(self) -> str:
        return self.embedder.summary_method

    @property
    def expected_dimension(self) -> int | None:
        return self.embedder.expected_dimension

    def describe(self) -> str:
        return self.embedder.describe()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.embedder.encode(texts)

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        return self.embedder.encode_text(texts)

    def judge_encoder(self) -> Callable[[Sequence[str]], np.ndarray] | None:
        """The encoder the meaning judgements (is this the same statement? the same attribute?) were calibrated
        with — MiniLM — when it is the night's; else None, and the words alone decide."""
        return self.encode if self.can_encode and self.model == MINILM else None
