"""Plug-in loading and the example plug-ins: what a user copies must work as documented."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import duckdb
import numpy as np
import pytest

from memory_pipeline.embedding import spec
from memory_pipeline.embedding.plugins.example import OpenAIEmbeddings, toy_1536
from memory_pipeline.resources import EmbedderResource
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.migrations import MIGRATIONS


@pytest.fixture(autouse=True)
def _fresh_plugins() -> Iterator[None]:
    """load_plugin caches per path; a test that changes a plug-in must not leak into the next."""
    spec.load_plugin.cache_clear()
    yield
    spec.load_plugin.cache_clear()


class _FakeEmbeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible /embeddings endpoint: vector i is [len(text), i, 1, 0, …] (1536-d), answered in
    reverse order so the client must sort by `index`."""

    requests: list[tuple[str, dict]] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append((self.headers["Authorization"], body))
        data = []
        for i, text in enumerate(body["input"]):
            vector = [0.0] * 1536
            vector[:3] = [float(len(text)), float(i), 1.0]
            data.append({"object": "embedding", "index": i, "embedding": vector})
        payload = json.dumps({"object": "list", "data": data[::-1], "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeEmbeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FakeEmbeddings.requests = []
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("MEMORY_PIPELINE_PLUGIN_BATCH", "2")
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_openai_example_batches_and_keeps_input_order(fake_api: str) -> None:
    path = "memory_pipeline.embedding.plugins.example:OpenAIEmbeddings"
    encoder = spec.load_plugin(path)
    out = encoder.encode(["a", "bbb", "cc"])
    assert out.shape == (3, 1536) and out.dtype == np.float32
    assert out[:, :3].tolist() == [[1.0, 0.0, 1.0], [3.0, 1.0, 1.0], [2.0, 0.0, 1.0]]  # 2 batches: a+bbb, cc
    assert [(auth, body["model"], body["input"]) for auth, body in _FakeEmbeddings.requests] == [
        ("Bearer sk-test", "text-embedding-3-small", ["a", "bbb"]),
        ("Bearer sk-test", "text-embedding-3-small", ["cc"]),
    ]
    assert encoder.dimension == OpenAIEmbeddings.dimension == 1536


def test_resource_uses_the_plugin_and_checks_its_output(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = EmbedderResource(model="my-model", plugin="memory_pipeline.embedding.plugins.example:toy_1536")
    np.testing.assert_allclose(embedder.encode(["some text"]), toy_1536(["some text"]), atol=1e-7)
    assert (embedder.expected_dimension, embedder.summary_method) == (1536, "plugin:" + embedder.plugin)

    monkeypatch.setattr(toy_1536, "dimension", 768)  # the function now declares another dimension
    spec.load_plugin.cache_clear()
    with pytest.raises(spec.EmbedderSettingError, match="returned 1536-d vectors; it declares 768"):
        embedder.encode(["x"])


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no_colon", "expected 'package.module:function'"),
        ("memory_pipeline.embedding.plugins.example:nope", "has no attribute 'nope'"),
        ("memory_pipeline.embedding.plugins.example:DIMENSION", "neither callable nor has an encode method"),
    ],
)
def test_bad_plugin_paths_say_what_is_wrong(path: str, message: str) -> None:
    with pytest.raises(spec.EmbedderSettingError, match=message):
        spec.load_plugin(path)


def test_a_plugin_returning_the_wrong_shape_is_named() -> None:
    encoder = spec.PluginEncoder("pkg.mod:fn", lambda texts: np.zeros((1, 4)), None)
    with pytest.raises(spec.EmbedderSettingError, match=r"pkg\.mod:fn returned shape \(1, 4\) for 2 texts"):
        encoder.encode(["a", "b"])
    nan = spec.PluginEncoder("pkg.mod:fn", lambda texts: np.full((len(texts), 4), np.nan), None)
    with pytest.raises(spec.EmbedderSettingError, match="NaN or infinite"):
        nan.encode(["a"])


def test_migration_marks_vectors_from_before_it(tmp_path: Path) -> None:
    """A store from before `embeddings.source`: the two built-in models were computed, anything else imported."""
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP)")
    for m in MIGRATIONS:
        if m.version < 5:
            for statement in m.statements:
                con.execute(statement)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", [m.version, m.name, datetime(2026, 1, 1)])
    for mid, model in (("a", spec.MINILM), ("b", "text-embedding-3-small"), ("c", spec.HASHING)):
        con.execute("INSERT INTO embeddings VALUES (?, ?, 2, [0.6, 0.8], now())", [mid, model])
    con.close()
    store = MemoryStore(path)
    assert 5 in store.migrate()
    with store.connect() as c:
        assert c.execute("SELECT memory_id, source FROM embeddings ORDER BY 1").fetchall() == [
            ("a", "computed"), ("b", "imported"), ("c", "computed")
        ]


def test_parquet_vectors_go_under_their_embedding_model(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from memory_pipeline.store.importers import import_parquet

    rows = [
        {"id": f"r{i}", "content": f"text {i}", "created_at": "2026-10-01", "embedding": [0.6, 0.8, 0.0],
         "embedding_model": model}
        for i, model in enumerate(["model-a", "model-a", "model-b"])
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in.parquet")
    store = MemoryStore(tmp_path / "m.duckdb")
    assert import_parquet(store, tmp_path / "in.parquet").embeddings == 3
    with store.connect() as con:
        assert con.execute("SELECT memory_id, model, source FROM embeddings ORDER BY 1").fetchall() == [
            ("r0", "model-a", "imported"), ("r1", "model-a", "imported"), ("r2", "model-b", "imported")
        ]
