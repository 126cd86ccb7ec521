"""Vectors of documents the index does not hold yet, kept on disk in slices so that embedding work survives its
process.

Embedding is what an index update pays for (~170 documents a second with MiniLM on prose, far fewer on long or
odd text); the rest of an update is milliseconds. So vectors are computed a slice at a time (`SLICE_DOCS`
documents) and each slice is written under `<workspace>/index/pending/<model>/` before the next is started: a
search that stops at its time bound, or an update killed midway, leaves what it embedded for the next search or
update, which embed only the rest. A slice is one `.npz` file written whole (a temporary name, then a rename);
one that cannot be read is ignored (its documents are embedded again). Keyed by the text's fingerprint, so a
slice serves any document with that text. An update that commits drops the slices it read. No Dagster here."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

SLICE_DOCS = 16
FOLDER = "pending"  # under index/: never a version's name (versions start with "v") nor pruned with them

_LOCK = threading.Lock()
_LOADED: dict[str, dict[str, dict[str, np.ndarray]]] = {}  # folder → slice file → fingerprint → unit vector


class IndexBehind(RuntimeError):
    """The time bound passed with documents still to embed; what was embedded is kept in slices."""

    def __init__(self, embedded: int, left: int) -> None:
        self.embedded, self.left = embedded, left
        super().__init__(f"{left:,} documents still to embed ({embedded:,} embedded in this call)")


def fingerprint(text: str) -> str:
    """What a change of which requires re-embedding: the text only (`Doc.fingerprint`)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


class PendingVectors:
    """The slices of one workspace and model."""

    def __init__(self, home: Path, model: str) -> None:
        slug = hashlib.blake2b(model.encode("utf-8"), digest_size=8).hexdigest()
        self.folder = Path(home) / "index" / FOLDER / slug
        self.read: list[str] = []  # slice files `load` read: an update that commits drops them
        self.written: list[str] = []  # and those it wrote

    def files(self) -> list[str]:
        try:
            return sorted(e.name for e in os.scandir(self.folder) if e.name.endswith(".npz"))
        except OSError:
            return []

    def load(self) -> dict[str, np.ndarray]:
        """Every kept vector, fingerprint → unit vector (each slice file read once per process)."""
        names = self.files()
        key = str(self.folder)
        with _LOCK:
            cached = _LOADED.setdefault(key, {})
            for gone in set(cached) - set(names):
                del cached[gone]
            todo = [n for n in names if n not in cached]
        for name in todo:
            try:
                with np.load(self.folder / name, allow_pickle=False) as data:
                    found = dict(zip(data["fingerprints"].tolist(), np.asarray(data["vectors"], np.float32),
                                     strict=True))  # fmt: skip
            except (OSError, ValueError, KeyError):
                found = {}  # torn or foreign: its documents are embedded again
            with _LOCK:
                cached[name] = found
        self.read = names
        out: dict[str, np.ndarray] = {}
        with _LOCK:
            for name in names:
                out.update(cached.get(name, {}))
        return out

    def save(self, fingerprints: Sequence[str], vectors: np.ndarray) -> None:
        """One slice, written whole before it is named."""
        if not len(fingerprints):
            return
        name = f"slice-{time.time_ns()}-{os.getpid()}-{threading.get_ident() % 10**6}.npz"
        tmp = self.folder / f".{name}.tmp"
        for attempt in (1, 2):  # an update dropping the last slice removes the folder: make it again once
            self.folder.mkdir(parents=True, exist_ok=True)
            try:
                fh = open(tmp, "wb")
                break
            except FileNotFoundError:
                if attempt == 2:
                    raise
        with fh:
            np.savez(fh, fingerprints=np.asarray(list(fingerprints), dtype=str), vectors=vectors.astype(np.float32))
        os.replace(tmp, self.folder / name)
        self.written.append(name)
        with _LOCK:
            _LOADED.setdefault(str(self.folder), {})[name] = dict(zip(fingerprints, vectors, strict=True))

    def drop(self, names: Iterable[str]) -> None:
        """Remove these slices, and the folders once empty (a search may be writing a new one meanwhile: then the
        folder stays)."""
        names = list(names)
        for name in names:
            (self.folder / name).unlink(missing_ok=True)
        for folder in (self.folder, self.folder.parent):
            try:
                folder.rmdir()
            except OSError:
                break
        with _LOCK:
            cached = _LOADED.get(str(self.folder), {})
            for name in names:
                cached.pop(name, None)


def embed_in_slices(
    texts: dict[str, str], encode: Callable[[Sequence[str]], np.ndarray], pending: PendingVectors | None,
    deadline: float | None = None,
) -> dict[str, np.ndarray]:
    """Unit vectors of `texts` (fingerprint → text), a slice at a time, each slice kept before the next starts;
    with `deadline` (time.monotonic()), no slice is started once it has passed (so 0 s of budget embeds none)."""
    out: dict[str, np.ndarray] = {}
    items = list(texts.items())
    for start in range(0, len(items), SLICE_DOCS):
        if deadline is not None and time.monotonic() >= deadline:
            break
        part = items[start : start + SLICE_DOCS]
        vecs = np.asarray(encode([t for _, t in part]), dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        vecs = vecs / norms
        if pending is not None:
            pending.save([fp for fp, _ in part], vecs)
        out.update(zip((fp for fp, _ in part), vecs, strict=True))
    return out
