"""all-MiniLM-L6-v2 on ONNX Runtime: the same vectors as the numpy forward pass (fp32), the int8 variant as a
model of its own, the built graph cached under a hash of the weights, and the numpy fallback."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memory_pipeline.embedding import encoder, minilm, onnx_minilm, spec
from memory_pipeline.embedding.encoder import get_encoder
from memory_pipeline.embedding.minilm import MiniLMEncoder
from memory_pipeline.embedding.onnx_minilm import OnnxMiniLMEncoder
from memory_pipeline.resources import EmbedderResource
from memory_pipeline.store import MemoryStore
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import utcnow
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline.store.night_vectors import plan_vectors

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "minilm_reference.json"


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    """The reference set: short, empty, non-Latin, emoji, >128 and >256 tokens."""
    return list(json.loads(FIXTURE.read_text(encoding="utf-8"))["sentences"])


@pytest.fixture(scope="module")
def numpy_vectors(sentences: list[str]) -> np.ndarray:
    return MiniLMEncoder().encode(sentences)


@pytest.fixture(scope="module")
def fp32() -> OnnxMiniLMEncoder:
    return OnnxMiniLMEncoder(variant="fp32").load()


@pytest.fixture(scope="module")
def int8() -> OnnxMiniLMEncoder:
    return OnnxMiniLMEncoder(variant="int8").load()


@pytest.fixture
def fresh_get_encoder() -> Iterator[None]:
    get_encoder.cache_clear()
    try:
        yield
    finally:
        get_encoder.cache_clear()


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_fp32_gives_the_numpy_vectors(fp32: OnnxMiniLMEncoder, sentences: list[str], numpy_vectors: np.ndarray) -> None:
    """Same vectors, so the same model spec: a store embedded by either is read with the other's queries."""
    ours = fp32.encode(sentences)
    assert ours.shape == numpy_vectors.shape and ours.dtype == np.float32
    cos = _cosines(ours, numpy_vectors)
    assert cos.min() >= 0.9999, {sentences[i][:30]: float(cos[i]) for i in np.flatnonzero(cos < 0.9999)}
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    reference = np.asarray(json.loads(FIXTURE.read_text(encoding="utf-8"))["vectors"], dtype=np.float32)
    assert _cosines(ours, reference).min() >= 0.9999  # and sentence-transformers' own


def test_fp32_query_path_and_batches_agree(fp32: OnnxMiniLMEncoder, sentences: list[str]) -> None:
    """One text at a time (the query path, no padding), small padded batches and big ones: the same rows."""
    batched = fp32.encode(sentences)
    one_by_one = np.stack([fp32.encode([s])[0] for s in sentences])
    small = fp32.encode(sentences, batch_size=3)
    np.testing.assert_allclose(one_by_one, batched, atol=1e-5, rtol=0)
    np.testing.assert_allclose(small, batched, atol=1e-5, rtol=0)
    reversed_ = fp32.encode(sentences[::-1], batch_size=4)[::-1]
    np.testing.assert_allclose(reversed_, batched, atol=1e-5, rtol=0)
    assert fp32.encode([]).shape == (0, 384)
    with pytest.raises(TypeError):
        fp32.encode("a single string")  # type: ignore[arg-type]


def test_int8_moves_vectors_beyond_fp32_tolerance_so_it_is_a_model_of_its_own(
    int8: OnnxMiniLMEncoder, sentences: list[str], numpy_vectors: np.ndarray
) -> None:
    cos = _cosines(int8.encode(sentences), numpy_vectors)
    assert cos.min() < 0.9999  # not the same vectors: a separate spec
    assert cos.min() > 0.97 and cos.mean() > 0.985  # but the same space, roughly (per-channel weights)
    assert spec.MINILM_INT8 in spec.BUILTIN and spec.MINILM_INT8 != spec.MINILM
    assert spec.known_dimension(spec.MINILM_INT8) == 384
    spec.check_setting(spec.MINILM_INT8, imported=False, plugin="")
    resource = EmbedderResource(model=spec.MINILM_INT8)
    np.testing.assert_array_equal(resource.encode(sentences[:4]), int8.encode(sentences[:4]))
    assert resource.summary_method == f"computed:{spec.MINILM_INT8}"


def test_a_store_embedded_with_one_spec_is_not_read_with_the_other(tmp_path: Path) -> None:
    """Vectors are stored under their model's name: switching to int8 re-embeds everything under the int8
    name and leaves the fp32 vectors alone; switching back finds them complete."""
    jsonl = tmp_path / "mine.jsonl"
    texts = ["tea in the morning", "the deploy failed on Friday", "Alice moved to Lisbon"]
    jsonl.write_text(
        "".join(
            json.dumps({"id": f"m-{i}", "content": t, "created_at": "2026-10-20T10:00:00Z"}) + "\n"
            for i, t in enumerate(texts)
        ),  # fmt: skip
        encoding="utf-8",
    )
    store = MemoryStore(tmp_path / "memory.duckdb")
    import_jsonl(store, jsonl)
    with store.transaction() as con:
        repo.upsert_embeddings(con, spec.MINILM, ["m-0", "m-1", "m-2"], MiniLMEncoder().encode(texts), utcnow())
    with store.connect() as con:
        assert plan_vectors(con, spec.MINILM, True, False, 384).todo.empty
        todo = plan_vectors(con, spec.MINILM_INT8, True, False, 384).todo
        assert sorted(todo["id"]) == ["m-0", "m-1", "m-2"]


def test_get_encoder_prefers_onnx_runtime(fresh_get_encoder: None) -> None:
    enc = get_encoder()
    assert isinstance(enc, OnnxMiniLMEncoder) and enc.variant == "fp32"
    assert get_encoder() is enc
    assert isinstance(get_encoder(variant="int8"), OnnxMiniLMEncoder)
    with pytest.raises(ValueError, match="unknown variant"):
        get_encoder(variant="fp16")


def test_falls_back_to_numpy_when_onnx_runtime_cannot_load(
    fresh_get_encoder: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(onnx_minilm.CACHE_ENV, str(tmp_path))  # nothing cached: the build needs `onnx` too
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    monkeypatch.setitem(sys.modules, "onnx", None)
    with caplog.at_level(logging.WARNING, logger=encoder.__name__):
        enc = get_encoder()
    assert isinstance(enc, MiniLMEncoder)
    assert "ONNX Runtime unavailable" in caplog.text and "numpy" in caplog.text
    assert enc.encode(["still embeds"]).shape == (1, 384)
    with pytest.raises(RuntimeError, match="int8 all-MiniLM-L6-v2 runs only on ONNX Runtime"):
        get_encoder(variant="int8")


def test_built_model_is_cached_by_weights_hash_and_written_atomically(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sentences: list[str], numpy_vectors: np.ndarray
) -> None:
    monkeypatch.setenv(onnx_minilm.CACHE_ENV, str(tmp_path))
    model_dir = minilm.default_model_dir()
    path = onnx_minilm.model_file(model_dir)
    assert path.parent == tmp_path / "onnx" and onnx_minilm.weights_digest(model_dir) in path.name
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind
    built = path.stat().st_mtime_ns

    def no_build(_: Path) -> None:
        raise AssertionError("rebuilt a cached model")

    monkeypatch.setattr(onnx_minilm, "build_graph", no_build)
    assert onnx_minilm.model_file(model_dir) == path and path.stat().st_mtime_ns == built

    # a failed build leaves neither the model nor a temporary file
    monkeypatch.setattr(onnx_minilm, "BUILDER_VERSION", onnx_minilm.BUILDER_VERSION + 1)
    onnx_minilm.weights_digest.cache_clear()
    try:
        with pytest.raises(AssertionError, match="rebuilt"):
            onnx_minilm.model_file(model_dir)  # a new builder version is a new key
        assert [p.name for p in path.parent.iterdir()] == [path.name]
    finally:
        onnx_minilm.weights_digest.cache_clear()


def test_an_unreadable_cached_model_is_rebuilt(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sentences: list[str], numpy_vectors: np.ndarray
) -> None:
    monkeypatch.setenv(onnx_minilm.CACHE_ENV, str(tmp_path))
    path = onnx_minilm.model_file(minilm.default_model_dir())
    path.write_bytes(b"not a model")
    enc = OnnxMiniLMEncoder().load()
    assert _cosines(enc.encode(sentences[:5]), numpy_vectors[:5]).min() >= 0.9999
    assert path.stat().st_size > 10_000_000


def test_cache_dir_follows_the_setting_and_the_platform(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(onnx_minilm.CACHE_ENV, str(tmp_path / "c"))
    assert onnx_minilm.cache_dir() == tmp_path / "c"
    monkeypatch.delenv(onnx_minilm.CACHE_ENV)
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert onnx_minilm.cache_dir() == tmp_path / "xdg" / "memory_pipeline"
    assert os.path.isabs(onnx_minilm.cache_dir())
