"""The seed's counters (Session_seq, Core_seq, Sphere_seq) and partition keys, as pure arithmetic.

A session's ordinal (1-based, the order in which rollups assigned it) fixes everything: which Core and Sphere
it belongs to and its `compression_meta`. The workspace counters are a function of how many sessions are
assigned, so they are recomputed from the store every time and can never drift from it.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

SESSIONS_PER_CORE = 8
CORES_PER_SPHERE = 8
SESSIONS_PER_SPHERE = SESSIONS_PER_CORE * CORES_PER_SPHERE
CORE_KEY = re.compile(r"^core_(\d{3})_(\d{3})$")
SPHERE_KEY = re.compile(r"^sphere_(\d{3})$")


@dataclass(frozen=True)
class CompressionMeta:
    """Where one session sits: the seed's `compression_meta` (its counters at the time it was written)."""

    session_seq: int
    core_seq: int
    sphere_seq: int

    @property
    def core_id(self) -> str:
        return core_key(self.sphere_seq, self.core_seq)

    @property
    def sphere_id(self) -> str:
        return sphere_key(self.sphere_seq)

    def as_dict(self) -> dict[str, int]:
        return {"session_seq": self.session_seq, "core_seq": self.core_seq, "sphere_seq": self.sphere_seq}


def position(ordinal: int) -> CompressionMeta:
    """`compression_meta` of the n-th session (1-based): session 1 → (0, 0, 0), 9 → (0, 1, 0), 65 → (0, 0, 1)."""
    if ordinal < 1:
        raise ValueError(f"session ordinal must be ≥ 1, got {ordinal}")
    i = ordinal - 1
    return CompressionMeta(i % SESSIONS_PER_CORE, (i // SESSIONS_PER_CORE) % CORES_PER_SPHERE, i // SESSIONS_PER_SPHERE)


@dataclass(frozen=True)
class Counters:
    """The seed's `Index_counters` after `sessions` assigned sessions (its progression table)."""

    session_seq: int
    core_seq: int
    sphere_seq: int
    sessions: int

    @classmethod
    def after(cls, sessions: int) -> Counters:
        if sessions < 0:
            raise ValueError(f"session count must be ≥ 0, got {sessions}")
        return cls(
            sessions % SESSIONS_PER_CORE,
            (sessions // SESSIONS_PER_CORE) % CORES_PER_SPHERE,
            sessions // SESSIONS_PER_SPHERE,
            sessions,
        )

    @property
    def closed_cores(self) -> int:
        """Cores whose 8 sessions are all assigned (the Cores that should exist)."""
        return self.sessions // SESSIONS_PER_CORE

    @property
    def closed_spheres(self) -> int:
        return self.sessions // SESSIONS_PER_SPHERE


def core_key(sphere_seq: int, core_seq: int) -> str:
    return f"core_{sphere_seq:03d}_{core_seq:03d}"


def sphere_key(sphere_seq: int) -> str:
    return f"sphere_{sphere_seq:03d}"


def core_key_at(index: int) -> str:
    """The key of the index-th Core overall (0-based): 0 → core_000_000, 8 → core_001_000."""
    return core_key(index // CORES_PER_SPHERE, index % CORES_PER_SPHERE)


def core_index(key: str) -> int:
    """Inverse of `core_key_at`; the error names the key."""
    m = CORE_KEY.match(key)
    if not m or int(m.group(2)) >= CORES_PER_SPHERE:
        raise ValueError(f"not a Core key: {key!r} (expected core_<sphere:03d>_<core:03d>, core < 8)")
    return int(m.group(1)) * CORES_PER_SPHERE + int(m.group(2))


def sphere_index(key: str) -> int:
    m = SPHERE_KEY.match(key)
    if not m:
        raise ValueError(f"not a Sphere key: {key!r} (expected sphere_<sphere:03d>)")
    return int(m.group(1))


def core_ordinals(key: str) -> range:
    """The session ordinals (1-based) a Core holds: core_000_001 → 9..16."""
    start = core_index(key) * SESSIONS_PER_CORE
    return range(start + 1, start + SESSIONS_PER_CORE + 1)


def sphere_core_keys(key: str) -> list[str]:
    """The 8 Cores a Sphere rolls up: sphere_001 → core_001_000 … core_001_007."""
    s = sphere_index(key)
    return [core_key(s, c) for c in range(CORES_PER_SPHERE)]


def write_json_atomic(path: Path, payload: Any) -> Path:
    """Two-phase write: temp file in the same folder, fsync, os.replace — a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False, indent=2, sort_keys=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def counters_payload(sessions: int, cores_built: int, spheres_built: int, now: datetime) -> dict[str, Any]:
    """`knowledge/state/compression_counters.json`: the seed's three counters plus what is built, for humans."""
    c = Counters.after(sessions)
    return {
        "Session_seq": c.session_seq,
        "Core_seq": c.core_seq,
        "Sphere_seq": c.sphere_seq,
        "last_update": now.replace(microsecond=0).isoformat(),
        "sessions_assigned": sessions,
        "cores_closed": c.closed_cores,
        "cores_built": cores_built,
        "spheres_closed": c.closed_spheres,
        "spheres_built": spheres_built,
        "derived_from": "memory.duckdb compression_meta / rollup_cores / rollup_spheres (recomputed on every write)",
    }


def contiguous_ranges(keys: list[str], index: Callable[[str], int]) -> list[tuple[str, str]]:
    """Contiguous (first, last) ranges of keys by their index: one single-run backfill (or run) each."""
    out: list[tuple[str, str]] = []
    for key in sorted(keys, key=index):
        if out and index(key) == index(out[-1][1]) + 1:
            out[-1] = (out[-1][0], key)
        else:
            out.append((key, key))
    return out
