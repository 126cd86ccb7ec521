"""The search index: derived, deletable data under `<workspace>/index/`. BM25 (bm25s) + exact vectors (numpy).

Written two-phase: a complete new version folder, then `index/CURRENT` replaced atomically (os.replace) to
name it; readers follow CURRENT, so a reader never sees a half-written index. No Dagster here."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bm25s
import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from memory_pipeline.search.documents import Doc, all_file_docs, file_signature, store_docs, store_state

Encode = Callable[[Sequence[str]], np.ndarray]
FORMAT = 1
K1, B = 1.5, 0.75


class IndexMissing(RuntimeError):
    """No usable index (deleted, never built, or built for another embedding model)."""


@dataclass(frozen=True)
class BuildStats:
    docs: int
    added: int
    updated: int
    removed: int
    embedded: int
    seconds: float
    bytes: int
    version: str


def index_root(home: Path) -> Path:
    return Path(home) / "index"


def _stemmer() -> Any:
    try:
        import Stemmer  # PyStemmer: the snowball stemmer bm25s recommends

        return Stemmer.Stemmer("english")
    except ImportError:  # pragma: no cover - PyStemmer is a dependency
        return None


STEMMER = _stemmer()


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    return bm25s.tokenize(list(texts), stopwords="en", stemmer=STEMMER, return_ids=False, show_progress=False)


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


def embed_docs(docs: Sequence[Doc], encode: Encode, dim: int | None = None) -> np.ndarray:
    if not docs:
        return np.zeros((0, dim or 0), dtype=np.float32)
    return _normalise(encode([d.text for d in docs]))


def _store_vectors(con: duckdb.DuckDBPyConnection, model: str, ids: list[str]) -> dict[str, np.ndarray]:
    """Vectors the abstraction engine already computed for these memories with the same model."""
    if not ids:
        return {}
    try:
        rows = con.execute(
            "SELECT memory_id, vector FROM embeddings WHERE model = ? AND memory_id IN (SELECT unnest(?::VARCHAR[]))",
            [model, ids],
        ).fetchall()
    except duckdb.Error:
        return {}
    return {str(r[0]): np.asarray(r[1], dtype=np.float32) for r in rows}


# ------------------------------------------------------------------ loaded index


@dataclass
class LoadedIndex:
    folder: Path
    manifest: dict[str, Any]
    docs: list[Doc]
    vectors: np.ndarray  # (n, d) float32, unit rows
    bm25: bm25s.BM25
    idf: np.ndarray  # per vocabulary id
    vocab: dict[str, int]
    pos: dict[str, int]  # key → row
    dates: np.ndarray
    importance: np.ndarray
    # the incremental segment: documents new or changed since the base BM25 was built, scored exactly like
    # the query-time delta; `dead` are base keys it replaces or that were removed
    seg_docs: list[Doc] = field(default_factory=list)
    seg_vectors: np.ndarray | None = None
    seg_tokens: list[list[str]] = field(default_factory=list)
    dead: set[str] = field(default_factory=set)
    seg_postings: dict[str, list[int]] = field(default_factory=dict)

    @property
    def model(self) -> str:
        return str(self.manifest["model"])


DOC_FIELDS = tuple(Doc.__dataclass_fields__)


def _write_docs(path: Path, docs: Sequence[Doc]) -> None:
    """Columnar, without dataclasses.asdict (which deep-copies every list: 10× slower at 100k docs)."""
    columns = {name: [getattr(d, name) for d in docs] for name in DOC_FIELDS}
    types = {"categories": pa.list_(pa.string()), "source_ids": pa.list_(pa.string())}
    table = pa.table({n: pa.array(v, type=types.get(n)) for n, v in columns.items()})
    pq.write_table(table, path)


def _read_docs(path: Path) -> list[Doc]:
    table = pq.read_table(path)
    if table.num_rows == 0:
        return []
    cols = [table.column(n).to_pylist() for n in DOC_FIELDS]
    return [Doc(*row) for row in zip(*cols, strict=True)]


def _idf(retriever: bm25s.BM25, n_docs: int) -> np.ndarray:
    """Lucene idf per vocabulary id, from the CSC matrix's document frequencies."""
    indptr = np.asarray(retriever.scores["indptr"])
    df = np.diff(indptr).astype(np.float64)
    return np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)


def current_folder(home: Path) -> Path | None:
    root = index_root(home)
    try:
        name = (root / "CURRENT").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    folder = root / name
    return folder if name and (folder / "manifest.json").is_file() else None


def load_index(home: Path) -> LoadedIndex:
    folder = current_folder(home)
    if folder is None:
        raise IndexMissing(f"no search index under {index_root(home)}")
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        docs = _read_docs(folder / "docs.parquet")
        vectors = np.load(folder / "vectors.npy", mmap_mode="r")
        retriever = bm25s.BM25.load(str(folder / "bm25"), show_progress=False, verbosity=0)
        seg_docs = _read_docs(folder / "seg_docs.parquet") if (folder / "seg_docs.parquet").exists() else []
        seg_vectors = np.load(folder / "seg_vectors.npy") if seg_docs else None
        dead = (
            set(json.loads((folder / "dead.json").read_text(encoding="utf-8")))
            if seg_docs or (folder / "dead.json").exists()
            else set()
        )
    except (OSError, ValueError, KeyError) as exc:
        raise IndexMissing(f"search index {folder} is unreadable ({exc})") from exc
    _check_shapes(folder, manifest, len(docs), vectors, len(seg_docs), seg_vectors)
    seg_tokens = tokenize([d.text for d in seg_docs]) if seg_docs else []
    postings: dict[str, list[int]] = {}
    for j, tokens in enumerate(seg_tokens):
        for t in set(tokens):
            postings.setdefault(t, []).append(j)
    return LoadedIndex(
        seg_docs=seg_docs,
        seg_vectors=seg_vectors,
        seg_tokens=seg_tokens,
        seg_postings=postings,
        dead=dead,
        folder=folder,
        manifest=manifest,
        docs=docs,
        vectors=np.asarray(vectors),
        bm25=retriever,
        idf=_idf(retriever, max(1, len(docs))),
        vocab=dict(retriever.vocab_dict),
        pos={d.key: i for i, d in enumerate(docs)},
        dates=np.array([d.date for d in docs], dtype=np.float64),
        importance=np.array([d.importance for d in docs], dtype=np.float32),
    )


def _check_shapes(
    folder: Path, manifest: dict[str, Any], n_docs: int, vectors: Any, n_seg: int, seg_vectors: Any
) -> None:
    """One row of the manifest's dimension per document, in the base and in the segment; else IndexMissing
    (a damaged or hand-edited index is rebuilt, like a truncated file, instead of failing every search)."""
    dim = manifest.get("dim")
    for name, matrix, rows in (("vectors.npy", vectors, n_docs), ("seg_vectors.npy", seg_vectors, n_seg)):
        if matrix is None or (name == "seg_vectors.npy" and not n_seg):
            continue
        shape = tuple(getattr(matrix, "shape", ()))
        if len(shape) != 2 or shape[0] != rows or (rows and isinstance(dim, int) and shape[1] != dim):
            raise IndexMissing(
                f"search index {folder} is damaged ({name} has shape {shape}; expected {rows} rows of dimension "
                f"{dim})"
            )


# ------------------------------------------------------------------ build


def _connect_waiting(path: Path, timeout_s: float = 300.0) -> duckdb.DuckDBPyConnection:
    """Read-only, waiting while a writer (the nightly run, an import) holds DuckDB's file lock."""
    deadline = time.monotonic() + timeout_s
    pause = 0.05
    while True:
        try:
            return duckdb.connect(str(path), read_only=True)
        except duckdb.IOException:
            if time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(2.0, pause * 2)


def pending_changes(home: Path) -> dict[str, int] | None:
    """What the index lacks: store rows appended since the build and files added/changed/removed; None when
    there is no index. The sensor's trigger, and cheap (one count query and a stat walk)."""
    folder = current_folder(home)
    if folder is None:
        return None
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    rows = 0
    store = Path(home) / "memory.duckdb"
    if store.exists():
        try:
            con = duckdb.connect(str(store), read_only=True)
        except duckdb.Error:
            return {"store_rows": 0, "files": 0, "busy": 1}
        try:
            max_rowid, count = store_state(con)
        except duckdb.CatalogException:
            max_rowid, count = -1, 0
        finally:
            con.close()
        rows = max(0, max_rowid - int(manifest.get("store_max_rowid", -1)))
        if count < int(manifest.get("store_rows", 0)):
            rows += 1  # rows disappeared (a pending summary discarded): rebuild
    built = {k: tuple(v) for k, v in manifest.get("files", {}).items()}
    current = file_signature(Path(home))
    files = sum(1 for k, v in current.items() if built.get(k) != v) + len(set(built) - set(current))
    return {"store_rows": rows, "files": files, "busy": 0}


def collect_docs(home: Path) -> tuple[list[Doc], tuple[int, int], duckdb.DuckDBPyConnection | None]:
    """Every readable document, and the store's (max rowid, count) watermark; the connection stays open for
    the vector look-up and is closed by the caller."""
    docs: list[Doc] = []
    state = (-1, 0)
    con = None
    store = Path(home) / "memory.duckdb"
    if store.exists():
        con = _connect_waiting(store)
        try:
            docs = store_docs(con)
            state = store_state(con)
        except duckdb.CatalogException:  # an empty store without the memories table yet
            docs = []
    return docs + all_file_docs(Path(home)), state, con


def build_index(home: Path, encode: Encode, model: str, *, full: bool = False) -> BuildStats:
    """Build a new index version; with `full=False` unchanged documents keep their vectors (the incremental
    update: only new or changed text is embedded, BM25 is rebuilt, which is cheap)."""
    t0 = time.perf_counter()
    home = Path(home)
    previous: LoadedIndex | None = None
    if not full:
        try:
            previous = load_index(home)
            if previous.model != model:
                previous = None
        except IndexMissing:
            previous = None
    signature = file_signature(home)
    docs, state, con = collect_docs(home)
    try:
        prev_vectors: dict[str, tuple[str, np.ndarray]] = {}
        if previous is not None:
            prev_vectors = {
                d.key: (d.fingerprint, previous.vectors[i])
                for i, d in enumerate(previous.docs)
                if d.key not in previous.dead
            }
            if previous.seg_vectors is not None:
                prev_vectors.update(
                    {d.key: (d.fingerprint, previous.seg_vectors[i]) for i, d in enumerate(previous.seg_docs)}
                )
        vectors: list[np.ndarray | None] = [None] * len(docs)
        need: list[int] = []
        added = updated = 0
        for i, d in enumerate(docs):
            prior = prev_vectors.get(d.key)
            if prior is None:
                added += 1
            elif prior[0] != d.fingerprint:
                updated += 1
            if prior is not None and prior[0] == d.fingerprint:
                vectors[i] = prior[1]
            else:
                need.append(i)
        if con is not None:
            stored = _store_vectors(con, model, [docs[i].key for i in need if docs[i].source == "store"])
            for i in list(need):
                v = stored.get(docs[i].key) if docs[i].source == "store" else None
                if v is not None:
                    vectors[i] = v / (np.linalg.norm(v) or 1.0)
            need = [i for i in need if vectors[i] is None]
    finally:
        if con is not None:
            con.close()
    fresh = embed_docs([docs[i] for i in need], encode)
    for j, i in enumerate(need):
        vectors[i] = fresh[j]
    rows = [v for v in vectors if v is not None]
    assert len(rows) == len(vectors), "every document has a vector by now"
    dim = int(fresh.shape[1]) if len(need) else (len(rows[0]) if docs else 0)
    matrix = np.vstack(rows).astype(np.float32) if docs else np.zeros((0, dim), dtype=np.float32)
    removed = len(set(prev_vectors) - {d.key for d in docs})
    version = None
    if previous is not None:
        version = _try_segment(home, previous, docs, matrix, model, state, signature)
    if version is None:
        version = _write_version(home, docs, matrix, model, state, signature)
    folder = index_root(home) / version
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return BuildStats(
        docs=len(docs),
        added=added,
        updated=updated,
        removed=removed,
        embedded=len(need),
        seconds=round(time.perf_counter() - t0, 3),
        bytes=size,
        version=version,
    )


def segment_limit(base_docs: int) -> int:
    """Above this many new/changed/removed documents the BM25 base is rebuilt instead of a segment."""
    return max(2000, base_docs // 20)


def _link_tree(src: Path, dst: Path) -> None:
    """Hard links (no copy) of the unchanged base files into the new version folder."""
    for path in src.rglob("*"):
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)
        except OSError:
            shutil.copy2(path, target)


def _try_segment(
    home: Path,
    previous: LoadedIndex,
    docs: list[Doc],
    matrix: np.ndarray,
    model: str,
    state: tuple[int, int],
    signature: dict[str, tuple[float, int]],
) -> str | None:
    """The incremental update: keep the base BM25 and vectors (hard-linked), write only the documents that
    are new or changed since the base as a segment. None when the segment would be too large."""
    base = {d.key: d.fingerprint for d in previous.docs}
    current = {d.key: d.fingerprint for d in docs}
    seg = [i for i, d in enumerate(docs) if base.get(d.key) != d.fingerprint]
    dead = sorted(k for k, fp in base.items() if current.get(k) != fp)
    if len(seg) + len(dead) > segment_limit(len(previous.docs)):
        return None
    root = index_root(home)
    version = _version_name()
    tmp = root / f".tmp-{version}"
    tmp.mkdir()
    try:
        for name in ("docs.parquet", "vectors.npy", "bm25"):
            src = previous.folder / name
            if src.is_dir():
                _link_tree(src, tmp / name)
            else:
                _link_tree_file(src, tmp / name)
        _write_docs(tmp / "seg_docs.parquet", [docs[i] for i in seg])
        np.save(tmp / "seg_vectors.npy", matrix[seg] if seg else np.zeros((0, matrix.shape[1]), np.float32))
        (tmp / "dead.json").write_text(json.dumps(dead), encoding="utf-8")
        manifest = dict(previous.manifest)
        manifest.update(
            built_at=time.time(),
            docs=len(docs),
            segment=len(seg),
            store_max_rowid=state[0],
            store_rows=state[1],
            files=signature,
            categories=sorted({c for d in docs for c in d.categories}),
            kinds=sorted({d.kind for d in docs}),
        )
        (tmp / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        os.replace(tmp, root / version)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _commit(root, version)
    return version


def _link_tree_file(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _version_name() -> str:
    return f"v{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{time.perf_counter_ns() % 10**6:06d}"


def _commit(root: Path, version: str) -> None:
    pointer = root / f".CURRENT-{version}"
    pointer.write_text(version, encoding="utf-8")
    os.replace(pointer, root / "CURRENT")  # the commit point
    _prune(root, keep={version})


def _write_version(
    home: Path,
    docs: list[Doc],
    matrix: np.ndarray,
    model: str,
    state: tuple[int, int],
    signature: dict[str, tuple[float, int]],
) -> str:
    root = index_root(home)
    root.mkdir(parents=True, exist_ok=True)
    version = _version_name()
    tmp = root / f".tmp-{version}"
    tmp.mkdir()
    try:
        _write_docs(tmp / "docs.parquet", docs)
        np.save(tmp / "vectors.npy", matrix)
        retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
        tokens = tokenize([d.text for d in docs]) if docs else [[""]]
        retriever.index(tokens, show_progress=False)
        retriever.save(str(tmp / "bm25"), show_progress=False)
        manifest = {
            "avgdl": float(np.mean([len(t) for t in tokens])) if docs else 1.0,
            "categories": sorted({c for d in docs for c in d.categories}),
            "kinds": sorted({d.kind for d in docs}),
            "format": FORMAT,
            "model": model,
            "dim": int(matrix.shape[1]) if matrix.ndim == 2 else 0,
            "docs": len(docs),
            "built_at": time.time(),
            "store_max_rowid": state[0],
            "store_rows": state[1],
            "files": signature,
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        os.replace(tmp, root / version)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _commit(root, version)
    return version


def _prune(root: Path, keep: set[str]) -> None:
    """Drop old versions, keeping the newest previous one a reader may still be loading."""
    versions = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name.startswith("v"))
    for name in versions[:-2]:
        if name not in keep:
            shutil.rmtree(root / name, ignore_errors=True)


def delete_index(home: Path) -> None:
    shutil.rmtree(index_root(home), ignore_errors=True)
