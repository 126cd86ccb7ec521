"""The offline distiller's text work: align the members' sentences, keep a shared skeleton once,
fold the differing numbers of reports of one statement into ranges.

Sentences are grouped into families: near-identical wording once numbers and negations are masked
(rapidfuzz `ratio` ≥ `SAME_WORDING`), or the same speaker, the same named entities and the same kinds of
numbers with loosely similar words (`token_set_ratio` ≥ `SAME_FACT`) — "Lost 5.8% to slippage on JTO/USDT"
and "Market order on JTO/USDT slipped 6.1%" state one fact. A family is written once, as its most typical
sentence (the skeleton) with each number slot replaced by the range of the family's values ("2.3–8.0%"). Two
statements are never fused into one that no source says: differing names ("eu-west-1" / "us-east-1") are
other statements (`statements.judgement`), and a family that describes a state (no past-tense verb) with
differing values holds statements that disagree — its skeleton is written as it is, and the others are left to
be said in their own words, as is a negation of it. Pure and deterministic: no model, no clock.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rapidfuzz import fuzz

from memory_pipeline.statements import facts as fx
from memory_pipeline.statements import judgement

SAME_WORDING = 80.0  # rapidfuzz ratio of the masked sentences: the same sentence reworded a little
SAME_FACT = 45.0  # token_set_ratio when speaker, entities and number kinds agree: the same fact in other words
_NEG_MASK = re.compile(
    r"\b(?:not|never|no|don't|doesn't|didn't|isn't|aren't|wasn't|weren't|won't|can't|cannot|shouldn't)\b\s*",
    re.IGNORECASE,
)
# A sentence with a past-tense verb or a time word reports an observation: its numbers vary and make a range.
# Without one it states how things are, so members giving different values contradict each other.
_OBSERVATION = re.compile(
    r"\b(?!(?:shared|based|limited|required|advanced|detailed|expected|scheduled|related|distributed|"
    r"automated|dedicated|managed|need|speed|feed|seed|red|bed|embed|bled|hundred)\b)[a-z]+ed\b|"
    r"\b(?:lost|rose|fell|took|ran|paid|spent|was|were|had|did|made|got|went|came|saw|sold|bought|hit|left|"
    r"kept|found|broke|grew|built|sent|won|began|caught|sat|stuck|felt|held|led|met|paid|said|told|wrote|gave|"
    r"stood|again|yesterday|last|ago|row|within|each|every|per|"
    r"average|usually|typically|often|sometimes|times|once|twice)\b",
    re.IGNORECASE,
)


@dataclass
class Piece:
    """One sentence of one member."""

    member: int
    position: int
    text: str
    label: str
    score: float
    words: frozenset[str]
    causal: bool
    nums: list[fx.Number] = field(default_factory=list)
    ents: list[str] = field(default_factory=list)

    @property
    def masked(self) -> str:
        return mask(self.text)

    @property
    def negated(self) -> bool:
        return fx.has_negation(self.text)

    def signature(self) -> tuple[str, frozenset[str], frozenset[str]]:
        return self.label, frozenset(e.lower() for e in self.ents), frozenset(n.unit for n in self.nums)


def mask(text: str) -> str:
    """Lower case, numbers → '#', negation words gone: what two wordings of one statement share."""
    out = _NEG_MASK.sub("", text.lower())
    return re.sub(r"\$?\d+(?:[.,]\d+)*(?:[km%x])?\+?", "#", out)


@dataclass
class Family:
    pieces: list[Piece]

    @property
    def first(self) -> tuple[int, int]:
        return min((p.member, p.position) for p in self.pieces)

    @property
    def members(self) -> set[int]:
        return {p.member for p in self.pieces}

    @property
    def words(self) -> frozenset[str]:
        return frozenset().union(*(p.words for p in self.pieces))

    @property
    def causal(self) -> bool:
        return any(p.causal for p in self.pieces)

    def facts(self) -> set[str]:
        """Numbers, entities, and a negation (one per family: "not by email" is a fact of its own)."""
        out = {f"n:{n.value:g}" for p in self.pieces for n in p.nums} | {
            f"e:{e.lower()}" for p in self.pieces for e in p.ents
        }
        negated = [(p.member, p.position) for p in self.pieces if p.negated]
        return out | ({f"neg:{min(negated)}"} if negated else set())


def group(pieces: Sequence[Piece]) -> list[Family]:
    """Greedy and in order, so the same members always give the same families."""
    families: list[Family] = []
    heads: list[tuple[str, tuple[str, frozenset[str], frozenset[str]], bool]] = []
    for p in pieces:
        masked, sig = p.masked, p.signature()
        placed = False
        for fam, (head, head_sig, has_facts) in zip(families, heads, strict=True):
            if head_sig[0] != sig[0]:
                continue
            if (fuzz.ratio(masked, head) >= SAME_WORDING or (
                has_facts and sig == head_sig and fuzz.token_set_ratio(masked, head) >= SAME_FACT
            )) and _values_may_fold(p, fam.pieces[0]):
                fam.pieces.append(p)
                placed = True
                break
        if not placed:
            families.append(Family([p]))
            heads.append((masked, sig, bool(sig[1] or sig[2])))
    return families


def merge_rewordings(families: list[Family], near: judgement.Near | None = None) -> list[Family]:
    """Families that are one statement in other words, with other numbers ("slipped 3.8% against the quote" /
    "lost 5.8% to slippage on the pair"), made one: one quantity is one statement, its values one range. The
    judgement decides, MiniLM where the words leave it open; names, a contrast or another unit keep them apart."""
    heads = [skeleton(f) for f in families]

    def may_be_one(a: Piece, b: Piece) -> bool:  # the cheap tests first: the judgement is asked only after them
        return (a.label == b.label and bool(a.nums) and {n.unit for n in a.nums} == {n.unit for n in b.nums}
                and max(judgement.share_of(a.text, b.text), judgement.share_of(b.text, a.text)) >= judgement.SOME_WORDS)

    if near is not None:  # the sentences the model may be asked about, embedded in one batch
        near.prepare([(a.text, b.text) for i, a in enumerate(heads) for b in heads[:i] if may_be_one(a, b)])
    out: list[Family] = []
    for fam, sk in zip(families, heads, strict=True):
        for kept in out:
            head = skeleton(kept)
            if not may_be_one(head, sk):
                continue
            verdict = judgement.judge(head.text, sk.text, near)
            if verdict.same or (verdict.relation is judgement.Relation.OTHER_VALUE and _may_fold(head, sk)):
                kept.pieces.extend(fam.pieces)
                break
        else:
            out.append(Family(list(fam.pieces)))
    return out


def _may_fold(a: Piece, b: Piece) -> bool:
    """Another value of one slot folds when it is a number (a range), or a name in reports of events ("Fixed in
    PR #600" / "Fixed in PR #783": a list of the events); a name in a state or an instruction ("to eu-west-1
    first" / "to us-east-1 first") is another statement, said in its own words."""
    same_names = {e.lower() for e in a.ents} == {e.lower() for e in b.ents}
    return same_names or (observed(a.text) and observed(b.text))


def observed(text: str) -> bool:
    """A report of something that happened (a past tense, a time word), not a state or an instruction."""
    return _OBSERVATION.search(text) is not None


def _values_may_fold(p: Piece, head: Piece) -> bool:
    """Sentences join one family only when they are one statement: the same (`judgement`), or another number in
    one slot of it (their values then fold into a range). Another name, day or identifier in a slot is another
    statement, and so is any contrast; reports of distinct events stay apart, each with its own values."""
    verdict = judgement.judge(p.text, head.text)
    if verdict.same:
        return True
    return verdict.relation is judgement.Relation.OTHER_VALUE and _may_fold(p, head)


def _slots(p: Piece) -> list[tuple[str, int]]:
    """Each number's slot: its unit and how many numbers of that unit came before it in the sentence."""
    seen: dict[str, int] = {}
    out = []
    for n in p.nums:
        out.append((n.unit, seen.get(n.unit, 0)))
        seen[n.unit] = seen.get(n.unit, 0) + 1
    return out


def skeleton(fam: Family) -> Piece:
    """The family's most typical sentence: it has the most number slots, then the most names (the variant that
    says "17:00 UTC" over "17:00"), then the highest summed similarity."""
    best, best_key = fam.pieces[0], None
    masked = [p.masked for p in fam.pieces]
    for i, p in enumerate(fam.pieces):
        sim = sum(fuzz.ratio(masked[i], m) for m in masked)
        key = (p.negated, len(set(_slots(p))), len(set(p.ents)), sim, -p.member, -p.position)  # a negation too
        if best_key is None or key > best_key:
            best, best_key = p, key
    return best


def _strip_suffix(text: str) -> str:
    return re.sub(r"([km%x]|bn)$", "", text, flags=re.IGNORECASE) if text[-1:] == "%" else text


def render(fam: Family, days: Sequence[str] = ()) -> tuple[str, set[float]]:
    """The family as one sentence, and the values its ranges state (for the fact check). A range says what it is:
    "(3 reports, 2026-10-30 to 2026-12-04)" — values from several reports, never one moment's (`days`: each
    member's day, when known)."""
    sk = skeleton(fam)
    values: dict[tuple[str, int], dict[float, str]] = {}
    for p in fam.pieces:
        for slot, n in zip(_slots(p), p.nums, strict=True):
            values.setdefault(slot, {}).setdefault(n.value, n.text)
    state = not any(observed(p.text) for p in fam.pieces)
    stated: set[float] = set()
    text = sk.text
    # numbers: rebuild the skeleton left to right, each number replaced by its slot's range or list
    out, cursor, k = [], 0, 0
    folded: tuple[str, int] | None = None  # the first slot written as a range: its latest value and trend
    sk_slots = _slots(sk)
    for tok, start, end in fx.tokens_with_spans(sk.text):
        if k >= len(sk.nums) or (fx.parse_number(tok) is None and not fx._RANGE_TOKEN.match(tok)):
            continue
        if fx._RANGE_TOKEN.match(tok):  # a source range "1-3" holds two numbers
            k += 2
            continue
        slot = sk_slots[k]
        k += 1
        seen = values.get(slot, {})
        stated |= set(seen)
        if len(seen) < 2:
            continue
        if state:  # values of a state that disagree: other statements, said in their own words
            continue
        ordered = [seen[v] for v in sorted(seen)]
        written = f"{_strip_suffix(ordered[0])}\u2013{ordered[-1]}"
        folded = folded or slot
        prefix = "$" if tok.startswith("$") and not written.startswith("$") else ""
        out.append(sk.text[cursor:start] + prefix + written)
        cursor = end
    text = "".join(out) + sk.text[cursor:]
    listed = not state and (text := _list_names(fam, sk, text)) != "".join(out) + sk.text[cursor:]
    text = as_statement(text)
    if (out or listed) and (said := _reports(fam, days, folded)):
        text = text[:-1] + f" ({said})" + text[-1]
    return text, stated


def _list_names(fam: Family, sk: Piece, text: str) -> str:
    """In reports of events, names that differ at one place (difflib on the masked words) become the list of
    the events: "Fixed in PR #600 and #783". Never "or": that would be a statement no source made; never a day
    or a month ("since Saturday and Sunday" says neither report)."""
    sk_words = sk.text.split()
    listed: dict[int, list[str]] = {}
    names = {e.lower() for p in fam.pieces for e in p.ents}

    def key(w: str) -> str:  # a name as itself ("#600" is no number), other words masked
        return w.lower().strip(".,;:!?") if w.lower().strip(".,;:!?") in names else mask(w)

    for p in fam.pieces:
        if p is sk:
            continue
        words = p.text.split()
        matcher = difflib.SequenceMatcher(a=[key(w) for w in sk_words], b=[key(w) for w in words], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1:
                a, b = sk_words[i1].strip(".,;:!?"), words[j1].strip(".,;:!?")
                if a.lower() in names and b.lower() in names and a != b and not {a.lower(), b.lower()} & judgement.DAYS:
                    listed.setdefault(i1, [a])
                    if b not in listed[i1]:
                        listed[i1].append(b)
    words = text.split()
    if not listed or len(words) != len(sk_words):  # positions match word for word only without ranges
        return text
    for i, items in listed.items():
        tail = words[i][len(words[i].rstrip(".,;:!?")) :]
        words[i] = (", ".join(items[:-1]) + " and " + items[-1]) + tail
    return " ".join(words)


_TREND = re.compile(r" ?\((?:(\d+ reports)(?:, [^)]*)?|latest [^)]*)\)")


def without_trend(text: str) -> str:
    """A folded sentence with its reports said short ("(6 reports)"), or with no trend at all where its reports
    are the whole summary's (its bracket says them): where the whole does not fit a summary."""
    return _TREND.sub(lambda m: f" ({m.group(1)})" if m.group(1) else "", text)


def _reports(fam: Family, days: Sequence[str], slot: tuple[str, int] | None = None) -> str:
    """What a folded sentence stands for: how many reports over which days — unless they are every member of the
    summary, which its bracket says ("[6 memories, …]") — and, for a range where the days are known, the latest
    value and the direction, when the values move one way. "" when there is nothing to add."""
    known = sorted({days[m] for m in fam.members if m < len(days) and days[m]})
    n = len(fam.members)
    if not known:
        return f"{n} reports"
    every = sorted(d for d in days if d)
    parts = []
    if not (n == len(days) and known[0] == every[0] and known[-1] == every[-1]):
        parts.append(f"{n} reports, {known[0]}" + (f" to {known[-1]}" if known[-1] != known[0] else ""))
    dated = sorted((days[p.member], p.position, n.value, n.text + (f" {n.unit}" if n.unit.isalpha() and not
                    n.text.lower().endswith(n.unit) else "")) for p in fam.pieces if p.member < len(days)
                   and days[p.member] for s, n in zip(_slots(p), p.nums, strict=True) if s == slot)  # fmt: skip
    if slot is not None and len({d for d, *_ in dated}) >= 2:
        by_day = [v for _, _, v, _ in dated]
        trend = ", rising" if all(a < b for a, b in zip(by_day, by_day[1:], strict=False)) else (
            ", falling" if all(a > b for a, b in zip(by_day, by_day[1:], strict=False)) else "")  # fmt: skip
        parts.append(f"latest {dated[-1][3]}{trend}")
    return ", ".join(parts)


def as_statement(sentence: str) -> str:
    """A clause as a sentence of its own: its trailing ';' or ',' turned into a full stop ("… me;." was written),
    its first letter capitalised (where the verifier reads a sentence as beginning)."""
    s = sentence.strip().rstrip(";,: ")
    if s and s[-1] not in ".!?":
        s += "."
    return s[0].upper() + s[1:] if s else s
