"""What holds now, first: superseded values of a fact ranked below the current one and marked, and reading as of
a past moment (`as_of`). Validity comes from the store (a night's supersessions, `store.validity`); among the
hits themselves two statements of one fact with different values are told apart at read time too (the same rule
as the night's, `statements.values`), so a version the night has not seen yet still reads as the older one. A
memory holds from its date, or from the later start it states ("£1,250 a month from January",
`statements.starts`): until then it is not current, and the value it replaces holds until that start."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memory_pipeline.distillation.distill import VERSION_LINE
from memory_pipeline.search.documents import store_stamp
from memory_pipeline.search.hits import Hit, Hits
from memory_pipeline.search.live import reading_store
from memory_pipeline.statements import attributes, changes
from memory_pipeline.statements.starts import holds_from
from memory_pipeline.statements.values import FactKey, fact_key, restates_read, statement, versions_of
from memory_pipeline.store.validity import Validities, superseded, undone_pairs
from memory_pipeline.store.validity_events import mark_at, stated_at

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

Validity = tuple[datetime, datetime | None, str | None]
Pairs = frozenset[tuple[str, str]]  # (older, newer) memories that are not versions of one fact: an operator said so
READ_TIME_WINDOW = 100  # hits told apart as versions at read time (a context call may ask for 640)
NEWER_FIRST_WINDOW = 30  # hits reordered newer first: the top of the order, where the budget goes


def current_first(hits: Hits, home: Path, as_of: datetime | None = None, *, drop_later: bool = True) -> Hits:
    """`hits` with what no longer held (at `as_of`, or now) marked and moved after what did (in search's order),
    the most recently replaced first. A memory stated after `as_of` is left out (`drop_later`), or kept where it
    is unless it states a fact a hit that held then states too, or is a summary stating a fact's present: then
    it comes after what held then. A memory that does not hold yet (dated later than now, or said by then to
    start later: "£1,250 a month from January") supersedes none of them yet: one dated later comes after every
    memory that holds, one said to start later right after the value it will replace (else where it was)."""
    known, undone = _read(home) if any(h.source == "store" for h in hits) else (Validities({}, {}), frozenset())
    first = {h.id: datetime.fromtimestamp(h.stated, UTC).replace(tzinfo=None)
             for h in hits if h.source == "store" and h.stated}  # fmt: skip
    since = {h.id: holds_from(h.text or h.snippet, first[h.id]) for h in hits if h.id in first}
    if ahead := not_yet_valid(hits, first, since, as_of):
        rest = current_first(Hits([h for h in hits if h.id not in ahead], hits.notice, hits.mode), home, as_of,
                             drop_later=drop_later)  # fmt: skip
        out = Hits(list(rest), rest.notice, rest.mode)
        now = datetime.now(UTC).replace(tzinfo=None)
        for place, h in enumerate(hits):
            if h.id in ahead:
                h.superseded_by = h.valid_until = ""
                if as_of is None and first[h.id] > now:
                    out.append(h)  # dated later than now: after every memory that holds
                elif (old := _replaced(h, list(rest)[:READ_TIME_WINDOW], known)) is not None:
                    out.insert(out.index(old) + 1, h)  # the value that holds until its start first, then it
                else:  # states no fact a hit that holds states: where search put it
                    out.insert(min(place, len(out)), h)
        out.match, out.confidence = getattr(hits, "match", out.match), getattr(hits, "confidence", None)
        return out
    later = {h.id for h in hits if as_of and h.id in first and first[h.id] > as_of}
    rows = {mid: _validity(mid, t, known, as_of) for mid, t in first.items()}
    then = [h for h in hits if h.id not in later]
    at = as_of or datetime.now(UTC).replace(tzinfo=None)
    for h in hits:
        h.superseded_by = h.valid_until = ""
    for h in then:
        if h.id in rows:
            _, until, by = rows[h.id]
            if until is not None and by and until <= at:  # a successor said to start later: not before then
                h.superseded_by, h.valid_until = by, until.isoformat(timespec="seconds")
    _versions_among(then, rows, undone, since)
    if drop_later:
        return _ordered(then, [], hits, rows, undone)
    facts = {key.key for h in then if (key := _key(h)) is not None}
    successors = {rows[h.id][2] for h in then if h.id in rows}
    moved = [h for h in hits if h.id in later and (h.id in successors or getattr(_key(h), "key", None) in facts
                                                   or VERSION_LINE.search(h.text or h.snippet))]  # fmt: skip
    # read again as of then: search put what no longer holds *now* last, so relevance decides the order anew
    again = sorted((h for h in hits if h not in moved), key=lambda h: -h.score)
    return _ordered(again, moved, hits, rows, undone)


def not_yet_valid(hits: Hits, first: dict[str, datetime], since: dict[str, datetime],
                  as_of: datetime | None = None) -> set[str]:  # fmt: skip
    """Memories that do not hold yet at `as_of` (None: now), ranked after every memory that does: dated after now,
    or said by then and holding from a later start (`since`: a memory's date, or the later start it states)."""
    if as_of is None:
        now = datetime.now(UTC).replace(tzinfo=None)
        return {h.id for h in hits if h.id in since and since[h.id] > now}
    return {h.id for h in hits if h.id in since and first[h.id] <= as_of < since[h.id]}


def _validity(mid: str, created: datetime, known: Validities, as_of: datetime | None) -> Validity:
    """(last stated by `as_of`, until when and by which it did not hold at `as_of`) from the store's events."""
    stated = stated_at([created, *known.restated.get(mid, [])], as_of) or created
    span = mark_at(known.spans.get(mid, []), as_of)
    return (stated, span.start, span.by) if span is not None else (stated, None, None)


Known = tuple[Validities, Pairs]  # the store's supersessions, and the pairs undone
_KNOWN: dict[str, tuple[tuple[int, ...], Known]] = {}


def _read(home: Path) -> Known:
    """The store's superseded memories (valid until, by which) and the supersessions an operator undid, read again
    only when the store's files change (a read-only connection costs more than a search); while a writer holds the
    store, what was read last."""
    stamp = tuple(store_stamp(home))
    cached = _KNOWN.get(str(home))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    with reading_store(home) as con:
        if con is None:
            return cached[1] if cached is not None else (Validities({}, {}), frozenset())
        known = (_started(con, superseded(con)), frozenset(undone_pairs(con)))
    _KNOWN[str(home)] = (stamp, known)
    return known


def _started(con: DuckDBPyConnection, known: Validities) -> Validities:
    """Each span of not holding starts no earlier than its successor holds (`statements.starts.holds_from`): a
    supersession recorded from when a value said to start later was said still holds the older until the start."""
    by = sorted({sp.by for spans in known.spans.values() for sp in spans})
    if not by:
        return known
    ph = ", ".join("?" for _ in by)
    held = {str(r[0]): holds_from(str(r[1]), r[2]) for r in con.execute(
        f"SELECT id, content, created_at FROM memories WHERE id IN ({ph})", by).fetchall()}  # fmt: skip
    spans = {mid: [replace(sp, start=max(sp.start, held.get(sp.by, sp.start))) for sp in v]
             for mid, v in known.spans.items()}  # fmt: skip
    return Validities(spans, known.restated)


def _replaced(new: Hit, others: list[Hit], known: Validities) -> Hit | None:
    """The first of `others` whose fact `new` states another value of: the store's supersessions say so, or the
    read-time rules would (the same fact once values are masked, the attribute and change-word rules)."""
    text, key = new.text or new.snippet, _key(new)
    for h in others:
        if any(sp.by == new.id for sp in known.spans.get(h.id, [])):
            return h
        if h.source != "store" or h.kind == "summary":
            continue
        old, other = h.text or h.snippet, _key(h)
        same = key is not None and other is not None and other.key == key.key and versions_of(other, key)
        if (same and not changes.kept_apart(old, text)) or _version(old, text):
            return h
    return None


def _key(h: Hit) -> FactKey | None:
    return fact_key(h.text or h.snippet) if h.kind != "summary" else None


def _ordered(hits: list[Hit], last: list[Hit], original: Hits, rows: dict[str, Validity], undone: Pairs) -> Hits:
    current = _newer_first([h for h in hits if not h.superseded_by], rows, undone)
    replaced = sorted((h for h in hits if h.superseded_by), key=lambda h: h.valid_until, reverse=True)  # stable
    out = Hits(current + replaced + last, original.notice, original.mode)
    out.match, out.confidence = getattr(original, "match", out.match), getattr(original, "confidence", None)
    return out


def _versions_among(hits: list[Hit], rows: dict[str, Validity], undone: Pairs, since: dict[str, datetime]) -> None:
    """Two current hits among the first READ_TIME_WINDOW stating one fact with different values: the earlier
    stated is marked superseded by the later, from when the later holds (its date, or the later start it states)
    — unless an operator undid that supersession."""
    by_fact: dict[tuple[str, ...], list[tuple[str, Hit, FactKey]]] = {}
    for h in hits[:READ_TIME_WINDOW]:
        key = _key(h) if not h.superseded_by else None
        if key is not None:
            when = rows[h.id][0].isoformat(timespec="seconds") if h.id in rows else h.date
            by_fact.setdefault(key.key, []).append((when, h, key))
    for group in by_fact.values():
        group.sort(key=lambda t: t[0])
        for i, (_, old, key) in enumerate(group):
            newer = next(((w, n) for w, n, k in group[i + 1 :] if versions_of(key, k) and (old.id, n.id) not in undone
                          and not changes.kept_apart(old.text or old.snippet, n.text or n.snippet)), None)  # fmt: skip
            if newer is not None and not old.superseded_by:
                old.superseded_by, old.valid_until = newer[1].id, _from(newer[1], newer[0], since)
    _reworded_among(hits[:NEWER_FIRST_WINDOW], rows, undone, since)


def _from(newer: Hit, said: str, since: dict[str, datetime]) -> str:
    """When `newer`, said at `said`, holds from: a later start it states, else `said`."""
    start = since[newer.id].isoformat(timespec="seconds") if newer.id in since else said
    return max(start, said)


def _version(older: str, newer: str) -> bool:
    """The night's attribute and change-word rules on the words alone, a look-alike never a version."""
    if attributes.versions(older, newer):
        return not changes.kept_apart(older, newer)
    return changes.says_change(newer) and changes.supersedes(older, newer) is not None


def _reworded_among(hits: list[Hit], rows: dict[str, Validity], undone: Pairs, since: dict[str, datetime]) -> None:
    """A fact restated in other words, or said to have changed, among the top hits (the night's attribute and
    change-word rules, `statements.attributes` and `statements.changes`, on the words alone — no model at read
    time): the earlier marked superseded by the first later version."""
    said = [(rows[h.id][0].isoformat(timespec="seconds") if h.id in rows else h.date, h) for h in hits
            if h.source == "store" and h.kind != "summary" and not h.superseded_by
            and (attributes.claims(h.text or h.snippet) or changes.words_of(h.text or h.snippet))]  # fmt: skip
    said.sort(key=lambda t: t[0])
    for i, (_, old) in enumerate(said):
        newer = next(((w, n) for w, n in said[i + 1 :] if w > said[i][0] and (old.id, n.id) not in undone
                      and _version(old.text or old.snippet, n.text or n.snippet)), None)  # fmt: skip
        if newer is not None and not old.superseded_by:
            old.superseded_by, old.valid_until = newer[1].id, _from(newer[1], newer[0], since)


def _newer_first(hits: list[Hit], rows: dict[str, Validity], undone: Pairs) -> list[Hit]:
    """Two memories among the first NEWER_FIRST_WINDOW that plausibly restate one thing with another value
    (`statements.values.restates`, worded as they may be): the newer takes the better of their two places — never
    two a qualifier sets apart (`statements.changes.kept_apart`: the front and the back door's codes). Nothing is
    marked: a look-alike only moves. Each text is read once, and only the top of the order, where a reader looks."""
    out = list(hits)
    stated = {h.id: (rows[h.id][0].isoformat() if h.id in rows else h.date) for h in hits[:NEWER_FIRST_WINDOW]}
    read = {i: statement(h.text or h.snippet) for i, h in enumerate(out[:NEWER_FIRST_WINDOW])
            if h.source == "store" and h.kind != "summary"}  # fmt: skip
    places = [i for i, st in read.items() if st is not None]
    for a_pos, i in enumerate(places):
        for j in places[a_pos + 1 :]:
            a, b = out[i], out[j]
            sa, sb = statement(a.text or a.snippet), statement(b.text or b.snippet)
            if sa and sb and stated[b.id] > stated[a.id] and (a.id, b.id) not in undone and restates_read(sa, sb) \
                    and not changes.kept_apart(a.text or a.snippet, b.text or b.snippet):
                out[i], out[j] = b, a
    return out
