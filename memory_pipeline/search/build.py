"""Building and updating the search index.

A full build reads the store as Arrow (no Python object per memory), tokenises in bulk and writes one segment. An
update reads only what changed since the current version's cursor: memories appended past its rowid watermark,
the memories the store's change log names past its seq, and files whose (mtime, size) changed. Their old rows are
marked deleted, the new ones go to a new segment, and the tiered merge policy merges segments when a tier fills.
A memory whose text is unchanged keeps its vector (or takes the store's own for this model): only new text is
embedded. A count check against the store catches a write the change log missed, and rebuilds. No Dagster here."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memory_pipeline.search.documents import (
    DOC_SCHEMA,
    READABLE_LIFECYCLES,
    all_file_docs,
    docs_table,
    few_rows_arrow,
    file_docs,
    file_signature,
    iter_files,
    store_counts,
    store_rows_with_vectors,
    store_stamp,
    store_table,
)
from memory_pipeline.search.index import (
    FORMAT,
    BuildStats,
    Encode,
    IndexMissing,
    LoadedIndex,
    current_folder,
    index_root,
    keep_file,
    load_index,
    merge_step,
    new_entry,
    read_manifest,
    segment_folder,
    segment_name,
    version_bytes,
    write_version,
    writer_lock,
)
from memory_pipeline.search.pending import IndexBehind, PendingVectors, embed_in_slices, fingerprint
from memory_pipeline.search.segment import SegmentDamaged, write_segment
from memory_pipeline.store import changes
from memory_pipeline.store.attached import attached

MERGE_FACTOR = 10


def _attach_waiting(stack: ExitStack, path: Path, timeout_s: float = 300.0) -> duckdb.DuckDBPyConnection:
    """The store read-only until `stack` closes, waiting while a writer (the nightly run, an import) holds
    DuckDB's file lock."""
    deadline = time.monotonic() + timeout_s
    pause = 0.05
    while True:
        try:
            return stack.enter_context(attached(path))
        except duckdb.IOException:
            if time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(2.0, pause * 2)


def _store_read(con: duckdb.DuckDBPyConnection | None) -> tuple[dict[str, int], int]:
    """The store's cursor (rowid watermark, rows, change-log seq) and its readable memories (-1: no memories
    table yet), in two small queries."""
    if con is None:
        return {"max_rowid": -1, "rows": 0, "change_seq": 0}, -1
    try:
        watermark, rows, readable = store_counts(con)
    except duckdb.CatalogException:
        return {"max_rowid": -1, "rows": 0, "change_seq": 0}, -1
    return {"max_rowid": watermark, "rows": rows, "change_seq": changes.cursor(con)}, readable


def _store_cursor(con: duckdb.DuckDBPyConnection | None) -> dict[str, int]:
    return _store_read(con)[0]


def _empty() -> pa.Table:
    return DOC_SCHEMA.empty_table()


def _categories(table: pa.Table) -> set[str]:
    if table.num_rows == 0:
        return set()
    return {str(c) for c in pc.unique(pc.list_flatten(table.column("categories"))).to_pylist() if c is not None}


def _kinds(table: pa.Table) -> set[str]:
    return {str(k) for k in pc.unique(table.column("kind")).to_pylist()} if table.num_rows else set()


def store_vectors(
    con: duckdb.DuckDBPyConnection, model: str, keys: list[str], dim: int | None
) -> dict[int, np.ndarray]:
    """Vectors the abstraction engine already computed with this model: position in `keys` → unit vector."""
    if not keys:
        return {}
    where: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        where.setdefault(k, []).append(i)
    # Through `execute`: DuckDB 2 refuses `register`/`sql` on a connection whose last `execute` result was not
    # fetched to the end (a `fetchone()` of a count), and that error read as "no stored vectors" re-embedded them all.
    # The keys go as one list parameter (registering an Arrow table of them cost ~8 ms an update).
    try:
        res = few_rows_arrow(
            con, "SELECT memory_id AS key, vector FROM embeddings WHERE model = ? AND memory_id IN "
            "(SELECT unnest(?::VARCHAR[]))", [model, list(where)],
        )
    except duckdb.Error:
        return {}
    names = res.column("key").to_pylist()
    return {p: v for i, v in unit_vectors(res.column("vector"), dim).items() for p in where[str(names[i])]}


def unit_vectors(column: pa.ChunkedArray | pa.Array, dim: int | None) -> dict[int, np.ndarray]:
    """Row → unit vector of a column of stored vectors; a null, or one of another width than `dim` (without `dim`,
    than the widest), is left out."""
    if len(column) == 0:
        return {}
    lengths = np.asarray(pc.list_value_length(column).fill_null(0).to_numpy(zero_copy_only=False))
    width = dim or int(lengths.max())
    ok = (lengths == width) & (width > 0)
    rows = np.flatnonzero(ok)
    if not len(rows):
        return {}
    flat = np.asarray(pc.list_flatten(column.filter(pa.array(ok))).to_numpy(), dtype=np.float32)
    mat = flat.reshape(-1, width)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return dict(zip(rows.tolist(), mat / norms, strict=True))


def vectors_for(
    table: pa.Table, con: duckdb.DuckDBPyConnection | None, encode: Encode, model: str, dim: int | None,
    reuse: dict[int, np.ndarray] | None = None, stored: dict[int, np.ndarray] | None = None,
    pending: PendingVectors | None = None, deadline: float | None = None,
) -> tuple[np.ndarray, int, float]:
    """A unit vector per row: reused (same text already indexed), the store's own (`stored` when the caller read
    them with the rows, else looked up here), kept from an earlier call (`pending`), or encoded a slice at a time,
    each slice kept in `pending` before the next. IndexBehind when `deadline` passes with rows left to encode.
    Returns (matrix, rows encoded, seconds spent encoding)."""
    n = table.num_rows
    known: dict[int, np.ndarray] = dict(reuse or {})
    for row, vec in (stored or {}).items():
        known.setdefault(row, vec)
    if con is not None and n and stored is None:
        sources = table.column("source").to_pylist()
        keys = table.column("key").to_pylist()
        store_pos = [i for i in range(n) if sources[i] == "store" and i not in known]
        found = store_vectors(con, model, [keys[i] for i in store_pos], dim)
        known.update({store_pos[j]: v for j, v in found.items()})
    need = [i for i in range(n) if i not in known]
    t = time.perf_counter()
    encoded = 0
    if need:
        texts = table.column("text").take(pa.array(need)).to_pylist()
        prints = [fingerprint(text) for text in texts]
        kept = pending.load() if pending is not None else {}
        by_print = {fp: kept[fp] for fp in prints if fp in kept}
        todo = {fp: text for fp, text in zip(prints, texts, strict=True) if fp not in by_print}
        made = embed_in_slices(todo, encode, pending, deadline)
        encoded = len(made)
        if encoded < len(todo):
            raise IndexBehind(encoded, len(todo) - encoded)
        by_print.update(made)
        known.update((i, by_print[fp]) for i, fp in zip(need, prints, strict=True))
    seconds = time.perf_counter() - t
    width = dim or (len(next(iter(known.values()))) if known else 0)
    matrix = np.zeros((n, width), np.float32)
    if known:
        pos = np.fromiter(known.keys(), dtype=np.int64, count=len(known))
        matrix[pos] = np.vstack(list(known.values()))
    return matrix, encoded, seconds


def _manifest(model: str, dim: int, entries: list[dict[str, Any]], cursor: dict[str, int],
              files: dict[str, tuple[float, int]], cats: set[str], kinds: set[str], docs: int,
              store_docs: int, stamp: list[int]) -> dict[str, Any]:
    return {"format": FORMAT, "model": model, "dim": dim, "docs": docs, "built_at": time.time(), "store": cursor,
            "store_max_rowid": cursor["max_rowid"], "store_rows": cursor["rows"], "files": files,
            "categories": sorted(cats), "kinds": sorted(kinds), "segments": entries,
            "store_docs": store_docs, "store_stamp": stamp}  # fmt: skip


def build_index(home: Path, encode: Encode, model: str, *, full: bool = False,
                merge_factor: int = MERGE_FACTOR, deadline: float | None = None, wait: bool = True) -> BuildStats:
    """A new index version: with `full=False` and a current index for this model, an update proportional to what
    changed (see the module docstring); else a full build. New text is embedded a slice at a time, each slice kept
    (search/pending.py), so a build killed midway loses one slice of work; with `deadline` (time.monotonic()) no
    slice starts after it and IndexBehind says what is left. `wait=False`: IndexBusy when another writer holds
    the index."""
    home = Path(home)
    pending = PendingVectors(home, model)
    with writer_lock(home, wait):
        kept = pending.files()
        stats = _build_locked(home, encode, model, full, merge_factor, pending, deadline)
        pending.drop({*kept, *pending.read, *pending.written})  # committed: what they hold is indexed, or stale
        return stats


def _build_locked(home: Path, encode: Encode, model: str, full: bool, merge_factor: int, pending: PendingVectors,
                  deadline: float | None) -> BuildStats:
    if not full:
        try:
            previous = load_index(home, vocab=False)  # a damaged version is rebuilt, never kept as quiet
        except IndexMissing:
            previous = None
        if previous is not None and previous.model == model:
            quiet = _quiet(home, previous)
            if quiet is not None:
                return quiet
            try:
                stats = update_index(home, previous, encode, model, merge_factor, pending, deadline)
            except SegmentDamaged:  # found by a merge reading a segment's words: rebuild, as load_index would
                stats, previous = None, None
            if stats is not None:
                return stats
            return full_build(home, encode, model, previous, pending, deadline)
    return full_build(home, encode, model, None, pending, deadline)


def _quiet(home: Path, prev: LoadedIndex) -> BuildStats | None:
    """The current version when nothing changed since it was built — the store's files as they were when it read
    them (their stamp) and every indexed file as it was — without opening the store; else None (an update or a
    build decides)."""
    t0 = time.perf_counter()
    stamp = prev.manifest.get("store_stamp")
    if not isinstance(stamp, list) or stamp != store_stamp(home):
        return None
    if {p: tuple(v) for p, v in (prev.manifest.get("files") or {}).items()} != file_signature(home):
        return None
    return BuildStats(docs=prev.n_live, added=0, updated=0, removed=0, embedded=0,
                      seconds=round(time.perf_counter() - t0, 3), bytes=version_bytes(prev.folder),
                      version=prev.folder.name, segments=len(prev.segments))  # fmt: skip


def full_build(home: Path, encode: Encode, model: str, previous: LoadedIndex | None = None,
               pending: PendingVectors | None = None, deadline: float | None = None) -> BuildStats:
    """One segment of every readable document; with `previous` (same model), texts it holds keep their vectors."""
    t0 = time.perf_counter()
    signature = file_signature(home)
    store = home / "memory.duckdb"
    with ExitStack() as stack:
        con = _attach_waiting(stack, store) if store.exists() else None
        stamp = store_stamp(home)  # with the lock held: no commit falls between it and the reads
        try:
            rows = store_table(con) if con is not None else _empty()
        except duckdb.CatalogException:  # an empty store without the memories table yet
            rows = _empty()
        cursor = _store_cursor(con)
        table = pa.concat_tables([rows, docs_table(all_file_docs(home))]) if signature else rows
        reuse = None
        if previous is not None:
            keys = table.column("key").to_pylist()
            reuse = _same_text(previous, table, keys, previous.locate(keys))
        matrix, embedded, embed_s = vectors_for(table, con, encode, model, previous.dim if previous else None, reuse,
                                                pending=pending, deadline=deadline)
    dim = int(matrix.shape[1]) if matrix.ndim == 2 else 0

    def build(tmp: Path) -> dict[str, Any]:
        name = segment_name()
        write_segment(segment_folder(tmp, name), table, matrix)
        return _manifest(model, dim, [new_entry(segment_folder(tmp, name), table.num_rows)], cursor, signature,
                         _categories(table), _kinds(table), table.num_rows, rows.num_rows, stamp)  # fmt: skip

    version = write_version(home, build)
    return BuildStats(docs=table.num_rows, added=table.num_rows, updated=0, removed=0, embedded=embedded,
                      seconds=round(time.perf_counter() - t0, 3), bytes=version_bytes(index_root(home) / version),
                      version=version, embed_seconds=round(embed_s, 3), segments=1)  # fmt: skip


def update_index(home: Path, prev: LoadedIndex, encode: Encode, model: str, factor: int,
                 pending: PendingVectors | None = None, deadline: float | None = None) -> BuildStats | None:
    """The incremental update, or None when only a full build will do (no change log; a count that does not add
    up)."""
    t0 = time.perf_counter()
    before = dict(prev.manifest.get("store") or {})
    signature = file_signature(home)
    store = home / "memory.duckdb"
    with ExitStack() as stack:
        con = _attach_waiting(stack, store) if store.exists() else None
        stamp = store_stamp(home)  # with the lock held: no commit falls between it and the reads
        cursor, readable = _store_read(con)
        changed: list[str] = []
        fresh_rows, stored = _empty(), None
        if con is not None and readable >= 0:
            if cursor["change_seq"] < 0 or int(before.get("change_seq", -1)) < 0:
                return None  # a store without the change log: only a full build sees every change
            if cursor["change_seq"] > int(before["change_seq"]):
                changed = changes.changed_since(con, int(before["change_seq"]), cursor["change_seq"])
            fresh_rows, stored = _fresh_rows(con, int(before.get("max_rowid", -1)), changed, model, prev.dim or None)
        readable = max(readable, 0)
        built = {p: tuple(v) for p, v in (prev.manifest.get("files") or {}).items()}
        stale = {p for p, sig in built.items() if signature.get(p) != sig}
        new_paths = sorted(p for p in signature if p in stale or p not in built)
        kinds = {p.relative_to(home).as_posix(): (k, t) for p, k, t in iter_files(home)} if new_paths else {}
        file_rows = docs_table([d for rel in new_paths if rel in kinds for d in file_docs(home, rel, *kinds[rel])])
        table = pa.concat_tables([fresh_rows, file_rows])
        keys = table.column("key").to_pylist()
        old = prev.locate(sorted(set(changed) | set(keys)))
        old.update(prev.locate(sorted(stale), column="path"))
        reuse = _same_text(prev, table, keys, old)
        matrix, embedded, embed_s = vectors_for(table, con, encode, model, prev.dim or None, reuse, stored, pending,
                                                deadline)
    store_docs = int(prev.manifest.get("store_docs", -1))
    old_store = sum(1 for s, r in old.values() if prev.segments[s].column("source")[r].as_py() == "store")
    after = store_docs - old_store + fresh_rows.num_rows
    if con is not None and store_docs >= 0 and after != readable:
        return None  # the log missed a change (a write path that does not note it): rebuild from the store
    if not table.num_rows and not old and cursor == before and not stale and signature == built:
        return BuildStats(docs=prev.n_live, added=0, updated=0, removed=0, embedded=0,
                          seconds=round(time.perf_counter() - t0, 3), bytes=version_bytes(prev.folder),
                          version=prev.folder.name, segments=len(prev.segments))  # fmt: skip
    deleted_rows: dict[int, list[int]] = {}
    for s, r in old.values():
        deleted_rows.setdefault(s, []).append(r)
    merged = segments = 0

    def build(tmp: Path) -> dict[str, Any]:
        nonlocal merged, segments
        entries: list[dict[str, Any]] = []
        for s, seg in enumerate(prev.segments):
            dead = np.flatnonzero(~prev.alive[s]) if prev.alive[s] is not None else np.zeros(0, np.int64)  # type: ignore[operator]
            if s in deleted_rows:
                dead = np.union1d(dead, np.array(deleted_rows[s], np.int64)).astype(np.int64)
                np.save(tmp / f"{seg.name}.deleted.npy", dead)
            elif len(dead):
                keep_file(prev.folder / f"{seg.name}.deleted.npy", tmp)
            entries.append({**prev.manifest["segments"][s], "deleted": int(len(dead))})
        extra = []
        if table.num_rows:
            name = segment_name()
            extra.append(segment_folder(tmp, name))
            write_segment(extra[-1], table, matrix)
            entries.append(new_entry(extra[-1], table.num_rows))
        entries, merged = merge_step(tmp, prev, entries, extra, factor)
        segments = len(entries)
        live = sum(int(e["rows"]) - int(e["deleted"]) for e in entries)
        cats = set(prev.manifest.get("categories") or ()) | _categories(table)
        kinds_all = set(prev.manifest.get("kinds") or ()) | _kinds(table)
        return _manifest(model, prev.dim or int(matrix.shape[1]), entries, cursor, signature, cats, kinds_all,
                         live, after if store_docs >= 0 else -1, stamp)  # fmt: skip

    version = write_version(home, build)
    updated = sum(1 for k in keys if k in old)
    return BuildStats(
        docs=prev.n_live - len(old) + table.num_rows, added=table.num_rows - updated, updated=updated,
        removed=max(0, len(old) - updated), embedded=embedded, seconds=round(time.perf_counter() - t0, 3),
        bytes=version_bytes(index_root(home) / version), version=version, embed_seconds=round(embed_s, 3),
        segments=segments, merged=merged,
    )


def _fresh_rows(
    con: duckdb.DuckDBPyConnection, after: int, changed: list[str], model: str, dim: int | None
) -> tuple[pa.Table, dict[int, np.ndarray] | None]:
    """Readable rows appended past the watermark `after` (rows past a pending one included: the watermark stays
    below it) and the rows the change log names, one per key, with the vectors the store holds for them (row → unit
    vector; None: a store without the embeddings table, whose rows are looked up later). Two queries, not one with
    OR: DuckDB prunes the scan by rowid only for a condition on rowid alone (at 100k, 4 ms against 19)."""
    wheres: list[tuple[str, list[Any]]] = [(" AND _row > ?", [after])]
    if changed:
        wheres.append((" AND id IN (SELECT unnest(?::VARCHAR[]))", [changed]))
    try:
        parts = [store_rows_with_vectors(con, model, where, params) for where, params in wheres]
    except duckdb.CatalogException:
        table = pa.concat_tables([store_table(con, where, params, few=True) for where, params in wheres])
        return table.take(_first_per_key(table)), None
    table = pa.concat_tables([t for t, _ in parts])
    vectors = pa.chunked_array([c for _, v in parts for c in v.chunks], type=parts[0][1].type)
    rows = _first_per_key(table)  # an appended row the change log names too comes from both queries
    return table.take(rows), unit_vectors(vectors.take(rows), dim)


def _first_per_key(table: pa.Table) -> pa.Array:
    first: dict[str, int] = {}
    for i, k in enumerate(table.column("key").to_pylist()):
        first.setdefault(k, i)
    return pa.array(sorted(first.values()), pa.int64())


def _same_text(
    prev: LoadedIndex, table: pa.Table, keys: list[str], old: dict[str, tuple[int, int]]
) -> dict[int, np.ndarray]:
    """Rows of `table` whose key is indexed with the same text: their old vector (metadata changed, text did not)."""
    hits = [(i, old[k]) for i, k in enumerate(keys) if k in old]
    if not hits:
        return {}
    texts = prev.texts_at([loc for _, loc in hits])
    new_texts = table.column("text").take(pa.array([i for i, _ in hits], pa.int64())).to_pylist()
    out: dict[int, np.ndarray] = {}
    for (i, (s, r)), before, now in zip(hits, texts, new_texts, strict=True):
        if before == now:
            out[i] = prev.segments[s].vector_rows(np.array([r]))[0]
    return out


def pending_changes(home: Path) -> dict[str, int] | None:
    """What the index lacks: memories appended or changed since its cursor and files added/changed/removed; None
    when there is no index. The sensor's trigger, and cheap (a few small queries and a stat walk)."""
    folder = current_folder(home)
    if folder is None:
        return None
    try:
        manifest = read_manifest(folder)
    except (OSError, ValueError):
        return None
    before = dict(manifest.get("store") or {})
    rows = 0
    store = Path(home) / "memory.duckdb"
    if store.exists():
        with ExitStack() as stack:
            try:
                con = stack.enter_context(attached(store))
            except duckdb.Error:
                return {"store_rows": 0, "files": 0, "busy": 1}
            cursor = _store_cursor(con)
            rows = max(0, cursor["max_rowid"] - int(before.get("max_rowid", -1)))
            rows += len(changes.changed_since(con, int(before.get("change_seq", 0)), cursor["change_seq"]))
            if cursor["change_seq"] < 0 and cursor["rows"] < int(before.get("rows", 0)):
                rows += 1  # an old store without the change log lost rows: rebuild
    built = {k: tuple(v) for k, v in manifest.get("files", {}).items()}
    current = file_signature(Path(home))
    files = sum(1 for k, v in current.items() if built.get(k) != v) + len(set(built) - set(current))
    return {"store_rows": rows, "files": files, "busy": 0}


__all__ = ["READABLE_LIFECYCLES", "build_index", "pending_changes"]
