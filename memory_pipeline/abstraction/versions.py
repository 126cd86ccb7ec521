"""Versions of one fact (the night's Versioner): which memories a later value of the same fact supersedes.

Three rules, in order, none of which supersedes a look-alike: two statements a qualifier sets apart ("front" /
"back door code", "staging" / "production host", "per trade" / "per day"; `statements.changes.kept_apart`, the one
judgement's DIFFERENT) are two facts. Statements are grouped by what they are about once their values are masked
(`statements.values.fact_key`); within a group, in the order they were stated, a memory is superseded by the first later
statement of another value. Then a fact restated in other words: statements read as attribute and typed value
(`statements.attributes`), candidates found through an index of their attribute words over the whole store (not a
night's clusters), a memory neither rule has superseded is superseded by the first later one the attribute rule
calls its version. Then a newer memory that says the value changed ("Standup moved to 10", "Marcus took over as
on-call lead for payments", "… is no longer allowed"; `statements.changes`) supersedes the older memory whose words
it names the attribute in. The older value holds until the newer does: when it was stated, or the later start it
states ("£1,250 a month from January"). A value stated again is a new statement: "$80, then $95, then $80 again"
leaves the last current. A supersession an operator undid is never made again. Pure: rows in, a plan out."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memory_pipeline.distillation.distill import REPLACED
from memory_pipeline.statements import attributes, changes
from memory_pipeline.statements.starts import holds_from
from memory_pipeline.statements.values import FactKey, fact_key, stated_values, versions_of
from memory_pipeline.store.validity import FactRow, Supersession
from memory_pipeline.verification.faithfulness import CachedEncoder, Encode


@dataclass
class VersionPlan:
    """What a night would supersede, and over how many statements of fact it looked."""

    supersessions: list[Supersession] = field(default_factory=list)
    facts_read: int = 0  # memories that state a value of a fact
    groups: int = 0  # facts with two or more statements

    def share(self) -> float:
        return len(self.supersessions) / self.facts_read if self.facts_read else 0.0

    def largest(self, n: int = 5) -> list[tuple[str, int]]:
        """The facts with most supersessions tonight: (fact key, count)."""
        counts: dict[str, int] = defaultdict(int)
        for s in self.supersessions:
            counts[s.fact_key] += 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


MAX_POSTING = 200  # an attribute word more statements share than this ("port", "time") finds no candidates alone


def plan(
    rows: Iterable[FactRow], undone: AbstractSet[tuple[str, str]] = frozenset(), encode: Encode | None = None
) -> VersionPlan:
    """What tonight supersedes: the masked-text rule, then the attribute rule (`encode`, the embedder, judging
    attribute phrases the words alone cannot decide; None for the words alone)."""
    rows = list(rows)
    keyed: dict[tuple[str, ...], list[tuple[FactRow, FactKey]]] = defaultdict(list)
    for row in rows:
        key = fact_key(row.content)
        if key is not None:
            keyed[key.key].append((row, key))
    out = VersionPlan()
    for words, group in keyed.items():
        if len(group) < 2:
            continue
        out.groups += 1
        out.supersessions += _chain(" ".join(words), sorted(group, key=lambda rk: (rk[0].stated_at, rk[0].id)), undone)
    claimed = [(row, claims) for row in rows if (claims := attributes.claims(row.content))]
    out.facts_read = len({row.id for row, _ in claimed} | {row.id for g in keyed.values() for row, _ in g})
    out.supersessions += _reworded(claimed, {s.memory_id for s in out.supersessions}, undone, encode)
    out.supersessions += _said_changed(rows, {s.memory_id for s in out.supersessions}, undone)
    return out


def _said_changed(
    rows: Sequence[FactRow], done: AbstractSet[str], undone: AbstractSet[tuple[str, str]]
) -> list[Supersession]:
    """The change-word rule's supersessions: each newer memory that says a value changed, against the older
    memories sharing one of its words that no more than `MAX_POSTING` statements have (an inverted index)."""
    short = [r for r in rows if len(r.content.split()) <= changes.MAX_WORDS]
    newer = sorted((r for r in short if changes.says_change(r.content)), key=lambda r: (r.stated_at, r.id))
    if not newer:
        return []
    index: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(short):
        for word in changes.words_of(r.content):
            index[word].append(i)
    out: dict[str, Supersession] = {}
    for n in newer:
        found = {i for w in changes.words_of(n.content) if len(index[w]) <= MAX_POSTING for i in index[w]}
        for i in sorted(found, key=lambda i: (short[i].stated_at, short[i].id)):
            o = short[i]
            if o.stated_at >= n.stated_at or o.superseded_by is not None or o.id in done or o.id in out:
                continue
            if (o.id, n.id) not in undone and (attribute := changes.supersedes(o.content, n.content)) is not None:
                out[o.id] = Supersession(o.id, n.id, _holds(n), attribute)
    return list(out.values())


def _reworded(
    claimed: Sequence[tuple[FactRow, tuple[attributes.Claim, ...]]],
    done: AbstractSet[str],
    undone: AbstractSet[tuple[str, str]],
    encode: Encode | None,
) -> list[Supersession]:
    """The attribute rule's supersessions: candidates share an attribute word no more than `MAX_POSTING`
    statements have (an inverted index, so the pairs grow with what statements share, not with the store)."""
    index: dict[str, list[int]] = defaultdict(list)
    for i, (_, claims) in enumerate(claimed):
        for word in {w for c in claims for w in c.words()}:
            index[word].append(i)
    candidates: set[tuple[int, int]] = set()
    for posting in index.values():
        if 1 < len(posting) <= MAX_POSTING:
            candidates.update((i, j) for n, i in enumerate(posting) for j in posting[n + 1 :])
    ordered = []
    for i, j in candidates:
        (a, ca), (b, cb) = claimed[i], claimed[j]
        (older, co), (newer, cn) = (
            ((a, ca), (b, cb)) if (a.stated_at, a.id) <= (b.stated_at, b.id) else ((b, cb), (a, ca))
        )
        if older.superseded_by is None and older.id not in done and newer.stated_at > older.stated_at:
            if pairs := attributes.claim_pairs(co, cn):  # one value changed: worth judging
                ordered.append((older, newer, pairs))
    near = None
    ask = [
        p
        for _, _, pairs in ordered
        for a, b, change in pairs
        if attributes.by_words(a, b, change) is None
        for pair in attributes.compared(a, b, change)
        for p in pair
    ]
    if encode is not None and ask:  # the embedder is loaded only when the words leave a pair undecided
        cached = CachedEncoder(encode)
        cached.warm(ask)

        def near(x: str, y: str) -> float:
            v = cached([x, y])
            return float(v[0] @ v[1])

    out: dict[str, Supersession] = {}
    for older, newer, pairs in sorted(ordered, key=lambda onc: (onc[1].stated_at, onc[1].id)):  # the first later
        if older.id in out or (older.id, newer.id) in undone:
            continue
        found = next((a for a, b, change in pairs if attributes.same_attribute(a, b, change, near)), None)
        if found is not None and not changes.kept_apart(older.content, newer.content):
            out[older.id] = Supersession(older.id, newer.id, _holds(newer), " ".join(found.plain))
    return list(out.values())


def _holds(newer: FactRow) -> datetime:
    """When the older value stops holding: when `newer` was stated, or the later start it states ("from
    January"; `statements.starts`)."""
    return holds_from(newer.content, newer.stated_at)


def _chain(
    name: str, group: Sequence[tuple[FactRow, FactKey]], undone: AbstractSet[tuple[str, str]]
) -> list[Supersession]:
    out = []
    for i, (row, key) in enumerate(group):
        if row.superseded_by is not None:
            continue
        later = next(((r, k) for r, k in group[i + 1 :] if r.stated_at > row.stated_at and versions_of(key, k)
                      and not changes.kept_apart(row.content, r.content)), None)  # fmt: skip
        if later is not None and (row.id, later[0].id) not in undone:
            out.append(Supersession(row.id, later[0].id, _holds(later[0]), name))
    return out


@dataclass(frozen=True)
class Dated:
    """A cluster member as its validity reads."""

    id: str
    content: str
    created_at: datetime
    valid_until: datetime | None
    superseded_by: str | None


def present_first(members: Sequence[Dated], now: datetime | None = None) -> dict[str, str]:
    """What a distiller is given for each member: the current version of a fact with its earlier values after it
    ("Per-trade risk cap is 1% (since 2026-10-20; was 1.5% 2026-09-14 → 2026-10-20, 2% 2026-08-01 →
    2026-09-14)."), an earlier version that line already states marked `REPLACED` (a source, not written again),
    a member superseded by a memory outside the cluster marked with when it stopped holding (or, when its successor
    starts after `now`, until when it holds), and every other member as it is."""
    ids = {m.id for m in members}
    now = now or datetime.now(UTC).replace(tzinfo=None)
    out: dict[str, str] = {}
    for m in members:
        if m.superseded_by in ids:
            out[m.id] = REPLACED + m.content
        elif m.superseded_by is not None and m.valid_until is not None:
            held = "holds until" if m.valid_until > now else "no longer holds since"
            out[m.id] = f"({held} {m.valid_until:%Y-%m-%d}) {m.content}"
        else:
            older = _earlier(m.id, members)
            out[m.id] = m.content if not older else _version_line(m, older)
    return out


def _earlier(head: str, members: Sequence[Dated]) -> list[Dated]:
    """Every member the chain ending at `head` superseded, newest first."""
    found, todo = [], [head]
    while todo:
        current = todo.pop()
        for m in members:
            if m.superseded_by == current and m not in found:
                found.append(m)
                todo.append(m.id)
    return sorted(found, key=lambda m: (m.created_at, m.id), reverse=True)


def _version_line(current: Dated, older: Sequence[Dated]) -> str:
    since = holds_from(current.content, current.created_at)  # its date, or the later start it states
    was = ", ".join(
        f"{' / '.join(stated_values(m.content)) or m.content.rstrip('.')} {m.created_at:%Y-%m-%d} → "
        f"{(m.valid_until or since):%Y-%m-%d}"
        for m in older
    )
    return f"{current.content.strip().rstrip('.')} (since {since:%Y-%m-%d}; was {was})."
