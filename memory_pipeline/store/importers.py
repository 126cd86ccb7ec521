"""Bring existing memories in: JSONL, Parquet, and a Helios-style SQLite `brain.db`.

Every importer validates the whole input first and writes in one transaction: a single bad line or row
rejects the import, with a message naming the file, the line or row, and the field.
"""

from __future__ import annotations

import json
import sqlite3
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from memory_pipeline.embedding.dimensions import (
    IncomingVector,
    configured_dimension,
    dimension_errors,
    store_dimensions,
)
from memory_pipeline.embedding.spec import IMPORTED
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import MemoryStore, utcnow
from memory_pipeline.store.records import ImportRejected, MemoryRecord, RecordError, parse_record


@dataclass(frozen=True)
class ImportSummary:
    source: str
    memories: int
    embeddings: int


def _finish(
    store: MemoryStore,
    source: str,
    parsed: Iterable[tuple[str, MemoryRecord]],
    errors: list[RecordError],
    embedding_models: dict[str, str] | None = None,
    vector_origins: dict[str, tuple[str, str]] | None = None,
) -> ImportSummary:
    records: list[MemoryRecord] = []
    first_seen: dict[str, str] = {}
    for where, record in parsed:
        if record.id in first_seen:
            errors.append(RecordError(where, "id", f"duplicate id {record.id!r} (first at {first_seen[record.id]})"))
            continue
        first_seen[record.id] = where
        records.append(record)
    store.migrate()
    embedded = [r for r in records if r.embedding is not None]
    by_model: dict[str, list[MemoryRecord]] = {}
    for r in embedded:
        by_model.setdefault((embedding_models or {}).get(r.id, f"imported:{Path(source).name}"), []).append(r)
    with store.connect() as con:
        clash = repo.existing_ids(con, [r.id for r in records])
        vector_errors = _vector_dimension_errors(con, by_model, first_seen, vector_origins or {})
    for record in records:
        if record.id in clash:
            errors.append(RecordError(first_seen[record.id], "id", f"id {record.id!r} already exists in the store"))
    errors.extend(vector_errors)
    if errors:
        raise ImportRejected(source, errors)
    with store.transaction() as con:
        repo.insert_memories(con, records)
        for model, group in by_model.items():
            vectors = np.array([r.embedding for r in group], dtype=np.float32)
            repo.upsert_embeddings(con, model, [r.id for r in group], vectors, utcnow(), source=IMPORTED)
    return ImportSummary(source, len(records), len(embedded))


def _vector_dimension_errors(
    con: duckdb.DuckDBPyConnection,
    by_model: dict[str, list[MemoryRecord]],
    first_seen: dict[str, str],
    origins: dict[str, tuple[str, str]],
) -> list[RecordError]:
    """A vector whose dimension is not its model's (native, plug-in's, the store's, or the file's first) is
    rejected naming where it is and its field (`embedding`, or a brain.db embeddings row's `vector`)."""
    incoming = [
        IncomingVector(r.id, *origins.get(r.id, (first_seen[r.id], "embedding")), model, len(r.embedding or []))
        for model, group in by_model.items()
        for r in group
    ]
    found = dimension_errors(incoming, store_dimensions(con), configured_dimension())
    return [RecordError(where, field, message) for where, field, message in found]


def _embedding_model(obj: dict[str, Any], where: str) -> str:
    """The model a record's `embedding` belongs to: `embedding_model`, required with a vector."""
    model = obj.get("embedding_model")
    if not isinstance(model, str) or not model.strip():
        raise RecordError(where, "embedding_model", "required when 'embedding' is given (the vectors' model name)")
    return model.strip()


def import_jsonl(store: MemoryStore, path: Path) -> ImportSummary:
    """One JSON object per line; blank lines are ignored. An `embedding` needs an `embedding_model`."""
    parsed: list[tuple[str, MemoryRecord]] = []
    errors: list[RecordError] = []
    models: dict[str, str] = {}
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                errors.append(RecordError(where, "<line>", f"invalid UTF-8 at byte {exc.start}"))
                continue
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(RecordError(where, "<line>", f"invalid JSON: {exc.msg} at column {exc.colno}"))
                continue
            try:
                record = parse_record(obj, where)
                if record.embedding is not None:
                    models[record.id] = _embedding_model(obj, where)
                parsed.append((where, record))
            except RecordError as exc:
                errors.append(exc)
    return _finish(store, str(path), parsed, errors, models)


def import_parquet(store: MemoryStore, path: Path) -> ImportSummary:
    import pyarrow.parquet as pq

    parsed: list[tuple[str, MemoryRecord]] = []
    errors: list[RecordError] = []
    models: dict[str, str] = {}
    for i, row in enumerate(pq.read_table(path).to_pylist(), start=1):
        where = f"{path}: row {i}"
        try:
            record = parse_record(_plain(row), where)
            if record.embedding is not None:
                models[record.id] = _embedding_model(row, where)
            parsed.append((where, record))
        except RecordError as exc:
            errors.append(exc)
    return _finish(store, str(path), parsed, errors, models)


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for key in ("created_at", "archived_at"):
        value = out.get(key)
        if value is not None and not isinstance(value, str):
            out[key] = value.isoformat()
    return out


def _decode_vector(value: Any, where: str) -> list[float]:
    if isinstance(value, bytes | memoryview):
        data = bytes(value)
        if len(data) % 4:
            raise RecordError(where, "vector", f"BLOB of {len(data)} bytes is not float32")
        return list(struct.unpack(f"<{len(data) // 4}f", data))
    if isinstance(value, str):
        try:
            vector = json.loads(value)
        except json.JSONDecodeError:
            raise RecordError(where, "vector", "neither a float32 BLOB nor a JSON list") from None
        if isinstance(vector, list):
            return vector
    raise RecordError(where, "vector", f"unsupported vector type {type(value).__name__}")


def import_brain_db(store: MemoryStore, path: Path) -> ImportSummary:
    """Seed 000's `memories` and `embeddings` tables (vectors as float32 BLOBs or JSON lists)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    con.text_factory = bytes
    parsed: list[tuple[str, MemoryRecord]] = []
    errors: list[RecordError] = []
    models: dict[str, str] = {}
    origins: dict[str, tuple[str, str]] = {}
    try:
        tables = {r[0].decode() for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "memories" not in tables:
            raise ImportRejected(str(path), [RecordError(str(path), "<table>", "no 'memories' table")])
        vectors: dict[str, tuple[str, Any]] = {}
        if "embeddings" in tables:
            for i, row in enumerate(con.execute("SELECT * FROM embeddings"), start=1):
                mid = (
                    row["memory_id"].decode("utf-8", "replace")
                    if isinstance(row["memory_id"], bytes)
                    else str(row["memory_id"])
                )
                model = row["model"].decode() if "model" in row.keys() and row["model"] else f"imported:{path.name}"
                vectors[mid] = (f"{path}: embeddings row {i}", (model, row["vector"]))
        for i, row in enumerate(con.execute("SELECT * FROM memories ORDER BY rowid"), start=1):
            where = f"{path}: memories row {i}"
            try:
                obj: dict[str, Any] = {}
                for key in row.keys():
                    value = row[key]
                    if isinstance(value, bytes):
                        try:
                            value = value.decode("utf-8")
                        except UnicodeDecodeError as exc:
                            raise RecordError(where, key, f"invalid UTF-8 at byte {exc.start}") from None
                    obj[key] = value
                if mid_vec := vectors.get(str(obj.get("id"))):
                    vec_where, (model, raw) = mid_vec
                    obj["embedding"] = _decode_vector(
                        raw.decode() if isinstance(raw, bytes) and raw[:1] == b"[" else raw, vec_where
                    )
                    models[str(obj["id"])] = model
                    origins[str(obj["id"])] = (vec_where, "vector")
                parsed.append((where, parse_record(obj, where)))
            except RecordError as exc:
                errors.append(exc)
    finally:
        con.close()
    return _finish(store, str(path), parsed, errors, models, origins)


def import_path(store: MemoryStore, path: Path) -> ImportSummary:
    suffix = path.suffix.lower()
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if suffix in (".jsonl", ".ndjson"):
        return import_jsonl(store, path)
    if suffix == ".parquet":
        return import_parquet(store, path)
    if suffix in (".db", ".sqlite", ".sqlite3"):
        return import_brain_db(store, path)
    raise ValueError(f"{path}: unknown import format {suffix!r} (expected .jsonl, .parquet or a SQLite .db)")
