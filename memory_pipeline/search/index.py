"""The search index: derived, deletable data under `<workspace>/index/`: immutable segments (memory_pipeline.search.
segment) and, per version, which rows of each are deleted.

Segments live in `index/segments/`, each written once and never changed. A version is a folder holding its
manifest (which segments) and its deletions, as Lucene's commit point names its segments: an update writes its new
segment and a version of a few small files, whatever the number of segments. `index/CURRENT` names the version and
is replaced atomically (os.replace) once the version's new files are durable, so a reader never sees a half-written
index and an update that dies midway leaves the previous version as it was (a folder or segment CURRENT's version
does not name is never read, and the next writer prunes it). Writers take `index/.lock` (one at a time). An update reads
what changed since the version's cursor — rows past its rowid watermark, the store's change log past its seq, files
whose stat changed — and never the whole store; a tiered merge policy keeps the number of segments logarithmic.
No Dagster here."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memory_pipeline.faults import crash_point
from memory_pipeline.search.bm25 import QueryBM25
from memory_pipeline.search.documents import Doc
from memory_pipeline.search.segment import (
    K1,
    B,
    Segment,
    SegmentDamaged,
    load_segment,
    merge_into,
    plan_merges,
)
from memory_pipeline.search.tokens import STEMMER as STEMMER
from memory_pipeline.search.tokens import tokenize as tokenize
from memory_pipeline.store.durable import fsync_path

Encode = Callable[[Sequence[str]], np.ndarray]
FORMAT = 3  # 3: segments shared by the versions under index/segments/, their arrays in one file (2: .npy files
# hard-linked into each version)
# MEMORY_PIPELINE_CRASH_AT=<point>: SIGKILL there. index_written: the new version's files and pointer written, not
# yet fsynced; index_commit: all fsynced, CURRENT not yet replaced; index_committed: CURRENT replaced, older
# versions not yet pruned
CRASH_WRITTEN, CRASH_POINT, CRASH_COMMITTED = "index_written", "index_commit", "index_committed"
CRASH_POINTS = (CRASH_WRITTEN, CRASH_POINT, CRASH_COMMITTED)
FSYNC_THREADS = 16
__all__ = ["B", "K1", "STEMMER", "BuildStats", "IndexMissing", "LoadedIndex", "tokenize"]


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
    embed_seconds: float = 0.0  # of `seconds`, spent in the encoder
    segments: int = 1
    merged: int = 0  # segments merged away by this update


SEGMENTS = "segments"


def index_root(home: Path) -> Path:
    return Path(home) / "index"


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


def embed_docs(docs: Sequence[Doc], encode: Encode, dim: int | None = None) -> np.ndarray:
    if not docs:
        return np.zeros((0, dim or 0), dtype=np.float32)
    return _normalise(encode([d.text for d in docs]))


# ------------------------------------------------------------------ the loaded index


@dataclass
class LoadedIndex:
    folder: Path
    manifest: dict[str, Any]
    segments: list[Segment]
    alive: list[np.ndarray | None]  # per segment: live rows (None: all)
    dead: list[int]  # per segment: deleted rows
    n_live: int
    avgdl: float
    _scans: dict[tuple[tuple[str, ...], bytes], Any] = field(default_factory=dict)
    _bm25s: dict[tuple[str, ...], Any] = field(default_factory=dict)
    _norms: dict[int, np.ndarray] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def model(self) -> str:
        return str(self.manifest["model"])

    @property
    def dim(self) -> int:
        return int(self.manifest.get("dim") or 0)

    def bm25(self, q_tokens: Sequence[str]) -> tuple[dict[str, float], QueryBM25]:
        """Lucene BM25 over every segment with the live collection's statistics: (idf of each query term the
        index holds, the query's scores: exact for any rows, and its best rows)."""
        idf, postings = self.bm25_stats(q_tokens)
        return idf, QueryBM25(idf, postings, [seg.rows for seg in self.segments], self.alive, self._norm)

    def bm25_stats(
        self, q_tokens: Sequence[str]
    ) -> tuple[dict[str, float], dict[str, list[tuple[int, np.ndarray, np.ndarray]]]]:
        """Each term's idf over the live documents and its postings per segment."""
        postings: dict[str, list[tuple[int, np.ndarray, np.ndarray]]] = {}
        dfs: dict[str, int] = {}
        for t in q_tokens:
            df = 0
            found = []
            for s, seg in enumerate(self.segments):
                hit = seg.term(t)
                if hit is None or not len(hit[0]):
                    continue
                alive = self.alive[s]
                df += len(hit[0]) if alive is None else int(np.count_nonzero(alive[hit[0]]))
                found.append((s, hit[0], hit[1]))
            if df:
                postings[t], dfs[t] = found, df
        n = max(self.n_live, 1)
        return {t: float(np.log(1.0 + (n - df + 0.5) / (df + 0.5))) for t, df in dfs.items()}, postings

    def _norm(self, s: int) -> np.ndarray:
        """k1·(1 − b + b·dl/avgdl) per row of segment `s`, float32, once per loaded index (avgdl is fixed)."""
        norm = self._norms.get(s)
        if norm is None:
            dl = np.asarray(self.segments[s].postings.dl, dtype=np.float32)
            norm = (np.float32(K1 * (1.0 - B)) + np.float32(K1 * B / max(self.avgdl, 1e-9)) * dl).astype(np.float32)
            self._norms[s] = norm
        return norm

    def idf_of(self, token: str) -> float | None:
        """A token's idf over the live documents (None when no live document holds it)."""
        idf, _ = self.bm25_stats([token])
        return idf.get(token)

    def candidates(
        self, q_tokens: Sequence[str], vectors: Sequence[np.ndarray], c: int
    ) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray, dict[str, float], tuple[float, np.ndarray]]:
        """The live rows among the best `c` by BM25 (score > 0) or by the cosine to any of `vectors` (> 0):
        (segment, row) each, their raw BM25, their cosine to each vector (rows × vectors), the terms' idf, and
        what a row left out can score at most: (raw BM25, cosine to each vector) — 0 where every row was taken."""
        picked: dict[tuple[int, int], float] = {}
        idf: dict[str, float] = {}
        scores: QueryBM25 | None = None
        cos_out = np.zeros(len(vectors), dtype=np.float64)
        for j, qv in enumerate(vectors):
            idf, scores, scans = self._scanned(q_tokens, qv)
            tops = [seg.top(scans[s], qv, c, self.dead[s]) for s, seg in enumerate(self.segments)]
            if tops:
                cos_all = np.concatenate([t[1] for t in tops])
                seg_all = np.concatenate([np.full(len(t[0]), s) for s, t in enumerate(tops)])
                row_all = np.concatenate([t[0] for t in tops])
                best = np.argsort(-cos_all, kind="stable")[:c]
                if len(best) >= c:  # a row not taken is no closer than the c-th (an int8 scan: nearly so)
                    cos_out[j] = max(float(cos_all[best[-1]]), 0.0)
                best = best[cos_all[best] > 0]  # a mask, not a test per numpy scalar
                for key in zip(seg_all[best].tolist(), row_all[best].tolist(), strict=True):
                    picked.setdefault(key, 0.0)
        by_bm25 = scores.best(c) if scores is not None else []
        for key in by_bm25:
            picked.setdefault(key, 0.0)
        keys = list(picked)
        bm = np.zeros(len(keys), dtype=np.float64)
        cos = np.zeros((len(keys), len(vectors)), dtype=np.float64)
        seg_of = np.fromiter((k[0] for k in keys), np.int64, len(keys))
        row_of = np.fromiter((k[1] for k in keys), np.int64, len(keys))
        for s in np.unique(seg_of).tolist():
            idx = np.flatnonzero(seg_of == s)
            rows_s = row_of[idx]
            if scores is not None:
                bm[idx] = scores.of(s, rows_s)
            for j, qv in enumerate(vectors):
                cos[idx, j] = self.segments[s].cosine_of(rows_s, qv)
        bm_out = 0.0
        if len(by_bm25) >= c:  # BM25 took its best c: a row left out scores at most the lowest of them
            at = {key: i for i, key in enumerate(keys)}
            bm_out = float(bm[[at[key] for key in by_bm25]].min())
        return keys, bm, cos, dict(idf), (bm_out, cos_out)

    def _scanned(
        self, q_tokens: Sequence[str], qv: np.ndarray
    ) -> tuple[dict[str, float], QueryBM25, list[np.ndarray]]:
        """BM25 and the vector scan of one query, kept for the next call with the same query (the context compiler
        asks for 20 hits, then 40, 80, … while they fit: one scan serves them all)."""
        key = (tuple(q_tokens), qv.tobytes())
        with self._lock:
            hit = self._scans.get(key)
        if hit is not None:
            return hit
        with self._lock:  # the query's other vector scored these tokens already: BM25 once a query, not per vector
            bm = self._bm25s.get(key[0])
        idf, scores = bm if bm is not None else self.bm25(q_tokens)
        scans = [seg.scan(qv, alive) for seg, alive in zip(self.segments, self.alive, strict=True)]
        with self._lock:
            self._scans[key] = (idf, scores, scans)
            self._bm25s[key[0]] = (idf, scores)
            while len(self._scans) > 2:
                self._scans.pop(next(iter(self._scans)))
            while len(self._bm25s) > 2:
                self._bm25s.pop(next(iter(self._bm25s)))
        return idf, scores, scans

    def docs_at(self, keys: Sequence[tuple[int, int]], lists: bool = True) -> list[Doc]:
        """Documents (text empty) at (segment, row), in the order given (`lists=False`: see Segment.doc_rows)."""
        out: list[Doc | None] = [None] * len(keys)
        for s in {k[0] for k in keys}:
            idx = [i for i, k in enumerate(keys) if k[0] == s]
            for i, d in zip(idx, self.segments[s].doc_rows([keys[i][1] for i in idx], lists), strict=True):
                out[i] = d
        return [d for d in out if d is not None]

    def lists_at(self, keys: Sequence[tuple[int, int]]) -> list[tuple[list[str], list[str]]]:
        out: list[tuple[list[str], list[str]]] = [([], [])] * len(keys)
        for s in {k[0] for k in keys}:
            idx = [i for i, k in enumerate(keys) if k[0] == s]
            for i, pair in zip(idx, self.segments[s].lists_of([keys[i][1] for i in idx]), strict=True):
                out[i] = pair
        return out

    def texts_at(self, keys: Sequence[tuple[int, int]]) -> list[str]:
        out = [""] * len(keys)
        for s in {k[0] for k in keys}:
            idx = [i for i, k in enumerate(keys) if k[0] == s]
            for i, t in zip(idx, self.segments[s].texts([keys[i][1] for i in idx]), strict=True):
                out[i] = t
        return out

    def locate(self, keys: Sequence[str], column: str = "key") -> dict[str, tuple[int, int]]:
        """Live (segment, row) of each key found (`column="path"`: of every chunk of these files, by chunk key)."""
        found: dict[str, tuple[int, int]] = {}
        if not keys:
            return found
        if column == "key":
            for s, seg in enumerate(self.segments):
                alive = self.alive[s]
                found.update({k: (s, r) for k, r in seg.find(list(keys)).items() if alive is None or alive[r]})
            return found
        wanted = pa.array(list(keys), type=pa.string())
        for s, seg in enumerate(self.segments):
            mask = np.asarray(pc.is_in(seg.column(column), value_set=wanted).to_numpy(zero_copy_only=False))
            alive = self.alive[s]
            if alive is not None:
                mask &= alive
            if mask.any():
                rows = np.flatnonzero(mask)
                names = seg.column("key").take(pa.array(rows)).to_pylist()
                found.update({str(k): (s, int(r)) for k, r in zip(names, rows, strict=True)})
        return found

    def chunks_of(self, paths: Sequence[str]) -> dict[str, tuple[int, int]]:
        """Live (segment, row) of every chunk of these files, by chunk key (a read path's `locate(column="path")`)."""
        found: dict[str, tuple[int, int]] = {}
        for s, seg in enumerate(self.segments):
            alive = self.alive[s]
            found.update({k: (s, r) for k, r in seg.file_rows(list(paths)).items() if alive is None or alive[r]})
        return found

    def live_docs(self) -> Iterator[Doc]:
        """Every live document with its text (merges, tests, small workspaces: not the query path)."""
        from memory_pipeline.search.documents import table_docs

        for s, seg in enumerate(self.segments):
            table = seg.full_table()
            if self.alive[s] is not None:
                table = table.filter(pa.array(self.alive[s]))
            yield from table_docs(table)


def current_folder(home: Path) -> Path | None:
    root = index_root(home)
    try:
        name = (root / "CURRENT").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    folder = root / name
    return folder if name and (folder / "manifest.json").is_file() else None


def read_manifest(folder: Path) -> dict[str, Any]:
    return dict(json.loads((folder / "manifest.json").read_text(encoding="utf-8")))


def load_index(home: Path, vocab: bool = True) -> LoadedIndex:
    """The current version (IndexMissing: none, another format, damaged); `vocab=False` for an update, which
    reads no postings (see Segment.vocab)."""
    folder = current_folder(home)
    if folder is None:
        raise IndexMissing(f"no search index under {index_root(home)}")
    try:
        manifest = read_manifest(folder)
        if manifest.get("format") != FORMAT:
            raise IndexMissing(f"search index {folder} has format {manifest.get('format')}, not {FORMAT}")
        dim = manifest.get("dim")
        width = dim if isinstance(dim, int) else None
        segments = [load_segment(segment_folder(folder, e["name"]), width, vocab) for e in manifest["segments"]]
        alive: list[np.ndarray | None] = []
        dead: list[int] = []
        for seg, entry in zip(segments, manifest["segments"], strict=True):
            deleted = np.load(folder / f"{seg.name}.deleted.npy") if entry.get("deleted") else np.zeros(0, np.int64)
            if len(deleted) != int(entry.get("deleted", 0)) or (len(deleted) and int(deleted.max()) >= seg.rows):
                raise SegmentDamaged(f"the deletions of segment {seg.name} do not fit it")
            mask = None
            if len(deleted):
                mask = np.ones(seg.rows, dtype=bool)
                mask[deleted] = False
            alive.append(mask)
            dead.append(len(deleted))
    except SegmentDamaged as exc:
        raise IndexMissing(f"search index {folder} is damaged ({exc})") from exc
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise IndexMissing(f"search index {folder} is unreadable ({exc})") from exc
    n_live = sum(s.rows - d for s, d in zip(segments, dead, strict=True))
    sum_dl = sum(
        s.sum_dl - (int(np.asarray(s.postings.dl)[~a].sum()) if a is not None else 0)
        for s, a in zip(segments, alive, strict=True)
    )
    return LoadedIndex(folder, manifest, segments, alive, dead, n_live, (sum_dl / n_live) if n_live else 1.0)


def index_holds(home: Path, memory_id: str) -> bool | None:
    """Whether the index holds `memory_id` as a live memory of the store (None: no readable index). A read of
    the index's files only: it answers while a night holds the store, which no DuckDB connection can read."""
    try:
        idx = load_index(home, vocab=False)
        for seg, alive in zip(idx.segments, idx.alive, strict=True):
            row = seg.find([memory_id]).get(memory_id)
            if row is not None and (alive is None or alive[row]) and seg.column("source")[row].as_py() == "store":
                return True
    except (IndexMissing, OSError, ValueError, KeyError):
        return None
    return False


# ------------------------------------------------------------------ versions: write two-phase, commit, prune


class IndexBusy(RuntimeError):
    """Another writer holds the index (`writer_lock(wait=False)`)."""


@contextmanager
def writer_lock(home: Path, wait: bool = True) -> Iterator[None]:
    """One index writer at a time (a search rebuilding a missing index, the Dagster asset, a CLI refresh);
    `wait=False` (a search): IndexBusy at once when another writer holds it."""
    root = index_root(home)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise IndexBusy("another writer is updating the search index") from None
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def version_name() -> str:
    return f"v{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{time.perf_counter_ns() % 10**9:09d}"


def segment_name() -> str:
    return "seg-" + version_name()[1:]


def segment_folder(version: Path, name: str) -> Path:
    """Where a segment of the version being written in `version` lives (or is to be written)."""
    return version.parent / SEGMENTS / name


def keep_file(path: Path, version: Path) -> None:
    """An unchanged file of the previous version (a segment's deletions) in the new one: a hard link, durable
    already."""
    try:
        os.link(path, version / path.name)
    except OSError:
        shutil.copy2(path, version / path.name)


def _files_bytes(folder: Path) -> int:
    return sum(e.stat().st_size for e in os.scandir(folder) if e.is_file())


def new_entry(folder: Path, rows: int) -> dict[str, Any]:
    """The manifest entry of a segment just written: its rows, none deleted, and its size on disk."""
    return {"name": folder.name, "rows": rows, "deleted": 0, "bytes": _files_bytes(folder)}


def version_bytes(folder: Path) -> int:
    """A version's size on disk: its own files and its segments' (as their entries record them)."""
    entries = read_manifest(folder)["segments"]
    return _files_bytes(folder) + sum(
        int(e["bytes"]) if "bytes" in e else _files_bytes(segment_folder(folder, str(e["name"]))) for e in entries
    )


def write_version(
    home: Path, build: Callable[[Path], dict[str, Any]]
) -> str:
    """Phase 1: `build(folder)` fills the new version's folder and writes its new segments (`segment_folder`: no
    reader looks at a version CURRENT does not name, nor at a segment such a version alone names) and returns its
    manifest; the pointer naming the version is written beside CURRENT, and every new file and folder, the pointer
    and the folders holding their names are fsynced in one concurrent round. Phase 2: CURRENT is replaced by the
    pointer (the commit point) and every version but this one and the one CURRENT named before is pruned, with the
    segments neither names. Anything raised before the commit removes the folder, its new segments and the pointer
    and leaves CURRENT as it was; a kill at any point leaves CURRENT naming a whole, durable version."""
    root = index_root(home)
    segments = root / SEGMENTS
    segments.mkdir(parents=True, exist_ok=True)
    existing = set(os.listdir(segments))
    version = version_name()
    folder = root / version
    pointer = root / f".CURRENT-{version}"
    before = current_folder(home)
    folder.mkdir()
    try:
        manifest = build(folder)
        (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        pointer.write_text(version, encoding="utf-8")
        crash_point(CRASH_WRITTEN)
        new = [segments / str(e["name"]) for e in manifest["segments"] if str(e["name"]) not in existing]
        fsync_paths([*_new_entries(folder), *(p for seg in new for p in _new_entries(seg)), segments, pointer, root])
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        for name in set(os.listdir(segments)) - existing:
            shutil.rmtree(segments / name, ignore_errors=True)
        pointer.unlink(missing_ok=True)
        raise
    crash_point(CRASH_POINT)
    os.replace(pointer, root / "CURRENT")  # the commit point
    crash_point(CRASH_COMMITTED)
    _prune(root, keep={version} | ({before.name} if before is not None else set()))
    return version


def _new_entries(folder: Path) -> list[Path]:
    """A folder just written, its sub-folders and the files written into it: a file hard-linked from the previous
    version (st_nlink > 1) was fsynced when that version was written."""
    out = [folder]
    for entry in os.scandir(folder):
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            out.extend(_new_entries(path))
        elif entry.stat(follow_symlinks=False).st_nlink == 1:
            out.append(path)
    return out


def fsync_paths(paths: Sequence[Path]) -> None:
    """fsync every path (files and folders) concurrently. Each is still flushed on its own (POSIX promises
    nothing for a file from its folder's fsync), but journaling file systems (ext4, XFS) commit fsyncs that are in
    flight together in one journal transaction: a segment's ~14 files cost about one flush, not fourteen (measured
    here: 15 files 43–61 ms one by one, 6–19 ms together). The first error is raised once all have finished."""
    if len(paths) <= 1:
        for path in paths:
            fsync_path(path)
        return
    with ThreadPoolExecutor(max_workers=min(FSYNC_THREADS, len(paths))) as pool:
        for _ in pool.map(fsync_path, paths):
            pass


def _prune(root: Path, keep: set[str]) -> None:
    """Drop every version but `keep` (the new one and the one CURRENT named before, which a reader may still be
    loading) — the folders of writers killed before their commit with them — their pointers, and every segment no
    kept version names (merged away, or left by a killed writer). Writers hold the lock, so nothing else is being
    written."""
    named: set[str] = set()
    for version in keep:
        try:
            named.update(str(e["name"]) for e in read_manifest(root / version)["segments"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # the previous version damaged (what the new one was built over): nothing can read it
    for p in (root / SEGMENTS).iterdir():
        if p.name not in named:
            shutil.rmtree(p, ignore_errors=True)
    for p in root.iterdir():
        if p.name.startswith("v") and p.is_dir() and p.name not in keep:
            shutil.rmtree(p, ignore_errors=True)
        elif p.name.startswith(".tmp-") and p.is_dir():  # the hidden folders of an earlier format's writers
            shutil.rmtree(p, ignore_errors=True)
        elif p.name.startswith(".CURRENT-"):
            p.unlink(missing_ok=True)


def delete_index(home: Path) -> None:
    shutil.rmtree(index_root(home), ignore_errors=True)


# ------------------------------------------------------------------ merging


def merge_step(tmp: Path, idx: LoadedIndex, entries: list[dict[str, Any]], extra: Sequence[Path],
               factor: int = 10) -> tuple[list[dict[str, Any]], int]:
    """Apply the tiered merge policy to a version being written in `tmp`: `entries` (name, rows, deleted) of its
    segments, `extra` the folders of the segments this version wrote (loaded only if a merge takes them); merged
    segments are written beside the others and their entries replaced. Returns (entries, merged away)."""
    sizes = [(e["name"], int(e["rows"]) - int(e.get("deleted", 0)), int(e.get("deleted", 0))) for e in entries]
    plans = plan_merges(sizes, factor=factor)
    if not plans:
        return entries, 0
    by_name = {seg.name: (seg, a) for seg, a in zip(idx.segments, idx.alive, strict=True)}
    planned = {name for plan in plans for name in plan}
    by_name.update({f.name: (load_segment(f, idx.dim or None), None) for f in extra if f.name in planned})
    deleted = {e["name"]: e for e in entries}
    merged_away = 0
    out = [e for e in entries if not any(e["name"] in p for p in plans)]
    for plan in plans:
        parts = []
        for name in plan:
            seg, _ = by_name[name]
            dead_file = tmp / f"{name}.deleted.npy"
            mask = None
            if deleted[name].get("deleted"):
                mask = np.ones(seg.rows, dtype=bool)
                mask[np.load(dead_file)] = False
            parts.append((seg, mask))
        name = segment_name()
        rows = merge_into(segment_folder(tmp, name), parts)
        for old in plan:  # its segment folder stays until no kept version names it (`_prune`)
            (tmp / f"{old}.deleted.npy").unlink(missing_ok=True)
        out.append(new_entry(segment_folder(tmp, name), rows))
        merged_away += len(plan)
    return out, merged_away
