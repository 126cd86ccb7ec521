"""One immutable index segment: its documents' metadata (Parquet), its words (JSON) and, in one file of arrays
(`arrays_file`), their texts (UTF-8 and offsets), unit vectors, BM25 postings (raw term frequencies and document
lengths), sorted keys and, for a large segment, int8 codes of the vectors. The arrays are memory-mapped: a query
touches only the pages it reads.

BM25 is scored at query time from raw frequencies with collection statistics summed over the live documents of
every segment (idf, N, average length), as Lucene does, so an index of many segments scores exactly as one
segment holding the same documents — which is what lets segments be merged at any time. Texts stay on disk and
are read for the hits returned only (a Parquet row group per hit cost ~1.5 ms; an offset into the texts,
microseconds). No Dagster here."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from memory_pipeline.search.arrays_file import read_arrays, write_arrays
from memory_pipeline.search.documents import DOC_FIELDS, DOC_SCHEMA, Doc, table_docs
from memory_pipeline.search.tokens import bulk_terms

K1, B = 1.5, 0.75
ROW_GROUP = 4096
QUANT_ROWS = 4096  # a segment this large also gets int8 codes, scanned instead of its float32 vectors (numkong's
# SIMD kernels): a quarter of the bytes, and the scan is memory-bound (100k rows: 4.7 ms against numpy's 28 ms here)
# a segment this small keeps its documents (without text) as Python objects once read (equal strings shared): ~65 MB
# at 100k rows, and every query's ~400 candidates are list lookups, not an Arrow take and 400 Doc objects (~0.8 ms)
SMALL_ROWS = 200_000
RERANK = 4  # … and the best RERANK·c of that scan are rescored from the float32 vectors
# vectors of at most this many bytes are read through their mapping: a 100k-row segment (147 MiB) too, whose ~1,200
# preads a query were 1.5 ms of its 8–10; the 1M one (1.4 GiB) keeps pread, so its query process stays ≤ 1.5 GiB
MAPPED_READ_MAX = 256 << 20
PAGE = 4096
META_FIELDS = [f for f in DOC_FIELDS if f != "text"]
ARRAYS = "arrays.bin"  # every array of the segment (arrays_file), beside docs.parquet and vocab.json


class SegmentDamaged(ValueError):
    """A segment's files do not fit together (truncated, hand-edited): the index is rebuilt."""


@dataclass
class Postings:
    indptr: np.ndarray  # (terms + 1,) int64
    docs: np.ndarray  # (nnz,) int32, sorted within a term
    tf: np.ndarray  # (nnz,) uint16
    dl: np.ndarray  # (rows,) int32: tokens per document


def build_postings(rows: np.ndarray, terms: np.ndarray, n_docs: int, n_terms: int) -> Postings:
    """Postings (term-major CSC) from one (document row, term id) pair per token."""
    dl = np.bincount(rows, minlength=n_docs).astype(np.int32) if n_docs else np.zeros(0, np.int32)
    if len(rows) == 0:
        return Postings(np.zeros(n_terms + 1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint16), dl)
    key = terms.astype(np.int64) * max(n_docs, 1) + rows
    uniq, counts = np.unique(key, return_counts=True)
    t = uniq // max(n_docs, 1)
    indptr = np.zeros(n_terms + 1, np.int64)
    np.cumsum(np.bincount(t, minlength=n_terms), out=indptr[1:])
    tf = np.minimum(counts, np.iinfo(np.uint16).max).astype(np.uint16)
    return Postings(indptr, (uniq % max(n_docs, 1)).astype(np.int32), tf, dl)


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, float]:
    """int8 codes with one scale for the whole segment (ranking by the integer dot is ranking by ≈ cosine)."""
    peak = float(np.max(np.abs(vectors))) if vectors.size else 1.0
    scale = 127.0 / (peak or 1.0)
    return np.clip(np.rint(vectors * scale), -127, 127).astype(np.int8), scale


def write_segment(folder: Path, table: pa.Table, vectors: np.ndarray, postings: Postings | None = None,
                  vocab: list[str] | None = None) -> None:
    """Write a segment into `folder` (new, not yet visible: the caller renames or links it into a version)."""
    folder.mkdir(parents=True)
    table = table.select(list(DOC_FIELDS)).cast(DOC_SCHEMA)
    n = table.num_rows
    if postings is None or vocab is None:
        rows, terms, vocab = bulk_terms(table.column("text"))
        postings = build_postings(rows, terms, n, len(vocab))
    pq.write_table(table.drop_columns(["text"]), folder / "docs.parquet", row_group_size=ROW_GROUP)
    keys = np.array(pc.cast(table.column("key"), pa.binary()).to_pylist() or [b""], dtype=np.bytes_)[:n]
    order = np.argsort(keys, kind="stable")
    text = table.column("text").cast(pa.large_string()).combine_chunks() if n else pa.array([], pa.large_string())
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int64, count=n + 1, offset=text.offset * 8) if n else (
        np.zeros(1, np.int64))  # fmt: skip
    data = text.buffers()[2]
    texts = np.frombuffer(data, np.uint8)[int(offsets[0]) : int(offsets[-1])] if data is not None and n else (
        np.zeros(0, np.uint8))  # fmt: skip
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    arrays = {"keys_sorted": keys[order], "keys_order": order.astype(np.int64),  # an update's binary search
              "text_offsets": offsets - offsets[0], "texts": texts, "vectors": vectors, "p_indptr": postings.indptr,
              "p_docs": postings.docs, "p_tf": postings.tf, "dl": postings.dl}  # fmt: skip
    stats: dict[str, Any] = {"rows": n, "dim": int(vectors.shape[1]) if vectors.ndim == 2 else 0,
                             "sum_dl": int(postings.dl.sum()), "code_scale": None}  # fmt: skip
    if n >= QUANT_ROWS:
        arrays["codes"], stats["code_scale"] = quantize(vectors)
    write_arrays(folder / ARRAYS, arrays, stats)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")


@dataclass
class Segment:
    name: str
    folder: Path
    rows: int
    vectors: np.ndarray  # memory-mapped float32 (rows, dim)
    postings: Postings  # memory-mapped
    _vocab: dict[str, int] | None  # None: read from vocab.json on first use (an update loads without it)
    sum_dl: int
    codes: np.ndarray | None = None  # memory-mapped int8, large segments only
    code_scale: float = 1.0
    _meta: pa.Table | None = None
    _columns: dict[str, pa.Array] = field(default_factory=dict)
    text_offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))  # memory-mapped
    text_data: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))  # memory-mapped UTF-8
    vector_offset: int = 0  # where the vectors' rows start in the arrays file
    keys_sorted: np.ndarray = field(default_factory=lambda: np.zeros(0, np.bytes_))  # memory-mapped
    keys_order: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # memory-mapped
    _docs: list[Doc] | None = None
    _fd: int | None = None

    def __del__(self) -> None:
        if self._fd is not None:
            os.close(self._fd)

    @property
    def vocab(self) -> dict[str, int]:
        """Term → postings column. A segment loaded for an update reads it only if a merge takes the segment: the
        JSON of a large segment's words is most of what loading it costs."""
        if self._vocab is None:
            self._vocab = _read_vocab(self.folder, len(self.postings.indptr) - 1)
        return self._vocab

    def vector_rows(self, rows: np.ndarray) -> np.ndarray:
        """These rows of the float32 vectors. A large matrix is read with pread rather than through the mapping: a
        page fault maps its cached neighbours too (fault-around), so rescoring 800 random rows a query through the
        mapping put the whole 1.5 GiB matrix of 1M rows into the query process's RSS. A small one is read through
        the mapping: ~1,000 preads a query were a tenth of a gateway worker's CPU, and all of it resident costs at
        most MAPPED_READ_MAX."""
        dim = int(self.vectors.shape[1])
        if self.vectors.nbytes <= MAPPED_READ_MAX:
            # the fancy index is already a float32 copy: np.array copied it again (0.75 against 0.17 ms, 800 rows)
            return np.asarray(self.vectors[np.asarray(rows, dtype=np.int64)], dtype=np.float32)
        out = np.empty((len(rows), dim), np.float32)
        if not len(rows) or not dim:
            return out
        if self._fd is None:
            self._fd = os.open(self.folder / ARRAYS, os.O_RDONLY)
        size = dim * 4
        buf = out.data.cast("B")
        for i, r in enumerate(np.asarray(rows, dtype=np.int64).tolist()):
            os.preadv(self._fd, [buf[i * size : (i + 1) * size]], self.vector_offset + r * size)
        return out

    @property
    def meta(self) -> pa.Table:
        """Every Doc field but the text, read on first use (an update reads only the columns it needs)."""
        if self._meta is None:
            self._meta = _read_docs(self.folder, META_FIELDS).combine_chunks()
        return self._meta

    def column(self, name: str) -> pa.Array:
        """One metadata column (the whole table is not read for it)."""
        if self._meta is not None:
            return self._meta.column(name).combine_chunks()
        if name not in self._columns:
            self._columns[name] = _read_docs(self.folder, [name]).column(0).combine_chunks()
        return self._columns[name]

    def find(self, keys: list[str]) -> dict[str, int]:
        """Row of each key this segment holds (deleted rows included): a binary search in the sorted keys (the
        pages it touches), so an update finds the rows it replaces without reading the segment's keys."""
        if not keys or self.rows == 0:
            return {}
        ordered, order = self.keys_sorted, self.keys_order
        width = ordered.dtype.itemsize
        encoded = [(k, k.encode("utf-8")) for k in keys]
        fits = [(k, b) for k, b in encoded if len(b) <= width]
        if not fits:
            return {}
        wanted = np.array([b for _, b in fits], dtype=ordered.dtype)
        pos = np.minimum(np.searchsorted(ordered, wanted), self.rows - 1)
        hit = ordered[pos] == wanted
        return {k: int(order[p]) for (k, _), p, h in zip(fits, pos, hit, strict=True) if h}

    def file_rows(self, paths: list[str]) -> dict[str, int]:
        """Row of every chunk (`path#n`) of these files (deleted rows included): the sorted keys hold a file's
        chunks side by side, found by a binary search to the first (no pyarrow array built: that imports pandas)."""
        ordered, order = self.keys_sorted, self.keys_order
        if not paths or self.rows == 0:
            return {}
        width = ordered.dtype.itemsize
        found: dict[str, int] = {}
        for path in paths:
            prefix = f"{path}#".encode()
            if len(prefix) >= width:
                continue
            i = int(np.searchsorted(ordered, np.array(prefix, dtype=ordered.dtype)))
            while i < self.rows and bytes(ordered[i]).startswith(prefix):
                found[bytes(ordered[i]).decode("utf-8")] = int(order[i])
                i += 1
        return found

    def preload(self) -> None:
        """What a first query would pay otherwise: a small segment's documents as objects (~40 ms for a night's
        10k rows), every page of the postings (as Lucene's preload) and of the vectors a query reads through the
        mapping (the first query at 100k rescored in 5 ms, later ones in 0.5), read before a server takes requests."""
        if 0 < self.rows <= SMALL_ROWS:
            self.doc_rows([0])
        mapped = [self.vectors] if self.vectors.nbytes <= MAPPED_READ_MAX else []  # a larger one is read by pread
        for part in (self.postings.indptr, self.postings.docs, self.postings.tf, self.postings.dl, *mapped):
            if part.size:  # one value a page faults the page in
                int(part.reshape(-1)[:: max(1, PAGE // part.itemsize)].sum())

    def doc_rows(self, rows: np.ndarray | list[int], lists: bool = True) -> list[Doc]:
        """Documents without their text (read when a hit needs it); `lists=False`: without categories and lineage
        either (a third of the cost: ranking needs neither, the hits get them from `lists_of`). A small segment
        (the nights' own) keeps its documents as objects: an Arrow `take` costs ~1 ms a call, a segment."""
        if self.rows <= SMALL_ROWS:
            if self._docs is None:
                self._docs = table_docs(self.meta, with_text=False, shared=True)
            kept = self._docs
            return [kept[r] for r in np.asarray(rows, dtype=np.int64).tolist()]
        table = self.meta.take(pa.array(np.asarray(rows, dtype=np.int64)))
        if not lists:
            table = table.drop_columns(["categories", "source_ids"])
        return table_docs(table, with_text=False)

    def lists_of(self, rows: list[int]) -> list[tuple[list[str], list[str]]]:
        """(categories, source ids) of these rows."""
        if self.rows <= SMALL_ROWS:
            docs = self.doc_rows(rows)
            return [(list(d.categories), list(d.source_ids)) for d in docs]
        table = self.meta.select(["categories", "source_ids"]).take(pa.array(rows, pa.int64()))
        return list(zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True))

    def texts(self, rows: list[int]) -> list[str]:
        """The texts of these rows, read from the segment's arrays file (memory-mapped: only their pages)."""
        off = self.text_offsets
        return [bytes(self.text_data[int(off[r]) : int(off[r + 1])]).decode("utf-8") for r in rows]

    def full_table(self) -> pa.Table:
        """Every row with its text (merges and tests, not the query path)."""
        meta = _read_docs(self.folder)
        text = pa.LargeStringArray.from_buffers(
            self.rows, pa.py_buffer(np.ascontiguousarray(self.text_offsets)), pa.py_buffer(np.asarray(self.text_data))
        )
        return meta.append_column("text", text.cast(pa.string())).select(list(DOC_FIELDS))

    def term(self, word: str) -> tuple[np.ndarray, np.ndarray] | None:
        col = self.vocab.get(word)
        if col is None:
            return None
        a, b = int(self.postings.indptr[col]), int(self.postings.indptr[col + 1])
        return self.postings.docs[a:b], self.postings.tf[a:b]

    def cosine_top(
        self, qv: np.ndarray, c: int, alive: np.ndarray | None, n_dead: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The (at most) `c` live rows closest to `qv` and their exact cosines."""
        return self.top(self.scan(qv, alive), qv, c, n_dead)

    def scan(self, qv: np.ndarray, alive: np.ndarray | None) -> np.ndarray:
        """Every row's similarity to `qv` (-inf for deleted rows): the float32 cosine, or for a large segment the
        int8 dot product of the codes (SIMD kernels, VNNI/AMX where the CPU has them)."""
        if self.rows == 0:
            return np.zeros(0, np.float32)
        import numkong  # SIMD kernels (VNNI/AMX for int8 where the CPU has them), threads chosen here

        if self.codes is None:  # numpy's GEMV wakes OpenBLAS's threads: 8.5 ms for 3,000 rows on the loaded 2 cores
            q32 = np.ascontiguousarray(qv, dtype=np.float32)[None, :]
            out = np.asarray(numkong.cdist(q32, self.vectors, metric="dot", threads=1, out_dtype="float32"))[0]
        else:
            q = np.clip(np.rint(qv * self.code_scale), -127, 127).astype(np.int8)[None, :]
            threads = 2 if self.rows >= 200_000 else 1
            out = np.asarray(numkong.cdist(q, self.codes, metric="dot", threads=threads, out_dtype="float32"))[0]
        if alive is not None:
            out[~alive] = -np.inf
        return out

    def top(self, scanned: np.ndarray, qv: np.ndarray, c: int, n_dead: int) -> tuple[np.ndarray, np.ndarray]:
        """The best `c` live rows of a `scan` with their exact cosines (an int8 scan's best RERANK·c rows are
        rescored in float32: only their pages of the vectors are read)."""
        live = self.rows - n_dead
        if live <= 0 or c <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        want = min(live, c if self.codes is None else RERANK * c)
        cut = self.rows - want  # the largest `want`, without a negated copy of the scan (4 MB at 1M rows)
        rows = np.argpartition(scanned, cut)[cut:] if want < self.rows else np.arange(self.rows)
        rows = np.sort(rows[np.isfinite(scanned[rows])]).astype(np.int64)
        if self.codes is None:
            return rows, scanned[rows]
        cos = np.asarray(self.vector_rows(rows) @ qv, dtype=np.float32)
        keep = np.argsort(-cos, kind="stable")[:c]
        return rows[keep], cos[keep]

    def cosine_of(self, rows: np.ndarray, qv: np.ndarray) -> np.ndarray:
        """These rows' cosines to `qv`: a unit vector, or a matrix of them as columns (a column per vector)."""
        out = np.empty((len(rows), *np.shape(qv)[1:]), np.float32)
        if len(rows) == 0:
            return out
        order = np.argsort(rows)
        out[order] = self.vector_rows(rows[order]) @ qv
        return out


def _read_docs(folder: Path, columns: list[str] | None = None) -> pa.Table:
    """The segment's documents file, read as one file: `pq.read_table` goes through `pyarrow.dataset`, which
    imports pandas (~0.3 s of a one-query CLI search)."""
    return pq.ParquetFile(folder / "docs.parquet", memory_map=True).read(columns=columns)


def _read_vocab(folder: Path, terms: int) -> dict[str, int]:
    try:
        words = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SegmentDamaged(f"segment {folder.name} is unreadable ({exc})") from exc
    if not isinstance(words, list) or len(words) != terms:
        raise SegmentDamaged(f"segment {folder.name} is damaged (postings do not fit its vocabulary)")
    return {w: i for i, w in enumerate(words)}


def load_segment(folder: Path, dim: int | None, vocab: bool = True) -> Segment:
    """A segment's files, memory-mapped and checked against each other (SegmentDamaged when they do not fit);
    `vocab=False`: its words are read on first use (see Segment.vocab)."""
    try:
        n_meta = pq.ParquetFile(folder / "docs.parquet").metadata.num_rows  # the footer only
        stats, arrays, offsets = read_arrays(folder / ARRAYS)
        vectors = arrays["vectors"]
        postings = Postings(arrays["p_indptr"], arrays["p_docs"], arrays["p_tf"], arrays["dl"])
        codes = arrays.get("codes") if stats.get("code_scale") else None
        text_offsets, text_data = arrays["text_offsets"], arrays["texts"]
        keys_sorted, keys_order = arrays["keys_sorted"], arrays["keys_order"]
        rows = int(stats["rows"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SegmentDamaged(f"segment {folder.name} is unreadable ({exc})") from exc
    shape = tuple(vectors.shape)
    if n_meta != rows or len(shape) != 2 or shape[0] != rows or (rows and dim and shape[1] != dim):
        raise SegmentDamaged(
            f"segment {folder.name} is damaged (its vectors have shape {shape}; expected {rows} rows of dimension "
            f"{dim})"
        )
    if len(postings.dl) != rows or len(postings.indptr) < 1:
        raise SegmentDamaged(f"segment {folder.name} is damaged (postings do not fit its {rows} documents)")
    words = _read_vocab(folder, len(postings.indptr) - 1) if vocab else None
    if len(text_offsets) != rows + 1 or int(text_offsets[-1]) != len(text_data):
        raise SegmentDamaged(f"segment {folder.name} is damaged (its texts do not fit their offsets)")
    if codes is not None and tuple(codes.shape) != shape:
        raise SegmentDamaged(f"segment {folder.name} is damaged (its codes have shape {tuple(codes.shape)})")
    if len(keys_sorted) != rows or len(keys_order) != rows:
        raise SegmentDamaged(f"segment {folder.name} is damaged (its keys do not fit its {rows} documents)")
    return Segment(
        name=folder.name,
        folder=folder,
        rows=rows,
        vectors=vectors,
        postings=postings,
        _vocab=words,
        sum_dl=int(stats["sum_dl"]),
        codes=codes,
        code_scale=float(stats.get("code_scale") or 1.0),
        text_offsets=text_offsets,
        text_data=text_data,
        vector_offset=offsets["vectors"],
        keys_sorted=keys_sorted,
        keys_order=keys_order,
    )


def merge_into(folder: Path, parts: list[tuple[Segment, np.ndarray | None]]) -> int:
    """Write one segment holding the live rows of `parts` (segment, alive mask or None), in order: documents and
    vectors copied, postings remapped (no text is tokenised again). Returns its row count."""
    tables, vecs = [], []
    union: dict[str, int] = {}
    all_terms, all_docs, all_tf, all_dl = [], [], [], []
    offset = 0
    for seg, alive in parts:
        keep = np.arange(seg.rows) if alive is None else np.flatnonzero(alive)
        tables.append(seg.full_table().take(pa.array(keep)))
        vecs.append(np.asarray(seg.vectors[keep]))
        new_pos = np.full(seg.rows, -1, np.int64)
        new_pos[keep] = offset + np.arange(len(keep))
        words = sorted(seg.vocab, key=seg.vocab.__getitem__)
        to_union = np.array([union.setdefault(w, len(union)) for w in words], dtype=np.int64)
        counts = np.diff(np.asarray(seg.postings.indptr))
        term_of = np.repeat(to_union, counts)
        docs = new_pos[np.asarray(seg.postings.docs)]
        live = docs >= 0
        all_terms.append(term_of[live])
        all_docs.append(docs[live])
        all_tf.append(np.asarray(seg.postings.tf)[live])
        all_dl.append(np.asarray(seg.postings.dl)[keep])
        offset += len(keep)
    terms = np.concatenate(all_terms) if all_terms else np.zeros(0, np.int64)
    docs = np.concatenate(all_docs) if all_docs else np.zeros(0, np.int64)
    tf = np.concatenate(all_tf) if all_tf else np.zeros(0, np.uint16)
    order = np.lexsort((docs, terms))
    indptr = np.zeros(len(union) + 1, np.int64)
    np.cumsum(np.bincount(terms, minlength=len(union)), out=indptr[1:])
    postings = Postings(indptr, docs[order].astype(np.int32), tf[order], np.concatenate(all_dl).astype(np.int32))
    dim = next((v.shape[1] for v in vecs if v.ndim == 2), 0)
    matrix = np.vstack(vecs) if vecs else np.zeros((0, dim), np.float32)
    write_segment(folder, pa.concat_tables(tables), matrix, postings, sorted(union, key=union.__getitem__))
    return offset


def plan_merges(sizes: list[tuple[str, int, int]], factor: int = 10, floor: int = 2000,
                expunge: float = 0.25) -> list[list[str]]:
    """Tiered merge policy (Lucene's, simplified). `sizes`: (segment, live rows, deleted rows) per segment.
    Segments fall in tiers by live size (below `floor`, then ×`factor` per tier); a tier holding `factor` segments
    is merged into one (the smallest first), so a query meets at most ~factor segments per tier however many
    nights added one. A segment with over `expunge` of its rows deleted is rewritten alone."""
    plans: list[list[str]] = []
    taken: set[str] = set()
    tiers: dict[int, list[tuple[int, str]]] = {}
    for name, live, _dead in sizes:
        tier = 0
        bound = floor
        while live >= bound:
            tier += 1
            bound *= factor
        tiers.setdefault(tier, []).append((live, name))
    for tier in sorted(tiers):
        members = sorted(tiers[tier])
        while len(members) >= factor:
            group, members = members[:factor], members[factor:]
            plans.append([name for _, name in group])
            taken.update(name for _, name in group)
    for name, live, dead in sizes:
        if name not in taken and dead and dead > expunge * (live + dead):
            plans.append([name])
    return plans
