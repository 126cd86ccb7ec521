"""Bring existing memories in: JSONL, Parquet, and a Helios-style SQLite `brain.db`.

Every importer validates the whole input first and writes in one transaction: a single bad line or row
rejects the import, with a message naming the file, the line or row, and the field. Inside that transaction
the store's blocking invariants are evaluated before and after the insert (`validate`): a file that would
leave a state every later night fails on (an archived row no summary lists, a summary whose sources are
missing, …) is rejected naming the row and the invariant, and nothing is written.
"""

from __future__ import annotations

import json
import sqlite3
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import duckdb
import numpy as np

from memory_pipeline.embedding.dimensions import (
    IncomingVector,
    configured_dimension,
    dimension_errors,
    store_dimensions,
)
from memory_pipeline.embedding.spec import IMPORTED
from memory_pipeline.errors import UserError
from memory_pipeline.faults import crash_point
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import MemoryStore, first_line, utcnow
from memory_pipeline.store.invariants import Violation
from memory_pipeline.store.records import ImportRejected, MemoryRecord, RecordError, check_vector, parse_record

MAX_LINE_BYTES = 8 * 1024 * 1024  # one JSONL record; longer lines are rejected without reading them into memory
SHOWN_IDS = 5
FORMATS = ".jsonl, .ndjson, .parquet or a SQLite .db/.sqlite/.sqlite3"

# Evaluates the store's blocking invariants on an open connection (the CLI passes the asset checks' own).
Validator = Callable[[duckdb.DuckDBPyConnection], list[Violation]]


class ImportFileError(UserError, ValueError):
    """The file as a whole cannot be read (wrong format, damaged, a directory); nothing was written."""


class ImportFileMissing(UserError, FileNotFoundError):
    """The path does not exist."""


@dataclass(frozen=True)
class ImportSummary:
    source: str
    memories: int
    embeddings: int
    skipped: int = 0  # ids already stored with identical content (--skip-existing)


def _shown(ids: list[str]) -> str:
    more = f", … and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else ""
    return ", ".join(ids[:SHOWN_IDS]) + more


def _existing(
    con: duckdb.DuckDBPyConnection, records: list[MemoryRecord], first_seen: dict[str, str], skip_existing: bool
) -> tuple[set[str], list[RecordError]]:
    """Ids already stored: with `skip_existing`, those whose content and created_at (the fields no run ever
    changes) are identical are skipped; a different one is an error naming the id and the line. Without it,
    one error counts them all."""
    clash = repo.existing_ids(con, [r.id for r in records])
    if not clash:
        return set(), []
    ordered = [r for r in records if r.id in clash]
    if not skip_existing:
        ids = [r.id for r in ordered]
        return set(), [
            RecordError(
                first_seen[ids[0]],
                "id",
                f"{len(ids)} id(s) already in the store ({_shown(ids)}); "
                "`import --skip-existing` skips those stored with identical content",
            )
        ]
    stored = {
        row[0]: (row[1], row[2])
        for row in con.execute(
            "SELECT id, content, created_at FROM memories WHERE list_contains(?, id)", [sorted(clash)]
        ).fetchall()
    }
    skipped: set[str] = set()
    errors: list[RecordError] = []
    for r in ordered:
        content, created_at = stored[r.id]
        if content != r.content:
            errors.append(
                RecordError(first_seen[r.id], "content", f"id {r.id!r} is already stored with different content")
            )
        elif created_at != r.created_at:
            errors.append(
                RecordError(
                    first_seen[r.id], "created_at", f"id {r.id!r} is already stored with created_at {created_at}"
                )
            )
        else:
            skipped.add(r.id)
    return skipped, errors


def _new_violations(before: list[Violation], after: list[Violation], first_seen: dict[str, str]) -> list[RecordError]:
    """Violations the insert created, each naming the imported row (or the stored row it broke)."""
    seen = {(v.check, v.field, i) for v in before for i in v.ids}
    errors: list[RecordError] = []
    for v in after:
        for i in v.ids:
            if (v.check, v.field, i) in seen:
                continue
            detail = f" ({v.details[i]})" if i in v.details else ""
            where = first_seen.get(i, f"stored memory {i!r}")
            errors.append(RecordError(where, v.field, f"{v.problem}{detail} [invariant {v.check}]"))
    return sorted(errors, key=lambda e: e.where.startswith("stored memory"))  # the file's own rows first


def _finish(
    store: MemoryStore,
    source: str,
    parsed: Iterable[tuple[str, MemoryRecord]],
    errors: list[RecordError],
    embedding_models: dict[str, str] | None = None,
    vector_origins: dict[str, tuple[str, str]] | None = None,
    *,
    skip_existing: bool = False,
    validate: Validator | None = None,
) -> ImportSummary:
    records: list[MemoryRecord] = []
    first_seen: dict[str, str] = {}
    for where, record in parsed:
        if record.id in first_seen:
            errors.append(RecordError(where, "id", f"duplicate id {record.id!r} (first at {first_seen[record.id]})"))
            continue
        first_seen[record.id] = where
        records.append(record)
    if not records and not errors:  # an empty file: nothing written, but the workspace has its (empty) store now,
        store.migrate()  # so `run` and `status` find it instead of asking for the import that just happened
        return ImportSummary(source, 0, 0)
    store.migrate()
    with store.connect() as con:
        skipped, clash_errors = _existing(con, records, first_seen, skip_existing)
    errors.extend(clash_errors)
    records = [r for r in records if r.id not in skipped]
    embedded = [r for r in records if r.embedding is not None]
    by_model: dict[str, list[MemoryRecord]] = {}
    for r in embedded:
        by_model.setdefault((embedding_models or {}).get(r.id, f"imported:{Path(source).name}"), []).append(r)
    with store.connect() as con:
        errors.extend(_vector_dimension_errors(con, by_model, first_seen, vector_origins or {}))
    if errors:
        raise ImportRejected(source, errors)
    with store.transaction() as con:  # one transaction: any exception below (or a kill) leaves nothing behind
        before = validate(con) if validate else []
        repo.insert_memories(con, records)  # no run id: reconciliation only ever touches rows a run wrote
        crash_point("inside_import")
        for model, group in by_model.items():
            vectors = np.array([r.embedding for r in group], dtype=np.float32)
            repo.upsert_embeddings(con, model, [r.id for r in group], vectors, utcnow(), source=IMPORTED)
        if validate:
            broken = _new_violations(before, validate(con), first_seen)
            if broken:
                raise ImportRejected(source, broken)
    return ImportSummary(source, len(records), len(embedded), len(skipped))


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


def _lines(fh: IO[bytes], path: Path) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) with a UTF-8 BOM dropped; None for a line over MAX_LINE_BYTES (skipped unread)."""
    head = fh.read(4)
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise ImportFileError(f"{path}: the file is UTF-16 encoded; save it as UTF-8 (one JSON object per line)")
    fh.seek(3 if head[:3] == b"\xef\xbb\xbf" else 0)
    lineno = 0
    while raw := fh.readline(MAX_LINE_BYTES + 1):
        lineno += 1
        if len(raw) > MAX_LINE_BYTES:
            while (rest := fh.readline(1 << 20)) and not rest.endswith(b"\n"):
                pass
            yield lineno, None
            continue
        yield lineno, raw


def import_jsonl(
    store: MemoryStore, path: Path, *, skip_existing: bool = False, validate: Validator | None = None
) -> ImportSummary:
    """One JSON object per line; blank lines are ignored. An `embedding` needs an `embedding_model`."""
    parsed: list[tuple[str, MemoryRecord]] = []
    errors: list[RecordError] = []
    models: dict[str, str] = {}
    with open(path, "rb") as fh:
        for lineno, raw in _lines(fh, path):
            where = f"{path}:{lineno}"
            if raw is None:
                errors.append(RecordError(where, "<line>", f"longer than {MAX_LINE_BYTES // 2**20} MiB"))
                continue
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
            except RecursionError:
                errors.append(RecordError(where, "<line>", "invalid JSON: nested too deeply"))
                continue
            try:
                record = parse_record(obj, where)
                if record.embedding is not None:
                    models[record.id] = _embedding_model(obj, where)
                parsed.append((where, record))
            except RecordError as exc:
                errors.append(exc)
    return _finish(store, str(path), parsed, errors, models, skip_existing=skip_existing, validate=validate)


def import_parquet(
    store: MemoryStore, path: Path, *, skip_existing: bool = False, validate: Validator | None = None
) -> ImportSummary:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except (pa.ArrowException, OSError) as exc:
        raise ImportFileError(f"{path}: not a readable Parquet file ({first_line(exc)})") from None
    parsed: list[tuple[str, MemoryRecord]] = []
    errors: list[RecordError] = []
    models: dict[str, str] = {}
    for i, row in enumerate(rows, start=1):
        where = f"{path}: row {i}"
        try:
            record = parse_record(_plain(row), where)
            if record.embedding is not None:
                models[record.id] = _embedding_model(row, where)
            parsed.append((where, record))
        except RecordError as exc:
            errors.append(exc)
    return _finish(store, str(path), parsed, errors, models, skip_existing=skip_existing, validate=validate)


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


def import_brain_db(
    store: MemoryStore, path: Path, *, skip_existing: bool = False, validate: Validator | None = None
) -> ImportSummary:
    """Seed 000's `memories` and `embeddings` tables (vectors as float32 BLOBs or JSON lists)."""
    if not path.is_file():
        raise ImportFileMissing(f"{path}: no such file")
    try:
        parsed, errors, models, origins = _read_brain_db(path)
    except sqlite3.Error as exc:
        raise ImportFileError(
            f"{path}: not a readable SQLite database ({first_line(exc)}); expected a brain.db with a `memories` table"
        ) from None
    return _finish(store, str(path), parsed, errors, models, origins, skip_existing=skip_existing, validate=validate)


def _read_brain_db(
    path: Path,
) -> tuple[list[tuple[str, MemoryRecord]], list[RecordError], dict[str, str], dict[str, tuple[str, str]]]:
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
            raise ImportFileError(f"{path}: no `memories` table (expected a brain.db as in seed 000)")
        vectors: dict[str, tuple[str, Any]] = {}
        if "embeddings" in tables:
            columns = {r[1].decode() for r in con.execute("PRAGMA table_info(embeddings)")}
            if missing := sorted({"memory_id", "vector"} - columns):
                raise ImportFileError(f"{path}: table `embeddings` has no {', '.join(missing)} column")
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
                    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in obj["embedding"]):
                        check_vector([float(v) for v in obj["embedding"]], vec_where, "vector")
                    models[str(obj["id"])] = model
                    origins[str(obj["id"])] = (vec_where, "vector")
                parsed.append((where, parse_record(obj, where)))
            except RecordError as exc:
                errors.append(exc)
    finally:
        con.close()
    return parsed, errors, models, origins


def import_path(
    store: MemoryStore, path: Path, *, skip_existing: bool = False, validate: Validator | None = None
) -> ImportSummary:
    """Dispatch on the extension. The store is not opened until the whole file has been read and checked."""
    suffix = path.suffix.lower()
    if not path.exists():
        raise ImportFileMissing(f"{path}: no such file")
    if path.is_dir():
        raise ImportFileError(f"{path} is a directory; give one {FORMATS} file")
    options: dict[str, Any] = {"skip_existing": skip_existing, "validate": validate}
    if suffix in (".jsonl", ".ndjson"):
        return import_jsonl(store, path, **options)
    if suffix == ".parquet":
        return import_parquet(store, path, **options)
    if suffix in (".db", ".sqlite", ".sqlite3"):
        return import_brain_db(store, path, **options)
    raise ImportFileError(f"{path}: unknown import format {suffix!r} (expected {FORMATS})")
