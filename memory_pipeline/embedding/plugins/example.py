"""Example embedder plug-ins: copy one, point MEMORY_PIPELINE_EMBEDDER_PLUGIN at it.

A plug-in is anything `package.module:attr` names that turns a list of texts into a (len(texts), dim) array:
a function, an object with `encode(texts)`, or a class instantiated without arguments that has one. An int
attribute `dimension` (on the function, object or class) lets imports and nights check vectors against it.
Both examples here embed in the space of `text-embedding-3-small` (1536-d):

- `OpenAIEmbeddings` calls an OpenAI-compatible `/embeddings` endpoint (OpenAI, Azure, a local server):
  `MEMORY_PIPELINE_EMBEDDER_PLUGIN=memory_pipeline.embedding.plugins.example:OpenAIEmbeddings`, with
  OPENAI_API_KEY, and OPENAI_BASE_URL for another server. Use it when your agent stored OpenAI vectors.
- `toy_1536` is offline feature hashing with the same shape, for tests and trying the setting out; its
  vectors are NOT comparable with real OpenAI vectors.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Sequence

import numpy as np

from memory_pipeline.embedding.hashing import hashing_embed

DIMENSION = 1536


def toy_1536(texts: Sequence[str]) -> np.ndarray:
    """Deterministic bag-of-words hashing into 1536 dimensions, unit length. Offline; a stand-in only."""
    return hashing_embed(list(texts), dim=DIMENSION)


toy_1536.dimension = DIMENSION  # type: ignore[attr-defined]


class OpenAIEmbeddings:
    """POST {base_url}/embeddings {"model", "input"} → data[i].embedding, in batches, in input order."""

    dimension = DIMENSION

    def __init__(self) -> None:
        self.base_url = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/")
        self.model = os.environ.get("MEMORY_PIPELINE_PLUGIN_MODEL", "text-embedding-3-small")
        self.api_key = os.environ.get("OPENAI_API_KEY", "")
        self.batch = int(os.environ.get("MEMORY_PIPELINE_PLUGIN_BATCH", "256"))
        self.timeout = float(os.environ.get("MEMORY_PIPELINE_PLUGIN_TIMEOUT", "60"))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for lo in range(0, len(texts), self.batch):
            rows.extend(self._post(list(texts[lo : lo + self.batch])))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)

    def _post(self, texts: list[str]) -> list[list[float]]:
        body = json.dumps({"model": self.model, "input": texts}).encode("utf-8")
        request = urllib.request.Request(
            f"{self.base_url}/embeddings",
            data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - configured URL
            data = json.loads(response.read())["data"]
        return [item["embedding"] for item in sorted(data, key=lambda item: item["index"])]
