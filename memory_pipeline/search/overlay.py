"""A fixed state for search to read in place of the workspace's live one: a `ReadView` (search/live.py).

A view is an index, the store's changes since it was built (the fresh-write delta and the rows whose state
differs: search's `StoreView`) and a vector for every delta document. `read_view` takes the workspace as it is;
`with_rows` lays rows in another state over a view without writing them to the workspace — documents that become
readable (a night's summaries, still pending in the store) and rows whose state changes (its sources, archived) —
so a caller can read the store as a write would leave it before the write is made. The rows go into one more
segment, written under a scratch folder, and the rows they replace are marked deleted in memory: the index an
update would write, without its version, its fsyncs or a copy of anything it shares. Reading through a view
writes nothing to the workspace: no index is built or updated, no vector is kept on disk, the store is only read.
No Dagster here."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from memory_pipeline.search.build import _kinds, _same_text, store_vectors, vectors_for
from memory_pipeline.search.documents import _STORE_COLUMNS, Doc, _row_doc, docs_table
from memory_pipeline.search.index import Encode, IndexMissing, LoadedIndex, load_index
from memory_pipeline.search.live import (
    Fresh,
    ReadView,
    StoreView,
    default_embedder,
    delta_docs,
    reading_store,
    store_view,
)
from memory_pipeline.search.pending import embed_in_slices
from memory_pipeline.search.segment import load_segment, write_segment


class ViewUnavailable(RuntimeError):
    """The view cannot be taken (no index for the model, the store held by a writer); the message says which."""


def _vectors_of(home: Path, docs: Sequence[Doc], encode: Encode, model: str, dim: int) -> dict[str, np.ndarray]:
    """Unit vectors of `docs`: the store's own for this model (what an index update takes), the rest embedded
    here and kept in memory only."""
    out: dict[str, np.ndarray] = {}
    store = [d for d in docs if d.source == "store"]
    if store:
        with reading_store(home) as con:
            if con is None:
                raise ViewUnavailable(f"the store under {home} is held by a writer")
            found = store_vectors(con, model, [d.key for d in store], dim or None)
        out.update({store[i].fingerprint: v for i, v in found.items()})
    missing = {d.fingerprint: d.text for d in docs if d.fingerprint not in out}
    out.update(embed_in_slices(missing, encode, None))
    return out


def read_view(home: Path, embedder: tuple[Encode, str] | None = None) -> ReadView:
    """The workspace `home` as search reads it now (ViewUnavailable when it has no index for the model, or a
    writer holds its store)."""
    encode, model = embedder or default_embedder()
    try:
        idx = load_index(home)
    except IndexMissing as exc:
        raise ViewUnavailable(str(exc).splitlines()[0]) from None
    if idx.model != model:
        raise ViewUnavailable(f"the search index under {home} was built for {idx.model}, not {model}")
    view = store_view(home, idx)
    if view.busy:
        raise ViewUnavailable(f"the store under {home} is held by a writer")
    delta = delta_docs(home, idx, view)
    return ReadView(idx, Fresh(view, delta), model, _vectors_of(home, delta[0], encode, model, idx.dim))


def store_rows(home: Path, ids: Iterable[str]) -> list[Doc]:
    """The memories `ids` as search documents, whatever their lifecycle (a pending summary too)."""
    wanted = sorted(set(ids))
    if not wanted:
        return []
    with reading_store(home) as con:
        if con is None:
            raise ViewUnavailable(f"the store under {home} is held by a writer")
        rows = con.execute(
            f"SELECT {_STORE_COLUMNS} FROM memories WHERE id IN (SELECT unnest(?::VARCHAR[])) ORDER BY rowid",
            [wanted],
        ).fetchall()
    return [_row_doc(r) for r in rows]


def with_rows(base: ReadView, home: Path, folder: Path, rows: Sequence[Doc],
              embedder: tuple[Encode, str] | None = None) -> ReadView:  # fmt: skip
    """`base` with `rows` (store rows of the workspace `home` in the state to read them in) indexed in place of
    any live document of their keys, as an index update would leave it: one more segment, written into `folder`
    (new; the caller removes it), the rows it replaces marked deleted, the rest of the index shared. Each row's
    vector: its indexed one when its text is unchanged, else the store's own for the view's model, else embedded
    here (as an update takes them)."""
    if not rows:
        return base
    encode, _ = embedder or default_embedder()
    idx = base.index
    table = docs_table(list(rows))
    keys = [d.key for d in rows]
    replaced = idx.locate(keys)
    with reading_store(home) as con:
        if con is None:
            raise ViewUnavailable(f"the store under {home} is held by a writer")
        matrix, _, _ = vectors_for(table, con, encode, base.model, idx.dim or None, _same_text(idx, table, keys,
                                                                                               replaced))  # fmt: skip
    write_segment(folder, table, matrix)
    alive = list(idx.alive)
    dead = list(idx.dead)
    for s in {s for s, _ in replaced.values()}:
        mask = np.ones(idx.segments[s].rows, dtype=bool) if alive[s] is None else np.array(alive[s], dtype=bool)
        mask[[r for k, (s_, r) in replaced.items() if s_ == s]] = False
        alive[s], dead[s] = mask, int(np.count_nonzero(~mask))
    segment = load_segment(folder, idx.dim or None)
    segments = [*idx.segments, segment]
    alive.append(None)
    dead.append(0)
    n_live = sum(seg.rows - d for seg, d in zip(segments, dead, strict=True))
    sum_dl = sum(seg.sum_dl - (int(np.asarray(seg.postings.dl)[~a].sum()) if a is not None else 0)
                 for seg, a in zip(segments, alive, strict=True))  # fmt: skip
    cats = set(idx.manifest.get("categories") or ()) | {c for d in rows for c in d.categories}
    manifest = {**idx.manifest, "categories": sorted(cats),
                "kinds": sorted(set(idx.manifest.get("kinds") or ()) | _kinds(table))}  # fmt: skip
    index = LoadedIndex(folder, manifest, segments, alive, dead, n_live, (sum_dl / n_live) if n_live else 1.0)
    docs, stale, notice = base.fresh.delta or ([], set(), "")
    wanted = set(keys)
    delta = [d for d in docs if d.key not in wanted]
    overrides = {k: v for k, v in base.fresh.view.overrides.items() if k not in wanted}
    fresh = Fresh(StoreView(delta, overrides, base.fresh.view.busy), (delta, stale, notice), base.fresh.deadline)
    return replace(base, index=index, fresh=fresh)


def query_texts(view: ReadView, query: str) -> list[str]:
    """The texts search embeds for `query` reading `view` (the query, and the query as the embedder reads it when
    common names leave it: `scoring.vector_query`), so a caller can embed many queries' in one batch."""
    from memory_pipeline.search.engine import _share_in
    from memory_pipeline.search.scoring import load_ranking, vector_query

    query = query[:4096].strip()
    return list(dict.fromkeys([query, vector_query(query, _share_in(view.index), load_ranking().vector_query_common)]))
