"""One immutable index segment: its documents' metadata (Parquet), their texts (one UTF-8 file and its offsets),
unit vectors (.npy), BM25 postings (raw term frequencies and document lengths) and, for a large segment, int8
codes of the vectors. All but the metadata are memory-mapped: a query touches only the pages it reads.

BM25 is scored at query time from raw frequencies with collection statistics summed over the live documents of
every segment (idf, N, average length), as Lucene does, so an index of many segments scores exactly as one
segment holding the same documents — which is what lets segments be merged at any time. Texts stay on disk and
are read for the hits returned only (a Parquet row group per hit cost ~1.5 ms; an offset into the text file,
microseconds). No Dagster here."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from memory_pipeline.search.documents import DOC_FIELDS, DOC_SCHEMA, Doc, table_docs
from memory_pipeline.search.tokens import bulk_terms

K1, B = 1.5, 0.75
ROW_GROUP = 4096
QUANT_ROWS = 50_000  # a segment this large gets int8 codes: its vectors are scanned as int8 (numkong, SIMD: 4.7 ms
# for 100k rows against 28 ms for numpy's float32 product, measured here under load)
RERANK = 4  # … and the best RERANK·c of that scan are rescored from the float32 vectors
META_FIELDS = [f for f in DOC_FIELDS if f != "text"]


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
    text = table.column("text").cast(pa.large_string()).combine_chunks() if n else pa.array([], pa.large_string())
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int64, count=n + 1, offset=text.offset * 8) if n else (
        np.zeros(1, np.int64))  # fmt: skip
    data = text.buffers()[2]
    with open(folder / "texts.bin", "wb") as fh:
        fh.write(memoryview(data)[int(offsets[0]) : int(offsets[-1])] if data is not None and n else b"")
    np.save(folder / "text_offsets.npy", offsets - offsets[0])
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    np.save(folder / "vectors.npy", vectors)
    np.save(folder / "p_indptr.npy", postings.indptr)
    np.save(folder / "p_docs.npy", postings.docs)
    np.save(folder / "p_tf.npy", postings.tf)
    np.save(folder / "dl.npy", postings.dl)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    stats: dict[str, Any] = {"rows": n, "dim": int(vectors.shape[1]) if vectors.ndim == 2 else 0,
                             "sum_dl": int(postings.dl.sum()), "code_scale": None}  # fmt: skip
    if n >= QUANT_ROWS:
        codes, stats["code_scale"] = quantize(vectors)
        np.save(folder / "codes.npy", codes)
    (folder / "stats.json").write_text(json.dumps(stats), encoding="utf-8")
    for path in folder.iterdir():  # durable before the version that names it is committed
        with open(path, "rb") as fh:
            os.fsync(fh.fileno())


@dataclass
class Segment:
    name: str
    folder: Path
    rows: int
    meta: pa.Table  # every Doc field but the text
    vectors: np.ndarray  # memory-mapped float32 (rows, dim)
    postings: Postings  # memory-mapped
    vocab: dict[str, int]
    sum_dl: int
    codes: np.ndarray | None = None  # memory-mapped int8, large segments only
    code_scale: float = 1.0
    dates: np.ndarray = field(default_factory=lambda: np.zeros(0))
    text_offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))  # memory-mapped
    text_data: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))  # memory-mapped UTF-8

    def doc_rows(self, rows: np.ndarray | list[int]) -> list[Doc]:
        """Documents without their text (which stays in Parquet until a hit needs it)."""
        return table_docs(self.meta.take(pa.array(np.asarray(rows, dtype=np.int64))), with_text=False)

    def texts(self, rows: list[int]) -> list[str]:
        """The texts of these rows, read from the segment's text file (memory-mapped: only their pages)."""
        off = self.text_offsets
        return [bytes(self.text_data[int(off[r]) : int(off[r + 1])]).decode("utf-8") for r in rows]

    def full_table(self) -> pa.Table:
        """Every row with its text (merges and tests, not the query path)."""
        meta = pq.read_table(self.folder / "docs.parquet", memory_map=True)
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
        """The (at most) `c` live rows closest to `qv` and their exact cosines: a float32 scan, or for a large
        segment an int8 scan of RERANK·c rows rescored in float32."""
        if self.rows == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        if self.codes is None:
            cos = self.vectors @ qv
            if alive is not None:
                cos = np.where(alive, cos, -np.inf)
            top = np.argpartition(-cos, c - 1)[:c] if c < self.rows else np.arange(self.rows)
            top = top[np.isfinite(cos[top])]
            return top.astype(np.int64), cos[top].astype(np.float32)
        import numkong  # SIMD int8 kernels (VNNI/AMX where the CPU has them)

        q = np.clip(np.rint(qv * self.code_scale), -127, 127).astype(np.int8)
        dots = np.asarray(numkong.cdist(q[None, :], self.codes, metric="dot", threads=2, out_dtype="float32"))[0]
        if alive is not None:
            dots[~alive] = -np.inf
        want = min(self.rows - n_dead, RERANK * c)
        if want <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        rows = np.sort(np.argpartition(-dots, want - 1)[:want]) if want < self.rows else np.flatnonzero(dots > -np.inf)
        cos = np.asarray(self.vectors[rows] @ qv, dtype=np.float32)  # rescored exactly: only these rows' pages
        keep = np.argsort(-cos, kind="stable")[:c]
        return rows[keep], cos[keep]

    def cosine_of(self, rows: np.ndarray, qv: np.ndarray) -> np.ndarray:
        if len(rows) == 0:
            return np.zeros(0, np.float32)
        order = np.argsort(rows)
        out = np.empty(len(rows), np.float32)
        out[order] = self.vectors[rows[order]] @ qv
        return out


def load_segment(folder: Path, dim: int | None) -> Segment:
    try:
        stats = json.loads((folder / "stats.json").read_text(encoding="utf-8"))
        meta = pq.read_table(folder / "docs.parquet", columns=META_FIELDS, memory_map=True)
        vectors = np.load(folder / "vectors.npy", mmap_mode="r")
        postings = Postings(
            np.load(folder / "p_indptr.npy", mmap_mode="r"),
            np.load(folder / "p_docs.npy", mmap_mode="r"),
            np.load(folder / "p_tf.npy", mmap_mode="r"),
            np.load(folder / "dl.npy"),
        )
        vocab_list = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
        codes = np.load(folder / "codes.npy", mmap_mode="r") if stats.get("code_scale") else None
        text_offsets = np.load(folder / "text_offsets.npy", mmap_mode="r")
        size = (folder / "texts.bin").stat().st_size
        text_data = np.memmap(folder / "texts.bin", dtype=np.uint8, mode="r") if size else np.zeros(0, np.uint8)
    except (OSError, ValueError, KeyError) as exc:
        raise SegmentDamaged(f"segment {folder.name} is unreadable ({exc})") from exc
    rows = int(stats["rows"])
    shape = tuple(vectors.shape)
    if meta.num_rows != rows or len(shape) != 2 or shape[0] != rows or (rows and dim and shape[1] != dim):
        raise SegmentDamaged(
            f"segment {folder.name} is damaged (vectors.npy has shape {shape}; expected {rows} rows of dimension "
            f"{dim})"
        )
    if len(postings.dl) != rows or len(postings.indptr) != len(vocab_list) + 1:
        raise SegmentDamaged(f"segment {folder.name} is damaged (postings do not fit its {rows} documents)")
    if len(text_offsets) != rows + 1 or int(text_offsets[-1]) != len(text_data):
        raise SegmentDamaged(f"segment {folder.name} is damaged (its text file does not fit its offsets)")
    if codes is not None and tuple(codes.shape) != shape:
        raise SegmentDamaged(f"segment {folder.name} is damaged (codes.npy has shape {tuple(codes.shape)})")
    return Segment(
        name=folder.name,
        folder=folder,
        rows=rows,
        meta=meta,
        vectors=vectors,
        postings=postings,
        vocab={w: i for i, w in enumerate(vocab_list)},
        sum_dl=int(stats["sum_dl"]),
        codes=codes,
        code_scale=float(stats.get("code_scale") or 1.0),
        dates=np.asarray(meta.column("date").to_numpy(), dtype=np.float64),
        text_offsets=text_offsets,
        text_data=text_data,
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
