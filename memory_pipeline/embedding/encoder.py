"""Which all-MiniLM-L6-v2 encoder a process uses: ONNX Runtime first, the numpy forward pass as the fallback.

Kept apart from both encoders (the ONNX one reuses the numpy one's tokenizer and batching), so neither imports
the other's chooser."""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, cast

import numpy as np

from memory_pipeline.embedding.minilm import MiniLMEncoder
from memory_pipeline.embedding.onnx_minilm import OnnxMiniLMEncoder, Variant

_log = logging.getLogger(__name__)


class SentenceEncoder(Protocol):
    """What callers of `get_encoder` use: the numpy encoder and the ONNX Runtime one both provide it."""

    model_name: str
    dim: int
    model_dir: Path

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray: ...


@functools.lru_cache(maxsize=4)
def get_encoder(model_dir: str | None = None, variant: str = "fp32") -> SentenceEncoder:
    """Process-wide shared encoder, loaded once: ONNX Runtime (`variant` "fp32", the same vectors as the numpy
    forward pass, or "int8", a model of its own) and, for fp32, the numpy forward pass when ONNX Runtime or the
    graph cannot be loaded — a warning says why."""
    if variant not in ("fp32", "int8"):
        raise ValueError(f"unknown variant {variant!r}; expected fp32 or int8")
    path = Path(model_dir) if model_dir is not None else None
    try:
        return OnnxMiniLMEncoder(path, variant=cast("Variant", variant)).load()
    except Exception as exc:
        if variant != "fp32":
            raise RuntimeError(
                f"the {variant} all-MiniLM-L6-v2 runs only on ONNX Runtime, which failed: {exc}"
            ) from exc
        encoder = MiniLMEncoder(path)  # a missing weights package raises its install hint here
        _log.warning("all-MiniLM-L6-v2: ONNX Runtime unavailable (%s: %s); using the slower numpy forward pass",
                     type(exc).__name__, exc)  # fmt: skip
        return encoder
