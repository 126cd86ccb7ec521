"""A newer note that says a value changed: "Standup moved to 10", "We switched the VPN over to vpn2", "Marcus took
over as on-call lead for payments", "Remote work on Fridays is no longer allowed". No lexicon of attributes: the
note says the change in words of `change_words.json`, and what it names of the attribute — its words outside the
values, the change words and filler — is all said by the older note, which states another value of it (or the same
statement without the negation the newer one adds). Two values of one kind, or a time given as a bare hour; names
may change together ("Jane Doyle" → "Mark Ellis"), but a name changed beside another value is another subject.
A value the newer note says it leaves ("from Opsgenie to …", "Cloudflare replaces Route 53 as …", "took over …
from Sara") is the older one's, not shared; attribute words are compared by their roots on both sides (pager /
paging, lunches / lunch); a recurring day is a value ("on Thursdays", "every other Friday"); who does a thing
("run by", "now handled by") is no part of what it is.

`kept_apart` is the look-alike guard every rule of the Versioner asks: two statements a qualifier of
`contrasts.json` sets apart (`judgement.judge` calls them DIFFERENT for it: front / back, staging / production,
per trade / per day, iOS / Android) are two facts — unless the contrast word is the newer one's new value, said
after its change words ("the Wi-Fi is now off"). Pure functions."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from memory_pipeline.statements import facts as fx
from memory_pipeline.statements import judgement
from memory_pipeline.statements import values as vx

MAX_WORDS = vx.MAX_FACT_WORDS
ONE_WORD_OLDER = 2  # a newer note naming its attribute in one word supersedes an older one naming it in at most two
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’-]*")
_CLAUSES = re.compile(r"\s*;\s*|(?<=[.!?])\s+|\s+[—–]\s+")
_COMPATIBLE = {frozenset({"time", "num"}), frozenset({"slot", "time"}), frozenset({"date", "num"}),
               frozenset({"day", "slot"})}  # fmt: skip


@dataclass(frozen=True)
class _Words:
    phrases: tuple[re.Pattern[str], ...]
    filler: frozenset[str]
    words: frozenset[str]  # every word of a change phrase: never a word of what the attribute is
    leaving: tuple[str, ...]  # where a newer note names the value it leaves: "from {old}", "replaces {old}"
    doers: re.Pattern[str]  # "handled by", "run by": who does it, not what it is


@lru_cache(maxsize=1)
def _words() -> _Words:
    data = json.loads(Path(__file__).with_name("change_words.json").read_text(encoding="utf-8"))
    pats = []
    for phrase in data["phrases"]:
        parts = [r"\s+".join(map(re.escape, p.split())) for p in phrase.split("…")]
        pats.append(re.compile(r"\b" + r"\b(?:\s+\S+){0,5}?\s+\b".join(parts) + r"\b", re.I))
    words = frozenset(w.lower() for p in data["phrases"] for w in p.replace("…", " ").split())
    doers = re.compile(r"\b(?:" + "|".join(r"\s+".join(map(re.escape, d.split())) for d in data["doers"])
                       + r")\s+(?=by\b)", re.I)  # fmt: skip
    return _Words(tuple(pats), frozenset(data["filler"]), words, tuple(data["leaving"]), doers)


def change_at(text: str) -> int | None:
    """Where the first change phrase of `text` ends, or None: the note does not say a value changed."""
    ends = [m.end() for p in _words().phrases if (m := p.search(text)) is not None]
    return min(ends) if ends else None


def says_change(text: str) -> bool:
    return change_at(text) is not None


def words_of(text: str) -> frozenset[str]:
    """The stems of a note's content words, by which the Versioner finds the older notes a newer one may change."""
    w = _words()
    return frozenset(judgement.root(t) for t in (x.lower().removesuffix("'s") for x in _WORD.findall(text))
                     if len(t) > 2 and t not in fx.STOP_WORDS and t not in vx._IGNORED and t not in w.words
                     and t not in w.filler)  # fmt: skip


@dataclass(frozen=True)
class _Read:
    values: frozenset[tuple[str, str]]  # (kind, normal form)
    words: tuple[str, ...]  # words of what the values are of, stemmed, in order
    negated: bool
    spans: tuple[tuple[int, tuple[str, str]], ...] = ()  # where each value starts
    change: int = 0  # where the change words end
    texts: tuple[tuple[tuple[str, str], str], ...] = ()  # each value as written


def _opener(text: str, elsewhere: str) -> tuple[str, int] | None:
    """A capitalised word opening `text` that is a name ("Tom moved …", "Marcus took over …"): not a grammar,
    change or action word, and written lower case nowhere in the two notes ("Standup moved …" / "daily standup")."""
    m = re.match(r"\s*([A-Z][a-z]+)(?:(['’]s)|\s+([A-Za-z]+))?", text)
    if m is None:
        return None
    low, after = m.group(1).lower(), m.group(3) or ""
    verb = after in ("is", "was", "are", "has") or after.lower() in _words().words or (
        after.islower() and after.endswith("s") and not after.endswith("ss") and len(after) > 3)
    if not (m.group(2) or after[:1].isupper() or verb):
        return None  # "Daily standup …", "Code review day …": the opener qualifies a noun
    w = _words()
    if low in fx.STOP_WORDS or low in vx._IGNORED or low in w.words or low in w.filler or low in vx._EVENT_OPENERS:
        return None
    if re.search(rf"\b{low}\b", elsewhere) or low.endswith("ed"):
        return None
    return low, m.end(1)


def _read(clause: str, elsewhere: str) -> _Read:
    clause = _words().doers.sub("", clause)
    found = [v for v in vx.with_days(clause, vx.with_slots(clause, vx._values(clause))) if v.kind != "ref"]
    values = {(v.kind, v.normal) for v in found}
    spans = [(v.start, v.end) for v in found]
    starts = [(v.start, (v.kind, v.normal)) for v in found]
    texts = [((v.kind, v.normal), v.raw) for v in found]
    opener = _opener(clause, elsewhere)
    if opener is not None and not any(not clause[:s].strip() for s, _ in spans):
        name, end = opener
        values.add(("name", name))
        spans.append((0, end))
        starts.append((0, ("name", name)))
        texts.append((("name", name), clause[:end].strip()))
    rest = clause
    for s, e in sorted(spans, reverse=True):
        rest = rest[:s] + " | " + rest[e:]
    w = _words()
    words = [t.lower().replace("’", "'").removesuffix("'s") for t in _WORD.findall(rest)]
    keep = tuple(judgement.root(t) for t in words if len(t) > 1 and t not in fx.STOP_WORDS and t not in vx._IGNORED
                 and t not in w.words and t not in w.filler and t not in vx._EVENT_OPENERS)  # fmt: skip
    return _Read(frozenset(values), keep, bool(fx.NEGATION.search(clause)), tuple(starts), change_at(clause) or 0,
                 tuple(texts))


def _clauses(text: str) -> list[str]:
    """A note's clauses; a heading before a colon stays with its clause ("The tea people put the price up: £14
    monthly from now on" is the tea's price, not a monthly amount)."""
    return [c.strip().rstrip(".!") for c in _CLAUSES.split(text.strip()) if c.strip()]


def supersedes(older: str, newer: str) -> str | None:
    """The attribute (its words) of which `newer` states a new value by saying it changed, or None."""
    if len(older.split()) > MAX_WORDS or len(newer.split()) > MAX_WORDS or kept_apart(older, newer):
        return None
    if vx._is_event(older) and not re.search(r"\b(?:for|on|at)\b", older):
        return None
    both = f"{older} {newer}"
    old_clause = vx._IN_PASSING.sub("", older).strip().rstrip(".!")
    for clause in _clauses(newer):
        if not says_change(clause):
            continue
        ro = _read(old_clause, re.sub(r"^\s*\S+", "", both))
        rn = _leaves(ro, old_clause, _read(clause, re.sub(r"^\s*\S+", "", both)), clause)
        found = _changed(ro, rn)
        if found is not None:
            return found
    return None


def _leaves(ro: _Read, old_clause: str, rn: _Read, clause: str) -> _Read:
    """`rn` less the older values it names as the one it leaves ("switched paging from Opsgenie to …", "Cloudflare
    replaces Route 53 as …", "Dev took over … from Sara"): that value is the old one, not one both notes share.
    Said so in the older note too ("pulled from db1"), it is no value left."""
    left = set()
    for value, text in ro.texts:
        if value not in rn.values:
            continue
        for where in _words().leaving:
            pat = re.compile(r"(?<!\w)" + r"\s+".join(re.escape(w) if w != "{old}" else re.escape(text)
                                                   for w in where.split()) + r"(?!\w)", re.I)  # fmt: skip
            if pat.search(clause) and not pat.search(old_clause):
                left.add(value)
    if not left:
        return rn
    spans = tuple((s, v) for s, v in rn.spans if v not in left)
    return _Read(rn.values - left, rn.words, rn.negated, spans, rn.change, rn.texts)


def _changed(ro: _Read, rn: _Read) -> str | None:
    olds, news = ro.values - rn.values, rn.values - ro.values
    shared = {n for _, n in ro.values & rn.values}
    attr_new = {w for w in rn.words} | {judgement.stem(s) for s in shared}
    attr_old = {w for w in ro.words} | {judgement.stem(s) for s in shared}
    if not attr_new or not attr_new <= attr_old:
        return None
    if len(attr_new) == 1 and len(attr_old) > ONE_WORD_OLDER:
        return None
    if not news:
        return " ".join(sorted(attr_new)) if rn.negated and not ro.negated and not olds else None
    if not rn.words and not any(start >= rn.change for start, v in rn.spans if v in news):
        return None  # only a shared name says what it is of, and the new value stands before the change words:
        # "Tom moved to Lisbon" / "Sara moved to Lisbon" are two people, not Lisbon's new resident
    if not olds or ro.negated != rn.negated:
        return None
    ok, nk = {k for k, _ in olds}, {k for k, _ in news}
    named = {"name", "id"}
    if (ok | nk) & named and not ((ok | nk) <= named and len(nk) == 1 and ok == nk and min(len(olds), len(news)) == 1):
        return None  # a name or host changed beside another value, or two names changed: another subject
        # ("Kate reports to Omar" / "Ben now reports to Lena")
    if not (ok | nk) & named and len(news) > 1:
        return None
    if not all(k in ok or any(frozenset({k, o}) in _COMPATIBLE for o in ok) for k in nk):
        return None
    return " ".join(sorted(attr_new))


def kept_apart(older: str, newer: str) -> bool:
    """Whether a qualifier sets the two statements apart (the one judgement's DIFFERENT, for a group or antonym of
    `contrasts.json`), its word in the newer one not the value it says changed."""
    if judgement.judge(older, newer).relation is not judgement.Relation.DIFFERENT:
        return False
    apart = judgement.qualifiers(older, newer)
    if apart is None:
        return False
    at = change_at(newer)
    if at is None:
        return True
    tail = newer[at:].lower()
    return not all(re.search(rf"\b{re.escape(w)}", tail) for w in apart[1])
