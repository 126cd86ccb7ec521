"""`search(query, k)`: hybrid BM25 + vector over the index, plus the fresh-write delta scanned directly, live
archive state from the store, an abstention floor, and a plain keyword fallback when the index is gone."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from operator import attrgetter
from pathlib import Path

import duckdb
import numpy as np

from memory_pipeline.search.confidence import combined_on, gate_hits
from memory_pipeline.search.current import READ_TIME_WINDOW, current_first
from memory_pipeline.search.documents import Doc
from memory_pipeline.search.fallback import search_plain
from memory_pipeline.search.focus import TOP_HITS, content_words, focus_open
from memory_pipeline.search.hits import NOTHING as NOTHING
from memory_pipeline.search.hits import Filters, Hit, Hits, make_hit
from memory_pipeline.search.index import Encode, LoadedIndex, tokenize
from memory_pipeline.search.live import (
    DELTA_EMBED_LIMIT as DELTA_EMBED_LIMIT,
)
from memory_pipeline.search.live import (
    Fresh,
    ReadView,
    StoreView,
    background_vectors,
    delta_docs,
    delta_vectors,
    index_for,
    query_vector,
    reading_store,
    store_view,
    update_seconds,
)
from memory_pipeline.search.live import (
    clear_cache as clear_cache,
)
from memory_pipeline.search.live import (
    default_embedder as default_embedder,
)
from memory_pipeline.search.relevance import floor_scale as scale_of_floor
from memory_pipeline.search.scoring import (
    Ranking,
    age_days,
    bm25_ceiling,
    bm25_one,
    idf_share,
    importance_factor,
    linear,
    load_ranking,
    recency,
    reference_boost,
    rrf,
    vector_query,
)
from memory_pipeline.search.tokens import tokenize_one
from memory_pipeline.settings import SettingsError, parse_as_of

KINDS_ALIAS = {"memory": "any store row that is not a summary"}
_STATE = attrgetter("lifecycle", "importance", "archived_by", "usage")  # a document's state, as the live view holds it
TIERS = ("active", "archived", "knowledge", "working", "episodic", "semantic", "archive", "raw")


class SearchInputError(ValueError):
    """Bad input to search: the message is one line saying what to change."""


# ------------------------------------------------------------------ validation


CURRENT_WINDOW = 10  # hits ordered by validity before a smaller k is cut


def validate(query: object, k: object, r: Ranking) -> str:
    if not isinstance(query, str) or not query.strip():
        raise SearchInputError("empty query: give some words to search for")
    if len(query) > r.max_query_chars:
        raise SearchInputError(f"query too long: {len(query):,} characters (at most {r.max_query_chars:,})")
    if isinstance(k, bool) or not isinstance(k, int):
        raise SearchInputError(f"k must be a whole number, got {k!r}")
    if k <= 0 or k > r.max_k:
        raise SearchInputError(f"k must be between 1 and {r.max_k}, got {k}")
    return query.strip()


def _check_choice(value: str | None, known: set[str], what: str) -> None:
    if value is not None and value not in known:
        listed = ", ".join(sorted(known)[:30]) + (" …" if len(known) > 30 else "")
        raise SearchInputError(f"unknown {what} {value!r} (known: {listed})")


def _timestamp(value: str | datetime | None, what: str) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        dt = value
    else:
        try:
            dt = datetime.fromisoformat(str(value))
        except ValueError:
            raise SearchInputError(f"{what}: not an ISO date or time: {value!r}") from None
    return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()


# ------------------------------------------------------------------ search


def search(
    query: str,
    k: int = 10,
    *,
    home: Path | str | None = None,
    category: str | None = None,
    kind: str | None = None,
    tier: str | None = None,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    with_sources: bool = False,
    fusion: str | None = None,
    floor: float | None = None,
    embedder: tuple[Encode, str] | None = None,
    now: datetime | None = None,
    ranking: Ranking | None = None,
    as_of: str | datetime | None = None,
    view: ReadView | None = None,
    least: float = 0.0,
) -> Hits:
    """The best `k` hits for `query`, or none ("nothing relevant") when no document clears the floor. A value a
    later memory replaced ranks after what holds now and is marked (`superseded_by`, `valid_until`); `as_of`
    answers with what was known and held then (nothing dated after it). `view`: read that state of the index and
    the store instead of the live one (search/overlay.py; nothing is embedded into or written to the workspace).
    `least` > 0: only hits of at least that relevance, the first `k` of them among the candidates (the context
    compiler reading far down the order); `Hits.outside` bounds the relevance of what was not a candidate, so a
    caller widens `k` only while a wider search could find more."""
    r = (ranking or load_ranking()).with_(fusion=fusion, floor=floor)
    query = validate(query, k, r)
    if r.fusion not in ("rrf", "linear"):
        raise SearchInputError(f"unknown fusion {r.fusion!r} (known: linear, rrf)")
    if home is None:
        from memory_pipeline.settings import workspace_home

        home = workspace_home()
    home = Path(home)
    if not home.is_dir():
        raise SearchInputError(
            f"workspace {home} does not exist: run `memory-pipeline demo` or set MEMORY_PIPELINE_HOME"
        )
    _check_choice(tier, set(TIERS), "tier")
    try:
        at = parse_as_of(as_of)
    except SettingsError as exc:
        raise SearchInputError(str(exc)) from None
    then, last = (at.replace(tzinfo=UTC).timestamp() if at else None), _timestamp(until, "until")
    start = _timestamp(since, "since")
    if start is not None and last is not None and start > last:
        raise SearchInputError(f"since {since} is after until {until}: no date is in that range (swap them, or "
                               "drop one)")  # fmt: skip
    last = then if last is None else min(last, then if then is not None else last)
    filters = Filters(category, kind, tier, start, last)
    now_ts = (now or datetime.now(UTC)).timestamp()
    encode, model = embedder or default_embedder()
    idx, notice, fresh = (view.index, "", view.fresh) if view is not None else index_for(home, encode, model)
    # the current value of a fact can rank just below its older ones: a small k is cut after they are ordered
    wide = max(k, CURRENT_WINDOW)
    if idx is None:
        plain = search_plain(home, query, wide, filters, _check_choice, r, now_ts, notice)
        out = current_first(plain, home, at)
        out.outside = 0.0 if len(plain) < wide else float("inf")  # fewer than asked: nothing more cleared the floor
        return _first(out, k)
    fresh = fresh or Fresh(store_view(home, idx))
    hits = _search_index(home, idx, fresh, query, wide, filters, with_sources, r, encode, model, now_ts, view, least)
    if notice:
        hits.notice = f"{notice}; {hits.notice}" if hits.notice else notice
    first = {id(h) for h in _clearing(hits, least)[:k]} if least > 0 else set()
    out = current_first(hits, home, at)
    out.outside = hits.outside
    if least > 0:
        out[:] = _first_clearing(out, least, k, first)
    return _first(out, k)


def _clearing(hits: Sequence[Hit], least: float) -> list[Hit]:
    return [h for h in hits if h.parts.get("relevance", 0.0) >= least]


def _first_clearing(ordered: Hits, least: float, k: int, first: set[int]) -> list[Hit]:
    """The first `k` of `ordered` (what holds now first) that clear `least` — with the values replaced since
    that were among the first `k` to clear it in search's order, and what replaced them: moved after every hit
    that clears it, they would fall out, and a question about a past period needs them."""
    clearing = _clearing(ordered, least)
    replaced = [h for h in clearing if h.superseded_by and id(h) in first]
    by = {h.superseded_by for h in replaced}
    current = [h for h in clearing if not h.superseded_by]
    current = sorted(current, key=lambda h: h.id not in by)[: max(k - len(replaced), 0)]  # stable: successors first
    keep = {id(h) for h in current + replaced}
    return [h for h in clearing if id(h) in keep]


def _first(hits: Hits, k: int) -> Hits:
    del hits[k:]
    return hits


def _known(idx: LoadedIndex, delta: Sequence[Doc]) -> tuple[set[str], set[str]]:
    cats = set(idx.manifest.get("categories") or ())
    kinds = set(idx.manifest.get("kinds") or ()) | {"memory"}
    return cats | {c for d in delta for c in d.categories}, kinds | {d.kind for d in delta}


def _search_index(
    home: Path,
    idx: LoadedIndex,
    fresh: Fresh,
    query: str,
    k: int,
    filters: Filters,
    with_sources: bool,
    r: Ranking,
    encode: Encode,
    model: str,
    now_ts: float,
    fixed: ReadView | None = None,
    least: float = 0.0,
) -> Hits:
    view = fresh.view
    delta, stale, notice = fresh.delta or delta_docs(home, idx, view)
    cats, kinds = _known(idx, delta)
    _check_choice(filters.category, cats, "category")
    _check_choice(filters.kind, kinds, "kind")
    q_tokens = [t for t in dict.fromkeys(tokenize([query])[0]) if t]
    t_embed = time.perf_counter()
    # two query vectors when common names leave the one that ranks: the whole query's decides relevance (the
    # abstention floor was calibrated on it), the other the order
    texts = list(dict.fromkeys([query, vector_query(query, _share_in(idx), r.vector_query_common)]))
    qm = np.vstack([query_vector(encode, model, t) for t in texts])
    qv, whole = qm[-1], qm[0]
    embed_ms = (time.perf_counter() - t_embed) * 1000
    # candidates: the best by either signal (and by the whole query's vector, whose relevance the floors read);
    # 2k per signal for a large k (context's P3 asks for ~250 at 8k tokens): 5k cost it 3× in Python per
    # candidate, and LoCoMo's read path is the same to the third decimal at 2k
    c = max(r.candidates, 2 * k)
    keys, bm_raw, cos_raw, idf, (bm_out, cos_out) = idx.candidates(q_tokens, list(qm), c)
    delta_tokens = tokenize([d.text for d in delta]) if delta else []
    n_all = idx.n_live + len(delta)
    for t in q_tokens:  # a word first written since the build: its idf from the delta alone
        df = sum(1 for tok in delta_tokens if t in tok) if t not in idf else 0
        if df:
            idf[t] = float(np.log(1.0 + (n_all - df + 0.5) / (df + 0.5)))
    ceiling = bm25_ceiling(list(idf.values()))
    floor_scale = scale_of_floor(idx, q_tokens, idf, n_all, r)  # the floor's share of BM25
    outside = float(linear(np.array([bm_out / ceiling * floor_scale]), np.array([cos_out[0]]), r)[0])
    content = content_words(query) if r.focus_gate or combined_on(r.combined_gate) else set()
    shares = {t: idf_share(idf[t], n_all) if t in idf else 0.0 for t in q_tokens if t in content}
    delta_keys = {d.key for d in delta}
    lists = filters.category is not None  # else categories and lineage are read for the hits only
    found = idx.docs_at(keys, lists)
    # the candidates the delta does not replace, their parts taken from the arrays at once (not per candidate)
    kept = ([i for i, d in enumerate(found) if d.key not in delta_keys and (d.source != "file" or d.path not in stale)]
            if delta_keys or stale else list(range(len(found))))  # fmt: skip
    at = np.asarray(kept, dtype=np.int64)
    docs: list[Doc] = [found[i] for i in kept]
    where = {j: keys[i] for j, i in enumerate(kept)}  # position in `docs` → (segment, row): text read for hits
    parts_bm: list[float] = (bm_raw[at] / ceiling).tolist()
    parts_cos: list[float] = cos_raw[at, -1].tolist()
    parts_whole: list[float] = cos_raw[at, 0].tolist()
    if fixed is not None:
        dv = fixed.delta_vectors(delta, len(qv))
    else:
        deadline = fresh.deadline if fresh.deadline is not None else time.monotonic() + update_seconds()
        dv, _ = delta_vectors(home, delta, encode, model, deadline, len(qv))
    if delta:
        # the mean length over every live document, the delta's included: with an empty or small index (a
        # server warmed before the agent's first writes) the index's own mean would crush the delta's BM25
        avgdl = (idx.avgdl * idx.n_live + sum(len(t) for t in delta_tokens)) / max(n_all, 1)
        for d, tok, v in zip(delta, delta_tokens, dv, strict=True):
            docs.append(d)
            parts_bm.append(bm25_one(tok, idf, avgdl) / ceiling)
            parts_cos.append(float(v @ qv))
            parts_whole.append(float(v @ whole))

    def hub(positions: list[int]) -> np.ndarray:
        """Each document's highest cosine to the background questions (how close it sits to any question)."""
        bg = background_vectors(encode, model).T
        out = np.zeros(len(positions))
        by_segment: dict[int, list[int]] = {}
        for i, p in enumerate(positions):
            if p in where:
                by_segment.setdefault(where[p][0], []).append(i)
            else:  # the delta follows the index's documents
                out[i] = float((dv[p - len(where)] @ bg).max())
        for s, at in by_segment.items():
            rows = np.array([where[positions[i]][1] for i in at], np.int64)
            out[at] = idx.segments[s].cosine_of(rows, bg).max(axis=1)
        return out

    def fill(positions: list[int]) -> None:
        wanted = [p for p in positions if p in where and not docs[p].text]
        places = [where[p] for p in wanted]
        for p, text, (cats, sources) in zip(wanted, idx.texts_at(places), idx.lists_at(places), strict=True):
            docs[p].text = text
            docs[p].categories, docs[p].source_ids = cats, sources

    return _rank(
        home,
        view,
        idx,
        docs,
        np.array(parts_bm),
        (np.array(parts_cos), np.array(parts_whole)),
        query,
        k,
        filters,
        with_sources,
        r,
        now_ts,
        notice,
        embed_ms,
        fill,
        floor_scale,
        hub,
        shares,
        least,
        outside,
    )


def _share_in(idx: LoadedIndex) -> Callable[[str], float]:
    """A word's share of the indexed documents (0 when it is a stop word or not indexed)."""

    def share(word: str) -> float:
        tokens = tokenize([word])[0]
        idf = idx.idf_of(tokens[0]) if tokens else None
        return idf_share(idf, idx.n_live) if idf is not None else 0.0

    return share


def _rank(
    home: Path,
    view: StoreView,
    idx: LoadedIndex,
    docs: list[Doc],
    bm: np.ndarray,
    cosines: tuple[np.ndarray, np.ndarray],
    query: str,
    k: int,
    filters: Filters,
    with_sources: bool,
    r: Ranking,
    now_ts: float,
    notice: str,
    embed_ms: float,
    fill: Callable[[list[int]], None] | None = None,
    floor_scale: float = 1.0,
    hub: Callable[[list[int]], np.ndarray] | None = None,
    shares: dict[str, float] | None = None,
    least: float = 0.0,
    outside: float = float("inf"),
) -> Hits:
    live = view.overrides
    # each candidate's state: the store's where it changed since the build, else its own (read in one pass)
    states = [live.get(d.key) or _STATE(d) for d in docs] if live else list(map(_STATE, docs))
    columns = list(zip(*states, strict=True)) or [(), (), (), ()]
    lifecycles: list[str] = list(columns[0])
    archived_by: list[str] = list(columns[2])
    imp = np.array(columns[1], dtype=np.float64)
    use = np.array(columns[3], dtype=np.float64)
    unfiltered = filters == Filters()  # then only the lifecycle decides (no call per candidate)
    keep = [i for i, (d, lc) in enumerate(zip(docs, lifecycles, strict=True))
            if lc in ("active", "archived") and (unfiltered or filters.keep(d, lc))]  # fmt: skip
    if not keep:
        return Hits([], notice or NOTHING)
    sel = np.array(keep)
    bm_s, cos_s = bm[sel], cosines[0][sel]
    relevance = linear(bm_s * floor_scale, cosines[1][sel], r)  # the whole query's, as the floor was calibrated

    gate_r = r.with_(bm25_weight=r.gate_bm25_weight)

    def specific(js: Sequence[int]) -> np.ndarray:
        """Relevance less each memory's likeness to any question: a hub (a short everyday note) is near every
        question, so its cosine says little about this one."""
        at = np.asarray(js, dtype=np.int64)
        b = hub([keep[j] for j in at]) if hub is not None else np.zeros(len(at))
        return linear(bm_s[at] * floor_scale, cosines[1][sel][at] - b, gate_r)

    dates = np.array([docs[i].date for i in keep])
    rec = recency(age_days(dates, now_ts), r)
    ref = reference_boost(use[sel], r)
    impf = importance_factor(imp[sel], r)
    modifier = rec * ref * impf
    # the modifiers act on each signal before fusion: for linear that is the seed's score × modifiers; for RRF
    # it lets them reorder each ranking without swamping relevance (RRF's scores are too flat to multiply)
    base = rrf(bm_s * modifier, cos_s * modifier, r) if r.fusion == "rrf" else linear(bm_s, cos_s, r) * modifier
    final = base
    ok = relevance >= r.floor
    if not ok.any() or (r.background_gate > 0 and not _gate_open(relevance, ok, specific, r.background_gate)):
        return Hits([], notice or NOTHING)
    by_final = np.argsort(-final, kind="stable")
    order: list[int] = by_final[ok[by_final]].tolist()
    built = order[:k]
    if least > 0:  # the top the read-time rules read, then only what the caller keeps: a hit costs more than a score
        qualifies = np.round(relevance, 4) >= least
        built = order[:READ_TIME_WINDOW] + [j for j in order[READ_TIME_WINDOW:] if qualifies[j]]
    gated = dict(zip(built, specific(built).tolist(), strict=True)) if r.background_gate > 0 else {}
    if fill is not None:
        fill([keep[j] for j in dict.fromkeys(built + (order[:TOP_HITS] if r.focus_gate else []))])
    if r.focus_gate and shares is not None:
        top = order[:TOP_HITS]
        values = specific(top).tolist() if r.background_gate > 0 else [0.0] * len(top)
        words = [frozenset(tokenize_one(docs[keep[j]].text)) for j in top]
        if not focus_open(shares, zip(values, words, strict=True), r.focus_gate, r.focus_share, r.focus_rescue):
            return Hits([], notice or NOTHING)
    hits: list[Hit] = []
    for j in built:
        i = keep[j]
        d = docs[i]
        parts = {
            "bm25": round(float(bm_s[j]), 4),
            "vector": round(float(cos_s[j]), 4),
            "relevance": round(float(relevance[j]), 4),
            **({"specific": round(gated[j], 4)} if gated else {}),
            "fused": round(float(base[j]), 4),
            "recency": round(float(rec[j]), 4),
            "reference": round(float(ref[j]), 4),
            "importance": round(float(impf[j]), 4),
        }
        hits.append(make_hit(d, query, float(final[j]), parts, r, lifecycles[i], archived_by[i]))
    if r.abstractions_first:
        hits = abstractions_first(hits)
    if with_sources:
        _expand_sources(hits, idx, home, view, query, r)
    out = gate_hits(hits, shares or {}, now_ts, notice, NOTHING) if combined_on(r.combined_gate) else Hits(hits, notice)
    out.embed_ms = embed_ms  # type: ignore[attr-defined]
    out.outside = outside
    return out


def _gate_open(relevance: np.ndarray, ok: np.ndarray, specific: Callable[[Sequence[int]], np.ndarray],
               gate: float) -> bool:
    """Whether a hit over the floor reaches the gate, read in relevance order a few hits at a time (the first
    few settle an answerable query; only one that abstains reads them all)."""
    by_relevance = np.flatnonzero(ok)[np.argsort(-relevance[ok], kind="stable")].tolist()
    return any((specific(by_relevance[i : i + 16]) >= gate).any() for i in range(0, len(by_relevance), 16))


def abstractions_first(hits: list[Hit]) -> list[Hit]:
    """Seed 000 §9.2: an archived source never ranks above the abstraction that replaced it (the summary
    whose lineage lists it: `archived_by` names the cluster, not the summary)."""
    out = list(hits)
    changed = True
    while changed:
        changed = False
        where = {m: i for i, h in enumerate(out) for m in h.members}
        for i, h in enumerate(out):
            j = where.get(h.id) if h.lifecycle == "archived" else None
            if j is not None and j > i:
                out.insert(j, out.pop(i))  # move the source just below its abstraction
                changed = True
                break
    return out


def _expand_sources(hits: list[Hit], idx: LoadedIndex, home: Path, view: StoreView, query: str, r: Ranking) -> None:
    """`--with-sources`: each summary hit gets its sources through lineage (compressed_from / summary_of)."""
    known = {d.key: d for d in view.delta}
    store_hits = [h for h in hits if h.source == "store"]
    located = idx.locate([h.id for h in store_hits if h.id not in known])
    lineage = dict(zip(located, idx.docs_at(list(located.values())), strict=True))
    lineage.update({h.id: known[h.id] for h in store_hits if h.id in known})
    for h in store_hits:
        doc = lineage.get(h.id)
        sources = doc.source_ids if doc is not None else []
        if not sources:
            continue
        found = {s: known[s] for s in sources if s in known}
        where = idx.locate([s for s in sources if s not in found])
        for (key, _loc), d, text in zip(where.items(), idx.docs_at(list(where.values())),
                                       idx.texts_at(list(where.values())), strict=True):  # fmt: skip
            d.text = text
            found[key] = d
        missing = [s for s in sources if s not in found]
        if missing:
            with reading_store(home) as con:
                if con is not None:
                    found.update({d.key: d for d in store_docs_by_id(con, missing)})
        for s in sources:
            src = found.get(s)
            if src is not None:
                lc, _imp, by, _use = view.overrides.get(s, (src.lifecycle, src.importance, src.archived_by, src.usage))
                h.sources.append(make_hit(src, query, 0.0, {}, r, lc, by))


def store_docs_by_id(con: duckdb.DuckDBPyConnection, ids: list[str]) -> list[Doc]:
    from memory_pipeline.search.documents import _STORE_COLUMNS, _row_doc

    rows = con.execute(
        f"SELECT {_STORE_COLUMNS} FROM memories WHERE id IN (SELECT unnest(?::VARCHAR[]))", [ids]
    ).fetchall()
    return [_row_doc(row) for row in rows]
