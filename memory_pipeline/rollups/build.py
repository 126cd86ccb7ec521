"""Building one Core or Sphere end to end (no Dagster): assign, compress, validate, write file + row, counters.

Write order: the document is validated first (an invalid one is never written); then, inside one store
transaction, the row is saved and the JSON file written atomically before the commit. Sources are only read.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import duckdb

from memory_pipeline.rollups import compress, repository
from memory_pipeline.rollups.counters import counters_payload, sphere_core_keys, write_json_atomic
from memory_pipeline.rollups.schema import RollupSchemaError, validate
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.db import atomic, utcnow


class Summariser(Protocol):
    name: str

    def core(self, doc: dict[str, Any], rows: Any) -> dict[str, Any]: ...

    def sphere(self, doc: dict[str, Any], cores: Any) -> dict[str, Any]: ...


def cores_dir(home: Path) -> Path:
    return home / "knowledge" / "cores"


def spheres_dir(home: Path) -> Path:
    return home / "knowledge" / "spheres"


def counters_path(home: Path) -> Path:
    return home / "knowledge" / "state" / "compression_counters.json"


def _write_counters(con: duckdb.DuckDBPyConnection, home: Path, now: datetime) -> dict[str, Any]:
    _, assigned, cores_built, spheres_built = repository.counts(con)
    payload = counters_payload(assigned, cores_built, spheres_built, now)
    write_json_atomic(counters_path(home), payload)
    return payload


def write_counters(store: MemoryStore, home: Path, now: datetime | None = None) -> dict[str, Any]:
    """Recompute the counters from the store and write them for humans (atomic)."""
    with store.connect() as con:
        return _write_counters(con, home, now or utcnow())


def _assign(con: duckdb.DuckDBPyConnection, home: Path, now: datetime) -> int:
    with atomic(con):
        added = repository.sync_assignments(con, now)
    if added or not counters_path(home).exists():
        _write_counters(con, home, now)
    return added


def assign_sessions(store: MemoryStore, home: Path, now: datetime | None = None) -> int:
    """`compression_meta` for every new session (one transaction); the counters file follows every change."""
    with store.connect() as con:
        return _assign(con, home, now or utcnow())


@dataclass(frozen=True)
class Built:
    key: str
    path: Path
    document: dict[str, Any]


def _with_llm(doc: dict[str, Any], kind: str, improve: Any) -> dict[str, Any]:
    """The model's version if it conforms to the schema; else the offline one, with the reason in meta."""
    improved = improve(doc)
    if improved is doc:
        return doc
    try:
        return validate(improved, kind)
    except RollupSchemaError as exc:
        out = copy.deepcopy(doc)
        out["meta"]["llm_error"] = f"reply broke {kind}.schema.json: {'; '.join(exc.fields)}"
        return out


def build_core(
    store: MemoryStore, home: Path, core_id: str, summariser: Summariser | None = None, now: datetime | None = None
) -> Built:
    now = now or utcnow()
    with store.connect() as con:  # one connection: opening a DuckDB file costs ~0.1 s
        _assign(con, home, now)
        rows = repository.sessions_for_core(con, core_id)
        doc = validate(compress.build_core(rows, core_id, now), "core")
        if summariser is not None:
            doc = _with_llm(doc, "core", lambda d: summariser.core(d, rows))
        path = cores_dir(home) / f"{core_id}.json"
        with atomic(con):
            repository.save_core(con, doc, str(path), now)
            write_json_atomic(path, doc)
        _write_counters(con, home, now)
    return Built(core_id, path, doc)


def build_sphere(
    store: MemoryStore, home: Path, sphere_id: str, summariser: Summariser | None = None, now: datetime | None = None
) -> Built:
    now = now or utcnow()
    with store.connect() as con:
        cores = repository.core_documents(con, sphere_core_keys(sphere_id), sphere_id)
        doc = validate(compress.build_sphere(cores, sphere_id, now), "sphere")
        if summariser is not None:
            doc = _with_llm(doc, "sphere", lambda d: summariser.sphere(d, cores))
        path = spheres_dir(home) / f"{sphere_id}.json"
        with atomic(con):
            repository.save_sphere(con, doc, str(path), now)
            write_json_atomic(path, doc)
        _write_counters(con, home, now)
    return Built(sphere_id, path, doc)
