"""Which embedder the workspace uses and how it encodes, as plain Python: the read path (search, context, the MCP
server) builds one without importing Dagster, and the night's `EmbedderResource` is this with Dagster config.

Default: all-MiniLM-L6-v2 run offline (ONNX Runtime, else a numpy forward pass). Bring your own embeddings:
`imported=True` clusters on vectors imported under `model` (env `MEMORY_PIPELINE_EMBEDDER=imported:<model>`), and
`plugin` ("package.module:function", env `MEMORY_PIPELINE_EMBEDDER_PLUGIN`) embeds new texts in that model's
space. Without a plug-in, summaries of an imported model get the normalised mean of their members' vectors (see
memory_pipeline/embedding/summaries.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memory_pipeline.embedding import spec
from memory_pipeline.embedding.hashing import hashing_embed
from memory_pipeline.embedding.spec import MINILM


def _builtin_encode(model: str, texts: Sequence[str], batch_size: int) -> np.ndarray:
    if model in (MINILM, spec.MINILM_INT8):
        from memory_pipeline.embedding.encoder import get_encoder

        return get_encoder(variant="int8" if model == spec.MINILM_INT8 else "fp32").encode(list(texts), batch_size)
    return hashing_embed(texts)


@dataclass(frozen=True)
class Embedder:
    """`model` names the vectors the night clusters on (stored with every vector, so a change re-embeds).
    `imported`: those vectors come from `memory-pipeline import`; the night computes one only with an encoder
    for the model (a built-in or the plug-in). `plugin`: "package.module:function" embedding texts for `model`."""

    model: str = MINILM
    batch_size: int = 64
    imported: bool = False
    plugin: str = ""

    @classmethod
    def from_env(cls) -> Embedder:
        """MEMORY_PIPELINE_EMBEDDER (a built-in name, `imported:<name>`, or the plug-in's model name) and
        MEMORY_PIPELINE_EMBEDDER_PLUGIN. Raises EmbedderSettingError naming the variable on a bad combination."""
        model, imported = spec.parse_model_setting(os.environ.get(spec.ENV_MODEL, MINILM))
        plugin = os.environ.get(spec.ENV_PLUGIN, "").strip()
        spec.check_setting(model, imported, plugin)
        if plugin:
            spec.load_plugin(plugin)  # a plug-in that cannot be imported fails here, before any run starts
        return cls(model=model, imported=imported, plugin=plugin)

    def check(self) -> None:
        """Fail early and clearly on a setting that cannot work (also loads the plug-in)."""
        spec.check_setting(self.model, self.imported, self.plugin)
        if self.plugin:
            spec.load_plugin(self.plugin)

    @property
    def can_encode(self) -> bool:
        """Whether texts can be embedded in `model`'s space (built-in model or a plug-in)."""
        return bool(self.plugin) or self.model in spec.BUILTIN

    @property
    def compute_source(self) -> str:
        """The `embeddings.source` of a vector this embedder computes."""
        return spec.PLUGIN if self.plugin else spec.COMPUTED

    @property
    def summary_method(self) -> str:
        """How the night embeds new summaries: by the plug-in, the built-in encoder, or the members' mean."""
        if self.plugin:
            return f"plugin:{self.plugin}"
        if self.model in spec.BUILTIN:
            return f"computed:{self.model}"
        return spec.MEAN_OF_MEMBERS

    @property
    def expected_dimension(self) -> int | None:
        """The model's dimension if known (models.json) or declared by the plug-in; else the store decides."""
        known = spec.known_dimension(self.model)
        if known is None and self.plugin:
            return spec.load_plugin(self.plugin).dimension
        return known

    def describe(self) -> str:
        source = "imported" if self.imported else ("plugin" if self.plugin else "computed")
        return f"{self.model} ({source}; summaries: {self.summary_method})"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors in `model`'s space. Raises EmbedderSettingError when there is no encoder for the model."""
        if self.plugin:
            spec.check_setting(self.model, self.imported, self.plugin)
            return spec.load_plugin(self.plugin).encode(texts)
        if self.model in spec.BUILTIN:
            return _builtin_encode(self.model, texts, self.batch_size)
        spec.check_setting(self.model, self.imported, self.plugin)  # names the variable for a bare unknown name
        raise spec.EmbedderSettingError(
            f"no encoder for the imported model {self.model!r}: set {spec.ENV_PLUGIN}=package.module:function "
            "to embed new texts in its space"
        )

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        """For comparing texts within one step (atom matching, recall), never stored with a model name: the
        model's own encoder when there is one, else all-MiniLM-L6-v2."""
        if self.can_encode:
            return self.encode(texts)
        return _builtin_encode(MINILM, texts, self.batch_size)
