"""A statement of a fact read as an attribute and a typed value, so that a fact restated in new words is still seen
to change: "Daily standup is at 09:30 in the small meeting room." and "Standup moved to 10:15 so the Berlin folks
can join." state one attribute (the standup's time) with two values of one type.

A text is read clause by clause (`;`, sentence ends, a colon between two statements; asides in parentheses and a
clause in passing — "after the August drawdown" — are left out). A clause is a claim when it states something
holds (a copula, "now", a change word, "X: value") and carries values (`statements.values`: time, money, percent, date,
host or id, version, person, place, count; a note or ticket number is never one). Two claims are versions of one
fact (`versions`) when exactly one value changed, its type the same; no other name or host is named beside it;
they share a word of what the value is of; no qualifier of `contrasts.json` sets them apart (staging /
production, weekday / weekend); the words around the value are not one template with a qualifier swapped in
place; and either one attribute holds all the other's words (two or more), or the embedder's cosine over the two
attribute phrases says they are one thing — a higher bar when each has words the other lacks ("monthly budget for
groceries" / "monthly budget for eating out" are two budgets). Thresholds were chosen on the dev split of labelled
pairs written first (`benchmarks/version_pairs.json`) and on the original current-facts set's look-alikes. Errs
towards "two facts": a missed version leaves a stale value readable beside the new one, a wrong one hides a true
fact. Pure functions."""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from memory_pipeline.statements import facts as fx
from memory_pipeline.statements import values as vx

MAX_CLAIM_WORDS = vx.MAX_FACT_WORDS  # a longer text is a story, not a statement of what holds
SHARED_WORDS = 2  # words one attribute shares with another that holds all of its words: one fact on the words alone
CONTAINED_COSINE = 0.75  # MiniLM cosine making one attribute of two when one holds the other's one shared word
ATTRIBUTE_COSINE = 0.77  # ... and when each has words the other lacks ("software subscriptions" / "software bill")
_STEM = 5
_ASIDE = re.compile(r"\s*\([^)]*\)")
_CLAUSES = re.compile(r"\s*;\s*|(?<=[.!?])\s+|\s+[—–]\s+")
# words that say a value changed, or began to hold: a claim may open with them ("Tightened the cap to 1.5%")
_CHANGE = frozenset(
    """now new currently moved move moving changed change updated set raised lowered increased decreased reduced cut
    tightened loosened bumped dropped switched migrated upgraded downgraded became becomes took over replaced
    retired begins began kicks kicked off starts started going goes instead anymore longer henceforth onwards
    from down up""".split()
)
_HOLDS = re.compile(
    r"\b(?:is|are|=|now|costs?|lives|runs|leads|owns|heads|manages|handles|uses|listens|starts|begins|opens|"
    r"closes|expires|ends|rotates|takes place|happens|moved|moving|changed|raised|lowered|increased|reduced|"
    r"cut|tightened|loosened|bumped|switched|migrated|upgraded|downgraded|took over|replaced|down to|up to)\b",
    re.I,
)
# a note's way of saying what holds: "Standup → 10:15", "stg db = pg-stg-01" (a value after a bare noun —
# "standup 09:30" — is not enough: "Market scan 14:59 UTC, BTC: …" opens a log entry the same way)
_NOTED = re.compile(r"(?:→|->|=)")
_LABELLED = re.compile(r"^[^:]{3,60}(:) +\S+(?: +\S+){0,3}$")
BARE_WORDS = 10  # a note this short with one value states it, with or without a verb the rule knows
_PRONOUN = re.compile(r"^(?:it|that|this|they|these|those)\b", re.I)  # "… was raised: it is now 15k" needs its left
_VERSION = re.compile(r"^v?\d+(?:\.\d+){1,3}$")  # "v2.4.0": a release, not a host

_NAMED = re.compile(r"^[^:]{3,60}:\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)$")
_ROLE = re.compile(r"^([A-Z][a-z]+)\s+(?:leads|led|took over|owns|heads|manages|chairs)\b")
# grammar, and verbs that only link an attribute to its value ("uses Node 20", "listens on 5433", "costs $45")
_GRAMMAR = vx._IGNORED | fx.STOP_WORDS | {"per", "we", "us", "our", "my", "i", "total", "each", "every", "this", "from",
                                           "on", "so", "uses", "use", "using", "runs", "run", "listens", "costs",
                                           "cost"}  # fmt: skip


Near = Callable[[str, str], float]  # the embedder's cosine between two attribute phrases


def _kind(kind: str, normal: str) -> str:
    """A value's type, a release ("v2.4.0", "1.5.7") told from a host or an amount."""
    release = _VERSION.match(normal) and normal.count(".") >= (1 if kind == "id" else 2)
    return "version" if kind in ("id", "num") and release else kind


@lru_cache(maxsize=1)
def _contrasts() -> tuple[frozenset[str], ...]:
    data = json.loads((Path(__file__).with_name("contrasts.json")).read_text(encoding="utf-8"))
    return tuple(frozenset(g) for g in data["groups"])


@dataclass(frozen=True)
class Claim:
    """One clause that states values of something: its values (type, normal form), what it is about (notes,
    tickets, subjects), the words of what its values are of, and those before its first value."""

    values: tuple[tuple[str, str], ...]
    refs: frozenset[str]  # the notes, tickets and subjects (names, hosts before its verb) it is about
    plain: tuple[str, ...]  # the words of what its values are of, lower case, in order (names among them)
    head: str  # those before its first value ("daily standup" of "… is at 09:30 in the small meeting room")

    def words(self, without: str = "") -> tuple[str, ...]:
        """The attribute's words as compared (stems): the value `without` (a name that changed) and the names it
        is about left out — "Lisbon" in two flights' times is no evidence they are one."""
        return tuple(w[:_STEM] for w in self.plain if w not in without.split() and w not in self.refs)

    def phrase(self, without: str = "") -> str:
        return " ".join(w for w in self.plain if w not in without.split())


_UNIT = re.compile(r"/\s*(?:mo|month|yr|year|wk|week|day|hr|hour|head|person|pp)\b", re.I)  # "£640/yr": the value's


def _attribute_words(text: str) -> list[str]:
    """Lower-case content words; a word in capitals ("US", "EU", "BTC") qualifies, whatever it spells. A unit
    after a slash is the value's ("$45/mo"), not a word of what it is of."""
    text = _UNIT.sub(" ", text)
    return [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9']*", text.replace("-", " "))
            if (w.isupper() and len(w) > 1) or (w.lower() not in _GRAMMAR and w.lower() not in _CHANGE)]  # fmt: skip


def _bare(note: str) -> int | None:
    """Where the one value of a short note begins when it states it without a verb ("flat rent £1,150", "car
    insurance £640/yr", "standup 09:30, small room"): the whole note one clause with no colon and no past tense
    (a log line tells what happened: "build failed on runner ci-07"), one value in all, after words of what
    it is of. The value an amount, a time, a date, a release — or a count after two such words at the end ("max
    open positions 5"); never a host or a name, which in a note name what it is about ("room 211 free" is a room).
    None otherwise, and for an event opening with its action (`values._is_event`)."""
    found = [v for v in vx.with_slots(note, vx._values(note)) if v.kind != "ref"]
    if ":" in re.sub(r"\d:\d", "", note) or len(note.split()) > BARE_WORDS or len(found) != 1 or vx._is_event(note):
        return None
    if any(w.lower() not in _CHANGE for w in re.findall(r"\b[A-Za-z]{3,}ed\b", note)):
        return None  # a past tense ("failed", "rebooted"); "-ing" words are as often nouns ("meeting", "ceiling")
    value = found[0]
    kind, before = _kind(value.kind, value.normal), _attribute_words(note[: value.start])
    if kind in ("name", "id") or not before:
        return None
    if kind == "num" and (len(before) < 2 or note[value.end :].strip()):
        return None
    return value.start


def _split(text: str) -> list[str]:
    """The clauses of a statement. Before a colon that opens a clause of its own, a heading ("Access review: the
    bot is admin …") or an action ("Added Sentry: the bill is now $355") is not part of it."""
    out: list[str] = []
    for part in _CLAUSES.split(_ASIDE.sub("", text).strip()):
        left, colon, right = part.partition(": ")  # "09:30" is no colon between statements
        said = _attribute_words(" ".join(w for w in right.split() if not vx._values(w)))
        if colon and len(right.split()) >= 3 and _HOLDS.search(right) and said and not _PRONOUN.match(right):
            out += [left, right] if vx._is_event(left) else [right]
        elif part.strip():
            out.append(part)
    return out


@lru_cache(maxsize=16384)
def claims(text: str) -> tuple[Claim, ...]:
    """The claims of a short statement (one sentence, its clauses); none for a story, an event told as an action,
    or a text with no value. Values before the clause's verb name what it is about ("api-gw-1: …", "Leeds pickup
    is …"): they are its subjects, never a value that changes."""
    if len(text.split()) > MAX_CLAIM_WORDS or re.search(r"[.!?]\s+\S", _ASIDE.sub("", text).strip()):
        return ()
    out = []
    refs = frozenset(vx._reference(m.group(0)) for m in vx._REFERENCE.finditer(text))  # "Row 308 …; Lena had …"
    whole = vx._IN_PASSING.sub("", _ASIDE.sub("", text)).strip().rstrip(".!")
    for clause in _split(text):
        clause = vx._IN_PASSING.sub("", clause).strip().rstrip(".!")
        label = _LABELLED.search(clause)  # "Gym membership: $45 per month", a short value
        holds = _HOLDS.search(clause) or _NOTED.search(clause)
        bare = _bare(clause) if not (holds or label) and clause == whole else None
        body = clause.partition(": ")[2] if label else clause
        if not clause or not (holds or label or bare is not None) or (label and vx._is_event(body)):
            continue  # "Portfolio rebalance: moved 10% of the buffer into ETH" is an entry of a log
        # the verb, the label's colon, or a bare note's value
        at = bare if bare is not None else min(m.start(m.re.groups) for m in (holds, label) if m is not None)
        found = [v for v in vx.with_slots(clause, vx._values(clause)) if v.kind != "ref"]
        subjects = frozenset(v.normal for v in found if v.end <= at) | {
            m.group(1).lower() for m in vx._POSSESSIVE.finditer(clause[:at])
        }  # "Leo's phone plan costs …"
        spans = [(v.start, v.end) for v in found if v.end > at]
        values = [(_kind(v.kind, v.normal), v.normal) for v in found if v.end > at]
        if (named := _NAMED.match(clause)) is not None:  # "Data platform team lead: Priya"
            values, spans = [("name", named.group(1).lower())], [named.span(1)]
        if (role := _ROLE.match(clause)) is not None:  # "Priya leads the on-call rotation": the person is the value
            subjects = subjects - {role.group(1).lower()}
            values.append(("name", role.group(1).lower()))
            spans.append(role.span(1))
        if not values or (vx._is_event(clause) and (clause.split()[0].lower() not in _CHANGE or len(values) > 1)):
            continue  # "Set a price alert on LINK at 17.15", "Upgraded Python 3.11 to 3.12 on db-01": events
        rest = clause
        for (start, end), (kind, _) in sorted(zip(spans, values, strict=True), reverse=True):
            if kind != "name":  # a name qualifies what the value is of ("Priya's birthday"), unless it is the value
                rest = rest[:start] + " " + rest[end:]
        plain = _attribute_words(rest)
        if not plain:
            continue
        head = rest[: min(s for s, _ in spans)]
        out.append(Claim(tuple(values), refs | subjects, tuple(plain), " ".join(_attribute_words(head))))
    return tuple(out)


def changed(a: Claim, b: Claim) -> tuple[str, str, str] | None:
    """The one value that differs between two claims of one shape — (type, older, newer) — or None: no value
    changed, several did, or another subject is named (two names, two hosts, two tickets beside the change)."""
    if a.refs != b.refs:
        return None  # another ticket, host or person it is about
    va, vb = Counter(a.values), Counter(b.values)
    only_a, only_b = va - vb, vb - va
    # a name or host one side merely mentions as a word of the other ("Node 20.11" / "Node version: 18.19")
    only_a = Counter({kv: n for kv, n in only_a.items() if not (kv[0] in ("name", "id") and kv[1] in b.plain)})
    only_b = Counter({kv: n for kv, n in only_b.items() if not (kv[0] in ("name", "id") and kv[1] in a.plain)})
    kinds = {k for k, _ in only_a} & {k for k, _ in only_b}
    if len(kinds) != 1:
        return None
    kind = next(iter(kinds))
    olds = [v for (k, v), n in only_a.items() for _ in range(n) if k == kind]
    news = [v for (k, v), n in only_b.items() for _ in range(n) if k == kind]
    if len(olds) != 1 or len(news) != 1:
        return None
    if any(k in ("name", "id") and k != kind for k, _ in (*only_a, *only_b)):
        return None  # another name or host beside the change: "the Lisbon office wifi" is not "the office wifi"
    return kind, olds[0], news[0]


def contrasted(a: Claim, b: Claim) -> bool:
    """A qualifier of one group on each side, different: "staging" / "production", "weekday" / "weekend"."""
    pa, pb = set(a.plain), set(b.plain)
    for group in _contrasts():
        ga, gb = (pa & group) - pb, (pb & group) - pa
        if ga and gb:
            return True
    return False


def _qualifier_swapped(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """One or two words replaced in place before the last, the rest the same: a qualifier swapped ("search service
    port" / "billing service port", "cloud budget" / "marketing budget"). The last word replaced is the head said
    another way ("risk cap" / "risk ceiling")."""
    ops = [o for o in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if o[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return False
    _, i1, i2, j1, j2 = ops[0]
    return i2 - i1 <= 2 and j2 - j1 <= 2 and i2 < len(a) and j2 < len(b)


def by_words(a: Claim, b: Claim, change: tuple[str, str, str]) -> bool | None:
    """What the words alone say of two claims' attribute, `change` the value that differs: apart (no shared word,
    a contrast, a qualifier swapped in place), the same (one holds all the other's words, two or more of them), or
    None: the embedder decides."""
    old, new = (change[1], change[2]) if change[0] == "name" else ("", "")
    wa, wb = a.words(old), b.words(new)
    shared = set(wa) & set(wb)
    if not shared or contrasted(a, b) or _qualifier_swapped(wa, wb):
        return False
    if len(shared) >= SHARED_WORDS and shared in (set(wa), set(wb)):
        return True
    return None


def compared(a: Claim, b: Claim, change: tuple[str, str, str]) -> list[tuple[str, str]]:
    """The phrases the embedder compares when the words alone do not decide: the attributes, and the words before
    the values."""
    old, new = (change[1], change[2]) if change[0] == "name" else ("", "")
    return [(a.phrase(old), b.phrase(new))] + ([(a.head, b.head)] if a.head and b.head else [])


def same_attribute(a: Claim, b: Claim, change: tuple[str, str, str], near: Near | None = None) -> bool:
    """Whether two claims' values — `change` the one that differs — are of one thing: by the words (`by_words`),
    or, where they do not decide, at the embedder's cosine (`near`) over the phrases of `compared`."""
    words = by_words(a, b, change)
    if words is not None or near is None:
        return bool(words)
    old, new = (change[1], change[2]) if change[0] == "name" else ("", "")
    contained = set(a.words(old)) & set(b.words(new)) in (set(a.words(old)), set(b.words(new)))
    return max(near(x, y) for x, y in compared(a, b, change)) >= (CONTAINED_COSINE if contained else ATTRIBUTE_COSINE)


def pairs(older: str, newer: str) -> list[tuple[Claim, Claim, tuple[str, str, str]]]:
    """The claim pairs of two texts whose one value changed: what `versions` then holds to one attribute."""
    return claim_pairs(claims(older), claims(newer))


def claim_pairs(older: Sequence[Claim], newer: Sequence[Claim]) -> list[tuple[Claim, Claim, tuple[str, str, str]]]:
    """`pairs` over claims already read."""
    return [(a, b, change) for a in older for b in newer if (change := changed(a, b)) is not None]


def versions(older: str, newer: str, near: Near | None = None) -> bool:
    """Whether `newer` states another value of a fact `older` states (its attribute the same, one value changed);
    `near` is the embedder's cosine over two attribute phrases, None for the words alone."""
    return any(same_attribute(a, b, change, near) for a, b, change in pairs(older, newer))
