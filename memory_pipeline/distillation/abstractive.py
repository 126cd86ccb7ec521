"""The offline distiller's text work: align the members' sentences, keep a shared skeleton once,
fold differing numbers into ranges and differing names into short lists, and state disagreements.

Sentences are grouped into families: near-identical wording once numbers and negations are masked
(rapidfuzz `ratio` ≥ `SAME_WORDING`), or the same speaker, the same named entities and the same kinds of
numbers with loosely similar words (`token_set_ratio` ≥ `SAME_FACT`) — "Lost 5.8% to slippage on JTO/USDT"
and "Market order on JTO/USDT slipped 6.1%" state one fact. A family is written once, as its most typical
sentence (the skeleton) with each number slot replaced by the range of the family's values ("2.3–8.0%") and
each differing name, aligned with difflib, by the list of names ("Saturday or Sunday"). When the family
describes a state (no past-tense verb) its differing values are a contradiction and are stated as such, and a
family whose members disagree on a negation states both sides. Pure and deterministic: no model, no clock.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rapidfuzz import fuzz

from memory_pipeline.statements import facts as fx
from memory_pipeline.verification import faithfulness

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


def _values_may_fold(p: Piece, head: Piece) -> bool:
    """Sentences with other values join one family (their values then fold into a range) only when they are the
    same statement about the same thing; reports of distinct events stay apart, each with its own values."""
    if {n.value for n in p.nums} == {n.value for n in head.nums}:
        return True
    return faithfulness.same_statement(p.text, head.text)


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


def reversed_(pos: Sequence[Piece], neg: Sequence[Piece]) -> bool:
    """A reversal: a negated sentence worded like an affirmative one once the negation is masked."""
    return any(_only_negation_differs(p.text, q.text) for p in pos for q in neg)


def _only_negation_differs(a: str, b: str) -> bool:
    """ "Deploy on Fridays" / "Never deploy on Fridays": the words differ only by negations (and at most one
    other word, e.g. an auxiliary), numbers aside."""

    def words(text: str) -> list[str]:
        plain = [w.strip(".,;:!?\"'()") for w in text.lower().split()]
        return ["¬" if _NEG_MASK.fullmatch(w + " ") else mask(w) for w in plain if w]

    wa, wb = words(a), words(b)
    other = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=wa, b=wb, autojunk=False).get_opcodes():
        if tag != "equal":
            other += sum(1 for w in wa[i1:i2] + wb[j1:j2] if w != "¬")
    return other <= 1 and wa.count("¬") != wb.count("¬")


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _strip_suffix(text: str) -> str:
    return re.sub(r"([km%x]|bn)$", "", text, flags=re.IGNORECASE) if text[-1:] == "%" else text


def render(fam: Family) -> tuple[str, set[float]]:
    """The family as one sentence, and the values its ranges/lists state (for the fact check)."""
    sk = skeleton(fam)
    neg = [p for p in fam.pieces if p.negated]
    pos = [p for p in fam.pieces if not p.negated]
    if reversed_(pos, neg):  # some members say it, others deny it in the same words: state both, never blend
        major, minor = (pos, neg) if len(pos) >= len(neg) else (neg, pos)
        said = skeleton(Family(list(major)))
        cue = fx.NEGATION.search(minor[0].text) if minor is neg else None
        other = cue.group(0).lower() if cue else "the opposite"
        verb = "says" if len(minor) == 1 else "say"
        return (
            f"Members disagree: {len(major)} say \u201c{_bare(said.text)}\u201d, {len(minor)} {verb} {other}.",
            {n.value for p in fam.pieces for n in p.nums},
        )
    values: dict[tuple[str, int], dict[float, str]] = {}
    for p in fam.pieces:
        for slot, n in zip(_slots(p), p.nums, strict=True):
            values.setdefault(slot, {}).setdefault(n.value, n.text)
    state = not any(_OBSERVATION.search(p.text) for p in fam.pieces)
    contradicted = False
    stated: set[float] = set()
    text = sk.text
    # numbers: rebuild the skeleton left to right, each number replaced by its slot's range or list
    out, cursor, k = [], 0, 0
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
        ordered = [seen[v] for v in sorted(seen)]
        if state:
            contradicted = True
            written = _join([_strip_suffix(t) for t in ordered[:-1]] + [ordered[-1]])
        else:
            written = f"{_strip_suffix(ordered[0])}\u2013{ordered[-1]}"
        prefix = "$" if tok.startswith("$") and not written.startswith("$") else ""
        out.append(sk.text[cursor:start] + prefix + written)
        cursor = end
    text = "".join(out) + sk.text[cursor:]
    text = _fold_names(fam, sk, text)
    text = as_statement(text)
    if contradicted:
        first = text.split(" ", 1)[0].strip(".,;:")
        names = {e.lower() for p in fam.pieces for e in p.ents}
        keep = first.lower() in names or sum(c.isupper() for c in first) >= 2
        text = f"Members disagree: {text if keep else text[0].lower() + text[1:]}"
    return text, stated


def _fold_names(fam: Family, sk: Piece, text: str) -> str:
    """Names that differ at the same place (difflib on the masked words) become a list: "since Saturday or Sunday"."""
    sk_words = sk.text.split()
    alternatives: dict[int, list[str]] = {}
    names = {e.lower() for p in fam.pieces for e in p.ents}
    for p in fam.pieces:
        if p is sk:
            continue
        words = p.text.split()
        matcher = difflib.SequenceMatcher(a=[mask(w) for w in sk_words], b=[mask(w) for w in words], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1:
                a, b = sk_words[i1].strip(".,;:!?"), words[j1].strip(".,;:!?")
                if a.lower() in names and b.lower() in names and a != b:
                    alternatives.setdefault(i1, [a])
                    if b not in alternatives[i1]:
                        alternatives[i1].append(b)
    if not alternatives:
        return text
    words = text.split()
    if len(words) != len(sk_words):  # numbers were folded into ranges: positions still match word for word
        return text
    for i, alts in alternatives.items():
        tail = words[i][len(words[i].rstrip(".,;:!?")) :]
        words[i] = _join(sorted(alts)) + tail
    return " ".join(words)


def _bare(sentence: str) -> str:
    return sentence.strip().rstrip(".!?;")


def as_statement(sentence: str) -> str:
    """A clause as a sentence of its own: its trailing ';' or ',' turned into a full stop ("… me;." was written),
    its first letter capitalised (where the verifier reads a sentence as beginning)."""
    s = sentence.strip().rstrip(";,: ")
    if s and s[-1] not in ".!?":
        s += "."
    return s[0].upper() + s[1:] if s else s
