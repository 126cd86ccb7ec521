"""Which vectors the night clusters on, and who embeds new texts: settings parsing and plug-in loading.

Why a module of its own: the resource, the importers and the CLI all need the same answers (a model's
dimension, what `MEMORY_PIPELINE_EMBEDDER=imported:<name>` means, how to load a plug-in) and none of them
may import another's layer. Plain Python, no Dagster.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory_pipeline.settings import SettingsError

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
# The same network with int8 matmuls (ONNX Runtime): its vectors differ from MINILM's (cosine ~0.98-0.99), so
# they are stored under a name of their own and a store never mixes, or reads one as the other.
MINILM_INT8 = "all-MiniLM-L6-v2-int8"
HASHING = "hashing-bow-256"
BUILTIN = (MINILM, MINILM_INT8, HASHING)
IMPORTED_PREFIX = "imported:"
ENV_MODEL = "MEMORY_PIPELINE_EMBEDDER"
ENV_PLUGIN = "MEMORY_PIPELINE_EMBEDDER_PLUGIN"

# how a stored vector came to be (column `embeddings.source`)
COMPUTED = "computed"  # by a built-in encoder
PLUGIN = "plugin"  # by the configured plug-in
IMPORTED = "imported"  # brought in by `memory-pipeline import`
MEAN_OF_MEMBERS = "mean_of_members"  # a summary's offline vector: normalised mean of its members' vectors

Encoder = Callable[[Sequence[str]], np.ndarray]


class EmbedderSettingError(SettingsError):
    """A bad embedder setting or plug-in; the message names the variable and says what to do."""


@functools.cache
def _known() -> dict[str, int]:
    data = json.loads((Path(__file__).with_name("models.json")).read_text(encoding="utf-8"))
    return {str(k): int(v) for k, v in data["dimensions"].items()}


def known_dimension(model: str) -> int | None:
    """The native dimension of a known model (models.json), else None."""
    return _known().get(model)


def parse_model_setting(value: str) -> tuple[str, bool]:
    """`imported:<name>` → (name, True): cluster on vectors imported under <name>; otherwise (value, False)."""
    value = value.strip()
    if value.startswith(IMPORTED_PREFIX):
        name = value[len(IMPORTED_PREFIX) :].strip()
        if not name:
            raise EmbedderSettingError(f"{ENV_MODEL}=imported: needs a model name (imported:text-embedding-3-small)")
        return name, True
    return value or MINILM, False


def check_setting(model: str, imported: bool, plugin: str) -> None:
    """Reject combinations that cannot work before a run writes anything."""
    if plugin and model in BUILTIN:
        raise EmbedderSettingError(
            f"{ENV_PLUGIN}={plugin} with the built-in model {model!r}: a plug-in embeds for its own model; "
            f"set {ENV_MODEL} to the plug-in's model name (or imported:<name>)"
        )
    if not imported and not plugin and model not in BUILTIN:
        raise EmbedderSettingError(
            f"{ENV_MODEL}={model}: unknown model (built-in: {', '.join(BUILTIN)}); to cluster on vectors you "
            f"imported under that name set {ENV_MODEL}=imported:{model}, and to embed new texts with your own "
            f"code set {ENV_PLUGIN}=package.module:function"
        )


class PluginEncoder:
    """A loaded plug-in: `encode(texts)` validated to return (len(texts), dim) finite float32 rows."""

    def __init__(self, path: str, fn: Encoder, dimension: int | None) -> None:
        self.path = path
        self._fn = fn
        self.dimension = dimension

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        try:
            out = np.asarray(self._fn(texts), dtype=np.float32)
        except Exception as exc:
            raise EmbedderSettingError(f"embedder plug-in {self.path} failed: {type(exc).__name__}: {exc}") from exc
        if out.ndim != 2 or out.shape[0] != len(texts):
            raise EmbedderSettingError(
                f"embedder plug-in {self.path} returned shape {out.shape} for {len(texts)} texts; "
                f"expected ({len(texts)}, dim)"
            )
        if self.dimension is not None and out.shape[1] != self.dimension:
            raise EmbedderSettingError(
                f"embedder plug-in {self.path} returned {out.shape[1]}-d vectors; it declares {self.dimension}"
            )
        if not np.isfinite(out).all():
            raise EmbedderSettingError(f"embedder plug-in {self.path} returned NaN or infinite values")
        return out


@functools.cache
def load_plugin(path: str) -> PluginEncoder:
    """`package.module:attr` → an encoder. `attr` is a function `texts -> array`, an object with `encode`,
    or a class (instantiated without arguments) with `encode`. An optional int attribute `dimension` on the
    function, object or class declares the output dimension, so imports and runs can check it."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise EmbedderSettingError(f"{ENV_PLUGIN}={path!r}: expected 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise EmbedderSettingError(f"{ENV_PLUGIN}={path}: cannot import {module_name!r}: {exc}") from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise EmbedderSettingError(f"{ENV_PLUGIN}={path}: module {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if isinstance(target, type):
        try:
            target = target()
        except Exception as exc:
            raise EmbedderSettingError(f"{ENV_PLUGIN}={path}: cannot instantiate {attr}: {exc}") from exc
    fn = target.encode if hasattr(target, "encode") and callable(target.encode) else target
    if not callable(fn):
        raise EmbedderSettingError(f"{ENV_PLUGIN}={path}: {attr!r} is neither callable nor has an encode method")
    dimension = getattr(target, "dimension", None)
    return PluginEncoder(path, fn, int(dimension) if isinstance(dimension, int) else None)


def normalised_mean(vectors: np.ndarray) -> np.ndarray:
    """The offline summary vector: the mean of the members' vectors, scaled to unit length (float32)."""
    mean = np.asarray(vectors, dtype=np.float64).mean(axis=0)
    norm = math.sqrt(float(mean @ mean))
    return (mean / norm if norm > 0 else mean).astype(np.float32)
