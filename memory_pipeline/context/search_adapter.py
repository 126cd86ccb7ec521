"""P3's source: the hybrid search as the compiler's `Search`, and its usage spool as `RecordUsage`.

Search's calibrated floor decides what is relevant: nothing below it enters P3 (a search again with
floor 0 filled the budget with unrelated memories for questions about things never stored), so an unfilled
budget stays unfilled. The read path (`ReadPath`) adds whole items, a summary dated by its members, the turns
beside a hit, and a time expression's period read first. Inclusions go to the usage spool in the background
(never blocking a turn, never contending with the nightly writer)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_pipeline.context.compiler import Knowledge, Search
from memory_pipeline.context.read_path import ReadPath
from memory_pipeline.context.service import RecordUsage
from memory_pipeline.context.timeframe import resolve
from memory_pipeline.search import (
    WEAK,
    Hit,
    Hits,
    Ranking,
    SearchInputError,
    current_first,
    load_ranking,
    reading_store,
    search,
    store_stamp,
    usage_spool,
    weak_line,
)

if TYPE_CHECKING:
    from memory_pipeline.search import ReadView


def default_search(
    home: Path,
    embedder: object | None = None,
    floor: float | None = None,
    *,
    ranking: Ranking | None = None,
    read: ReadPath | None = None,
    today: date | None = None,
    as_of: datetime | None = None,
    view: ReadView | None = None,
) -> Search:
    """`floor`: search's abstention floor (None: its calibrated default); `read`: the read path (None: the
    shipped one); `today`: the day time expressions are read against (None: today, UTC); `as_of`: read what was
    known and held then (None: now; a message that names a time reads which values held then); `view`: search
    reads that fixed state of the index and store (`search.read_view`, `search.with_rows`), not the live one."""
    path = read or ReadPath.load()
    if not path.abstractions_first:
        ranking = (ranking or load_ranking()).with_(abstractions_first=False)

    def find(query: str, k: int, since: str | None = None, until: str | None = None, at: float | None = None,
             least: float = 0.0) -> Any:  # fmt: skip
        return search(query[:4096], k, home=home, embedder=embedder, floor=at if at is not None else floor,  # type: ignore[arg-type]
                      ranking=ranking, since=since, until=until, as_of=as_of, view=view, least=least)  # fmt: skip

    most = (ranking or load_ranking()).max_k

    def ranked(query: str, k: int) -> list[Hit]:
        found = find(query, k)
        if getattr(found, "match", "") == WEAK:
            return found  # the nearest hit alone, marked: read no further
        hits = list(found)
        if hits and len(hits) < k and floor != 0.0 and (path.below_floor or path.item_floor > 0):
            # the top hit cleared the floor: something relevant is stored; read on down to the item floor
            # (below_floor: every item, the read path before, kept for its ablation row)
            top = max(h.parts.get("relevance", 0.0) for h in hits)
            least = 0.0 if path.below_floor else path.item_floor * top
            hits = _down_to(query, k, least, find, most)
        if path.time_aware and hits:
            hits = _period_first(query, k, hits, find, today or datetime.now(UTC).date())
        if as_of is None and hits and (period := resolve(query, today or datetime.now(UTC).date())) is not None:
            then = datetime.combine(period[1], time.max)  # which values held at the end of the period named
            hits = current_first(Hits(hits), home, then, drop_later=False)
        return hits

    def run(query: str, k: int) -> list[Knowledge]:
        try:
            hits = ranked(query, k)
            if getattr(hits, "match", "") == WEAK and hits:
                # nothing stored matches closely: one marked line with the nearest memory, not knowledge to pack
                return [replace(_knowledge(hits[0], False), text=weak_line(hits[0].text or hits[0].snippet))]
            if path.covered_sources:
                # k hits still, when some are left out: the compiler reads fewer than k as "nothing more"
                window = k
                while len(kept := uncovered(hits)) < k and len(hits) >= window and window < most:
                    window = min(window + k - len(kept), most)
                    hits = ranked(query, window)
                hits = kept[:k]
        except SearchInputError:
            return []
        items = [_knowledge(h, path.whole_items) for h in hits]
        if path.whole_items or path.neighbours:
            items = _from_store(home, items, path.neighbours, path.neighbours_max_chars)
        return items

    return run


def uncovered(hits: list[Hit]) -> list[Hit]:
    """The hits without an archived memory whose summary ranks above it: the summary carries its facts, and
    the source would spend the budget saying them again."""
    covered: set[str] = set()
    out = []
    for h in hits:
        if not (h.lifecycle == "archived" and h.id in covered):
            out.append(h)
        covered.update(h.members)
    return out


def _down_to(query: str, k: int, least: float, find: Any, most: int) -> list[Hit]:
    """The first `k` hits in search's order whose relevance is at least `least`, reading further down the
    order while fewer qualify (the order need not follow relevance: modifiers, or a vector without common
    names, reorder it), so `k` short means nothing more qualifies. Search keeps only the hits that qualify among
    its candidates (a hit costs more than a score) and says how relevant a document it did not score can be: the
    candidates widen only while one could qualify."""
    window = k
    while True:
        found = find(query, window, at=0.0, least=least)
        kept = [h for h in found if h.parts.get("relevance", 0.0) >= least]
        if len(kept) >= k or getattr(found, "outside", float("inf")) < least or window >= most:
            return kept[:k]
        window = min(window * 4, most)


def _period_first(query: str, k: int, hits: list[Hit], find: Any, today: date) -> list[Hit]:
    """The hits dated in the period a time expression names come first (time-aware reading)."""
    period = resolve(query, today)
    if period is None:
        return hits
    start = datetime.combine(period[0], time.min, UTC).isoformat()
    end = (datetime.combine(period[1], time.min, UTC) + timedelta(days=1)).isoformat()
    inside = list(find(query, k, since=start, until=end))
    ids = {h.id for h in inside}
    return inside + [h for h in hits if h.id not in ids]


def _knowledge(h: Hit, whole: bool) -> Knowledge:
    """A hit as P3 reads it; a value a later one replaced says so in its date ("2026-09-14, no longer holds
    since 2026-10-20"), so the agent never takes it for the present."""
    dated = h.date or None
    if h.superseded_by:
        dated = f"{h.date or '?'}, no longer holds since {h.valid_until[:10]}"
    return Knowledge(
        text=(h.text or h.snippet) if whole else h.snippet,
        score=h.score,
        kind=h.kind,
        memory_id=h.id if h.source == "store" else None,
        path=None if h.source == "store" else h.id,
        date=dated,
    )


def _from_store(home: Path, items: list[Knowledge], neighbours: int, max_chars: int = 0) -> list[Knowledge]:
    """Summaries dated by their members' range; each memory hit (each of at most `max_chars` characters, when
    set) followed by the `neighbours` turns either side of it in its session (one short read-only query; the
    hits alone when the store is busy). A summary's range is read once per change of the store."""
    summaries = [k.memory_id for k in items if k.memory_id and k.kind == "summary"]
    short = [k.memory_id for k in items if k.memory_id and wants_neighbours(k.text, max_chars)] if neighbours else []
    if not summaries and not short:
        return items  # the hits carry their whole text: the store is read only for lineage and neighbours
    stamp = tuple(store_stamp(home))
    known = _SPANS.get(str(home))
    if known is None or known[0] != stamp:
        known = _SPANS[str(home)] = (stamp, {})
    unread = [sid for sid in summaries if sid not in known[1]]
    beside: dict[str, tuple[list[tuple[str, str, str, str]], ...]] = {}
    if unread or short:
        with reading_store(home) as con:
            if con is None:
                return items
            read = _member_spans(con, unread)
            known[1].update({sid: read.get(sid, "") for sid in unread})  # "" : no member dated
            beside = _neighbours(con, short, neighbours) if short else {}
    spans = {sid: known[1][sid] for sid in summaries if known[1].get(sid)}
    out: list[Knowledge] = []
    for k in items:
        if k.memory_id in spans:
            k = Knowledge(k.text, k.score, k.kind, k.memory_id, k.path, spans[k.memory_id])
        before, after = beside.get(k.memory_id or "", ([], []))
        out += [Knowledge(t, k.score, kind, mid, None, d) for mid, t, kind, d in before]
        out.append(k)
        out += [Knowledge(t, k.score, kind, mid, None, d) for mid, t, kind, d in after]
    return out


_SPANS: dict[str, tuple[tuple[int, ...], dict[str, str]]] = {}  # per workspace: its store's stamp, summary → span


def wants_neighbours(text: str, max_chars: int) -> bool:
    """Whether a hit is read with its neighbouring turns: every hit, or (`max_chars` > 0) only a short one,
    whose meaning tends to sit in the turn it answers."""
    return max_chars <= 0 or len(text) <= max_chars


def _member_spans(con: Any, summary_ids: list[str]) -> dict[str, str]:
    """A summary's date as its facts' dates: "first … last" of its members' creation days."""
    if not summary_ids:
        return {}
    rows = con.execute(
        "SELECT id, compressed_from FROM memories WHERE id IN (SELECT unnest(?::VARCHAR[]))", [summary_ids]
    ).fetchall()
    members: dict[str, list[str]] = {}
    for sid, lineage in rows:
        data = json.loads(lineage) if isinstance(lineage, str) else (lineage or {})
        members[str(sid)] = [str(s) for s in (data or {}).get("source_ids", [])]
    wanted = sorted({m for ms in members.values() for m in ms})
    if not wanted:
        return {}
    created = dict(con.execute(
        "SELECT id, created_at FROM memories WHERE id IN (SELECT unnest(?::VARCHAR[]))", [wanted]
    ).fetchall())  # fmt: skip
    spans = {}
    for sid, ms in members.items():
        days = sorted(created[m].date().isoformat() for m in ms if created.get(m) is not None)
        if days:
            spans[sid] = days[0] if days[0] == days[-1] else f"{days[0]} … {days[-1]}"
    return spans


def _neighbours(con: Any, ids: list[str], n: int) -> dict[str, tuple[list[tuple[str, str, str, str]], ...]]:
    """For each memory, the `n` active memories of its session just before and just after it."""
    rows = con.execute(
        """WITH h AS (SELECT id, session_id, created_at FROM memories
                      WHERE id IN (SELECT unnest(?::VARCHAR[])) AND session_id IS NOT NULL),
                s AS (SELECT m.session_id, m.id, m.content, m.kind, m.created_at,
                             row_number() OVER (PARTITION BY m.session_id ORDER BY m.created_at, m.id) AS pos
                      FROM memories m WHERE m.lifecycle = 'active' AND m.session_id IN (SELECT session_id FROM h))
           SELECT h.id, s.id, s.content, s.kind, s.created_at, s.pos - me.pos AS off
           FROM h JOIN s me ON me.id = h.id JOIN s ON s.session_id = h.session_id
           WHERE s.pos <> me.pos AND abs(s.pos - me.pos) <= ?
           ORDER BY h.id, off""",
        [ids, n],
    ).fetchall()
    out: dict[str, tuple[list[tuple[str, str, str, str]], ...]] = {}
    for hid, mid, content, kind, created, off in rows:
        before, after = out.setdefault(str(hid), ([], []))
        (before if off < 0 else after).append((str(mid), str(content), str(kind), created.date().isoformat()))
    return out


def usage_recorder(home: Path, background: bool = False) -> RecordUsage:
    """`background`: a server queues the batch and returns at once; a CLI process appends before it exits."""

    def record(memory_ids: Sequence[str]) -> None:
        if background:
            usage_spool.append_later(home, list(memory_ids))
        else:
            usage_spool.append_now(home, list(memory_ids))

    return record
