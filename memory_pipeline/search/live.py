"""What search reads besides the index files: the loaded indexes and the fresh-write delta's vectors (caches
of one process, e.g. the MCP server), the store's live view since the build, and keeping the index fresh — built
when missing or made for another model, updated when the delta is too large to embed on every call."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from memory_pipeline.search.documents import (
    READABLE_LIFECYCLES,
    Doc,
    file_docs,
    file_signature,
    iter_files,
    store_docs,
    store_stamp,
)
from memory_pipeline.search.index import Encode, IndexBusy, IndexMissing, LoadedIndex, current_folder, load_index
from memory_pipeline.search.pending import IndexBehind, PendingVectors, embed_in_slices
from memory_pipeline.settings import SettingsError
from memory_pipeline.store import changes
from memory_pipeline.store.attached import attached
from memory_pipeline.store.spool import Pending, pending

if TYPE_CHECKING:
    from memory_pipeline.store.records import MemoryRecord

# ------------------------------------------------------------------ caches (one process, e.g. the MCP server)

_LOCK = threading.Lock()
_INDEXES: dict[str, LoadedIndex] = {}
_DELTA_VECTORS: dict[tuple[str, str], np.ndarray] = {}


def _cached_index(home: Path) -> LoadedIndex:
    folder = current_folder(home)
    if folder is None:
        raise IndexMissing(f"no search index under {home / 'index'}")
    key = str(home)
    with _LOCK:
        loaded = _INDEXES.get(key)
        if loaded is None or loaded.folder != folder:
            loaded = load_index(home)
            _INDEXES[key] = loaded
        return loaded


def clear_cache() -> None:
    with _LOCK:
        _INDEXES.clear()
        _DELTA_VECTORS.clear()
        _VIEWS.clear()
        _QUERY_VECTORS.clear()
        _EMBEDDERS.clear()
        _BACKGROUND.clear()


def default_embedder() -> tuple[Encode, str]:
    """The encoder search embeds documents and queries with, and its model name (the index's `model`).

    MEMORY_PIPELINE_EMBEDDER as the night reads it (a malformed or unknown setting is a SettingsError naming the
    variable, never a silent fallback). With `imported:<name>` and a plug-in, search uses the imported vectors and
    embeds the rest with the plug-in; without a plug-in nothing can embed a query in <name>'s space, so search
    indexes with the built-in all-MiniLM-L6-v2 (as atom matching and recall do)."""
    from memory_pipeline.embedding import spec
    from memory_pipeline.embedding.embedder import Embedder
    from memory_pipeline.embedding.spec import MINILM

    # Once per setting (the plain embedder, not the night's Dagster resource: no Dagster on the read path). Its
    # `encode` reads the plug-in at call time, so a kept one behaves as a new one would.
    key = (os.environ.get(spec.ENV_MODEL), os.environ.get(spec.ENV_PLUGIN))
    with _LOCK:
        kept = _EMBEDDERS.get(key)
    if kept is not None:
        return kept
    res = Embedder.from_env()
    made: tuple[Encode, str] = (res.encode, res.model) if res.can_encode else (Embedder(model=MINILM).encode, MINILM)
    with _LOCK:
        _EMBEDDERS[key] = made
    return made


_EMBEDDERS: dict[tuple[str | None, str | None], tuple[Encode, str]] = {}


# ------------------------------------------------------------------ the delta


@contextmanager
def reading_store(home: Path) -> Iterator[duckdb.DuckDBPyConnection | None]:
    """The store read-only for a short read, or None when there is none or while another process holds the write
    lock (never wait: a query must not block on the nightly writer)."""
    path = home / "memory.duckdb"
    with ExitStack() as stack:
        try:
            con = stack.enter_context(attached(path)) if path.exists() else None
        except duckdb.Error:
            con = None
        yield con


@dataclass
class StoreView:
    """What changed in the store since the index was built: appended rows (the delta) and rows whose
    lifecycle, importance, lineage or usage differ from the index. Recomputed only when the store's files
    change (DuckDB writes every commit to memory.duckdb or its .wal), so a quiet store costs a stat."""

    delta: list[Doc]
    overrides: dict[str, tuple[str, float, str, float]]
    busy: bool = False


_VIEWS: dict[tuple[str, str], tuple[tuple[int, ...], StoreView]] = {}
_LIVE_SQL = """
    SELECT c.id, coalesce(m.lifecycle, 'gone'), coalesce(m.importance, 0), coalesce(m.archived_by, ''),
           coalesce(m.included_count_decay, 0)
    FROM (SELECT DISTINCT memory_id AS id FROM memory_changes WHERE seq > ?) c LEFT JOIN memories m ON m.id = c.id
"""
_FULL_SQL = """
    SELECT d.key, coalesce(m.lifecycle, 'gone'), coalesce(m.importance, 0), coalesce(m.archived_by, ''),
           coalesce(m.included_count_decay, 0)
    FROM read_parquet(?) d LEFT JOIN memories m ON m.id = d.key
    WHERE d.source = 'store' AND (m.id IS NULL OR m.lifecycle <> d.lifecycle OR m.importance <> d.importance
          OR coalesce(m.archived_by, '') <> d.archived_by OR coalesce(m.included_count_decay, 0) <> d.usage)
"""


def _overrides(con: duckdb.DuckDBPyConnection, idx: LoadedIndex, delta: list[Doc]) -> list[tuple[Any, ...]]:
    """Live state of the memories changed since the build: the change log's rows past the index's cursor
    (proportional to what changed), checked by counting readable memories; when the count does not add up (a
    writer that did not log its change, a store without the log) a join of every indexed row, as before."""
    seq = int((idx.manifest.get("store") or {}).get("change_seq", -1))
    store_docs = int(idx.manifest.get("store_docs", -1))
    if seq >= 0 and store_docs >= 0 and changes.cursor(con) >= 0:
        rows = con.execute(_LIVE_SQL, [seq]).fetchall()
        delta_keys = {d.key for d in delta}
        changed = {str(r[0]): str(r[1]) for r in rows if str(r[0]) not in delta_keys}
        indexed = idx.locate(sorted(delta_keys | set(changed)))
        expected = store_docs + sum(1 for k in delta_keys if k not in indexed)
        expected += sum(int(lc in READABLE_LIFECYCLES) - int(k in indexed) for k, lc in changed.items())
        row = con.execute("SELECT count(*) FROM memories WHERE lifecycle IN ('active', 'archived')").fetchone()
        if row is not None and int(row[0]) == expected:
            return rows
    parquet = [str(seg.folder / "docs.parquet") for seg in idx.segments]
    return con.execute(_FULL_SQL, [parquet]).fetchall() if parquet else []


def _store_stamp(home: Path) -> tuple[int, ...]:
    return tuple(store_stamp(home))


def store_view(home: Path, idx: LoadedIndex) -> StoreView:
    """The store's view, plus the agents' writes still spooled (`remember`/`forget` while the store was busy):
    remembered memories are in the delta, forgotten ones are hidden, at once."""
    return with_spool(_store_view(home, idx), pending(home), idx.locate)


def with_spool(view: StoreView, spool: Pending,
               indexed: Callable[[Sequence[str]], Mapping[str, Any]] | None = None) -> StoreView:  # fmt: skip
    """`view` with the spool's writes, which are newer than the store's rows: a spooled remember of a memory the
    store holds as forgotten makes it active again (revived: its indexed document, if it has one, is shown again
    rather than a second one added), a spooled forget hides one."""
    if not spool.records and not spool.forgotten:
        return view
    delta = list(view.delta)
    overrides = dict(view.overrides)
    for i, d in enumerate(delta):
        if d.key in spool.records and d.lifecycle == "forgotten":
            delta[i] = spool_doc(spool.records[d.key])
    revived = [rid for rid in spool.records if overrides.get(rid, ("",))[0] == "forgotten"]
    for rid in revived:
        overrides[rid] = ("active", spool.records[rid].importance, "", overrides[rid][3])
    known = {d.key for d in delta} | (set(indexed(revived)) if indexed is not None and revived else set())
    delta += [spool_doc(r) for rid, r in spool.records.items() if rid not in known]
    overrides.update({mid: ("forgotten", 0.0, "forgotten", 0.0) for mid in spool.forgotten})
    return StoreView(delta, overrides, view.busy)


def spool_doc(r: MemoryRecord) -> Doc:
    return Doc(key=r.id, text=r.content, kind=r.kind, source="store", tier="active",
               date=r.created_at.replace(tzinfo=UTC).timestamp(), importance=r.importance,
               categories=list(r.categories))  # fmt: skip


def _store_view(home: Path, idx: LoadedIndex) -> StoreView:
    key = (str(home), str(idx.folder))
    stamp = _store_stamp(home)
    cached = _VIEWS.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    if not (home / "memory.duckdb").exists():
        return StoreView([], {})
    with reading_store(home) as con:
        if con is None:
            return _while_busy(cached)
        try:
            delta = store_docs(con, after_rowid=int(idx.manifest.get("store_max_rowid", -1)))
            rows = _overrides(con, idx, delta)
        except duckdb.Error:
            return _while_busy(cached)
    view = StoreView(delta, {str(r[0]): (str(r[1]), float(r[2]), str(r[3]), float(r[4])) for r in rows})
    with _LOCK:
        _VIEWS[key] = (stamp, view)
    return view


def _while_busy(cached: tuple[tuple[int, ...], StoreView] | None) -> StoreView:
    """While a writer holds the store (a `remember` of another thread or gateway worker, for milliseconds; a night,
    for minutes): the view last read, if any. What the writer is importing is still in the spool's claimed files,
    which `store_view` adds; the view is read again once the writer lets go."""
    return cached[1] if cached is not None else StoreView([], {}, busy=True)


def delta_docs(home: Path, idx: LoadedIndex, view: StoreView) -> tuple[list[Doc], set[str], str]:
    """Documents written since the build (store rows past the watermark, new or changed files) and the
    paths whose indexed chunks are stale."""
    notice = "store busy: memories written since the last index update are not included" if view.busy else ""
    docs = list(view.delta)
    built: dict[str, list[float]] = idx.manifest.get("files", {})
    current = file_signature(home)
    stale = {p for p, sig in built.items() if current.get(p) != (sig[0], sig[1])}
    fresh = sorted(p for p in current if p in stale or p not in built)
    if fresh:
        kinds = {p.relative_to(home).as_posix(): (k, t) for p, k, t in iter_files(home)}
        for rel in fresh:
            if rel in kinds:
                docs.extend(file_docs(home, rel, *kinds[rel]))
    return docs, stale, notice


_QUERY_VECTORS: dict[tuple[str, str], np.ndarray] = {}


def query_vector(encode: Encode, model: str, query: str) -> np.ndarray:
    """The unit vector of a query, remembered for the next few calls (the context compiler may search the same
    query more than once: a second call for more hits, its period first, below the item floor; MiniLM takes
    10–50 ms a query here)."""
    key = (model, query)
    with _LOCK:
        hit = _QUERY_VECTORS.get(key)
    if hit is not None:
        return hit
    qv = np.asarray(encode([query]), dtype=np.float32)[0]
    qv = qv / max(float(np.linalg.norm(qv)), 1e-12)
    with _LOCK:
        _QUERY_VECTORS[key] = qv
        while len(_QUERY_VECTORS) > 64:
            _QUERY_VECTORS.pop(next(iter(_QUERY_VECTORS)))
    return qv


BACKGROUND_FILE = Path(__file__).with_name("background_questions.txt")
_BACKGROUND: dict[str, np.ndarray] = {}


def background_vectors(encode: Encode, model: str) -> np.ndarray:
    """The unit vectors of the everyday questions a memory's likeness to anything is read against (relevance's
    hub discount), embedded once per model and process."""
    with _LOCK:
        hit = _BACKGROUND.get(model)
    if hit is not None:
        return hit
    lines = BACKGROUND_FILE.read_text(encoding="utf-8").splitlines()
    vecs = np.asarray(encode([q for q in lines if q.strip() and not q.startswith("#")]), dtype=np.float32)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    with _LOCK:
        _BACKGROUND[model] = vecs
    return vecs


UPDATE_SECONDS_ENV, UPDATE_SECONDS_DEFAULT = "MEMORY_PIPELINE_SEARCH_UPDATE_SECONDS", 2.0


def update_seconds(environ: dict[str, str] | None = None) -> float:
    """How long one search call may spend embedding documents the index lacks (MEMORY_PIPELINE_SEARCH_UPDATE_SECONDS,
    default 2; 0: none); a SettingsError naming the variable when it is not a number ≥ 0."""
    raw = (os.environ if environ is None else environ).get(UPDATE_SECONDS_ENV, "").strip()
    if not raw:
        return UPDATE_SECONDS_DEFAULT
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{UPDATE_SECONDS_ENV}={raw!r}: expected a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise SettingsError(f"{UPDATE_SECONDS_ENV}={raw!r}: must be a finite number of seconds ≥ 0")
    return value


def delta_vectors(home: Path, docs: Sequence[Doc], encode: Encode, model: str, deadline: float | None,
                  dim: int) -> tuple[np.ndarray, int]:
    """A unit vector per fresh document: this process's, kept on disk by an earlier call or update
    (search/pending.py), or embedded here a slice at a time (each slice kept) until `deadline`; a document still
    without one gets zeros (it matches by keywords only). Returns (vectors, documents without one)."""
    if not docs:
        return np.zeros((0, dim), dtype=np.float32), 0
    missing = {d.fingerprint: d.text for d in docs if (model, d.fingerprint) not in _DELTA_VECTORS}
    if missing:
        pending = PendingVectors(home, model)
        kept = pending.load()
        found = {fp: kept[fp] for fp in missing if fp in kept}
        found.update(embed_in_slices({fp: t for fp, t in missing.items() if fp not in found}, encode, pending,
                                     deadline))  # fmt: skip
        with _LOCK:
            for fp, v in found.items():
                _DELTA_VECTORS[(model, fp)] = v
    zero = np.zeros(dim, dtype=np.float32)
    rows = [_DELTA_VECTORS.get((model, d.fingerprint)) for d in docs]
    return np.vstack([zero if v is None else v for v in rows]), sum(1 for v in rows if v is None)


DELTA_EMBED_LIMIT = 64  # more fresh documents than this, every one with its vector: the call folds them into the
# index (no embedding left to do; a CLI call is a new process, so the delta is read again by every search)


@dataclass(frozen=True)
class Fresh:
    """What `index_for` read to decide, for the index it returned: the store's view and `delta_docs` of it (a
    search reuses them rather than reading the spool, the store's stamp and the workspace's files again)."""

    view: StoreView
    delta: tuple[list[Doc], set[str], str] | None = None  # None: not computed (the store was busy)
    deadline: float | None = None  # time.monotonic() after which the call embeds nothing more (None: its bound)


@dataclass(frozen=True)
class ReadView:
    """What search reads instead of the live workspace: `index`, `fresh` (the store's view since it and the delta
    documents), `vectors` (fingerprint → unit vector, one for each delta document) and the model they are in."""

    index: LoadedIndex
    fresh: Fresh
    model: str
    vectors: Mapping[str, np.ndarray] = field(default_factory=dict)

    def delta_vectors(self, docs: Sequence[Doc], dim: int) -> np.ndarray:
        """A unit vector per document, zeros for one without (it matches by keywords only, as in the live path)."""
        if not docs:
            return np.zeros((0, dim), np.float32)
        zero = np.zeros(dim, dtype=np.float32)
        return np.vstack([self.vectors.get(d.fingerprint, zero) for d in docs])


def index_for(home: Path, encode: Encode, model: str) -> tuple[LoadedIndex | None, str, Fresh | None]:
    """The index to search, built here when it is missing or built for another model; (None, notice, None) when it
    cannot be, and the notice says why. Documents written since the index's update are embedded here only within
    the call's bound (`update_seconds`, a slice at a time, each slice kept for the next call and the next update):
    what is left matches by keywords only and the notice says the index is behind. Once all have vectors and more
    than DELTA_EMBED_LIMIT wait, they are folded into the index (no embedding left; never waiting for another
    writer). The third item: what was read about the returned index (None when it was built or updated here)."""
    deadline = time.monotonic() + update_seconds()
    try:
        idx = _cached_index(home)
    except IndexMissing as exc:  # none, or a damaged one (a truncated file, vectors that do not fit the docs)
        why = "search index missing" if current_folder(home) is None else str(exc).splitlines()[0]
        return (*_build_now(home, encode, model, why), None)
    if idx.model != model:
        return (*_build_now(home, encode, model, f"search index was built for {idx.model}, not {model}"), None)
    view = store_view(home, idx)
    if view.busy:
        return idx, "", Fresh(view, deadline=deadline)
    fresh = delta_docs(home, idx, view)
    written = len(fresh[0])
    _, left = delta_vectors(home, fresh[0], encode, model, deadline, idx.dim or 1)
    if left:
        return idx, behind(left, written), Fresh(view, fresh, deadline)
    if written > DELTA_EMBED_LIMIT:
        try:
            built, notice = _build_now(home, encode, model, f"{written} documents written since the last index update",
                                       full=False, deadline=deadline, wait=False)  # fmt: skip
            if built is not None:
                return built, notice, None
            return idx, "", Fresh(view, fresh, deadline)  # a writer holds the store: the delta answers meanwhile
        except IndexBehind as exc:  # the update found more to embed (texts changed in place) than the bound allows
            return idx, behind(exc.left, written), Fresh(view, fresh, deadline)
        except IndexBusy:  # another writer is catching up: answer from the index as it is, delta included
            return idx, "", Fresh(view, fresh, deadline)
    return idx, "", Fresh(view, fresh, deadline)


def behind(left: int, written: int) -> str:
    """The notice of a call that answered before the index caught up."""
    return (f"search index behind: {left:,} of {written:,} documents written since its last update have no vector "
            "yet and match by keywords only (the search_index job or the next searches embed them)")


def _build_now(home: Path, encode: Encode, model: str, why: str, full: bool = True, deadline: float | None = None,
               wait: bool = True) -> tuple[LoadedIndex | None, str]:
    from memory_pipeline.search.build import build_index

    if (home / "memory.duckdb").exists():
        with reading_store(home) as con:
            if con is None:  # a writer holds the store: never wait for it in a query
                return None, f"{why}; store busy, so these results come from a plain keyword scan"
    try:
        stats = build_index(home, encode, model, full=full, deadline=deadline, wait=wait)
        idx = _cached_index(home)
    except (SettingsError, IndexBehind, IndexBusy):
        raise  # a configuration error (a failing plug-in) is one line from the caller, never a silent fallback
    except (OSError, duckdb.Error, IndexMissing, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return None, f"{why} and could not be built ({first}); these results come from a plain keyword scan"
    done = "built" if full else "updated"
    counts = f"{stats.docs:,} documents, {stats.embedded:,} embedded, {stats.seconds:.1f} s"
    return idx, f"{why}: index {done} now ({counts})"


def refresh_index(home: Path) -> str:
    """After a command wrote what search reads (a night, an import, the demo): the index brought up to date —
    incrementally, so only new or changed text is embedded. One line saying what was done."""
    from memory_pipeline.search.build import build_index

    encode, model = default_embedder()
    try:
        previous = load_index(home)
        full = previous.model != model
    except IndexMissing:
        full = True
    try:
        stats = build_index(home, encode, model, full=full)
    except SettingsError:
        raise
    except (OSError, duckdb.Error, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"search index not updated ({first}); the next search builds it"
    done = "built" if full else "updated"
    return f"search index {done}: {stats.docs:,} documents ({stats.embedded:,} embedded) in {stats.seconds:.1f} s"
