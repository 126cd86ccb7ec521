"""Do two statements say the same thing? The one judgement the night's distiller, its verifier and grade,
`context` and the versioner all ask, answered one of three ways:

- `SAME`: a paraphrase — reordered or reworded, the same values;
- `OTHER_VALUE`: another value of one slot — another event, or another version of one fact: exactly one
  value, name, day or identifier differs ("took 28 minutes" / "took 51 minutes", "to eu-west-1" / "to
  us-east-1");
- `DIFFERENT`: a negation, antonym, direction, comparison, quantifier, modality, sign, unit or order of roles
  differs, one adds an exception, a condition or another party, a qualifier names another thing — or they are
  simply about different things.

Word order and function words count: a bag of content words is not a statement. The two sentences are aligned
word by word (difflib over their words, values masked); where the wording is close, each span where they differ
is judged on its own; where it is not (a paraphrase reorders and rewords), the contrast words, values and names
of the whole must agree and the content words must mostly match. MiniLM (`Near`) is asked only where the words
leave a verdict open. Labelled pairs: `benchmarks/same_statement.json`, `python -m benchmarks same-statement`.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from memory_pipeline.statements import facts as fx

if TYPE_CHECKING:
    import numpy as np


class Relation(StrEnum):
    SAME = "same"
    OTHER_VALUE = "other_value"
    DIFFERENT = "different"


@dataclass(frozen=True)
class Verdict:
    relation: Relation
    reason: str = ""

    @property
    def same(self) -> bool:
        return self.relation is Relation.SAME


TIGHT = 0.6  # share of aligned words above which two wordings are judged span by span
SAME_WORDS = 0.85  # share of content words two loose wordings must share to be the same without a model
SOME_WORDS = 0.34  # ... and at least this share, with MiniLM's cosine, to be asked of the model at all
SAME_COSINE = 0.80  # MiniLM cosine at which two loose wordings with some shared words say the same
SYNONYM_COSINE = 0.86  # ... at which two close wordings with one word replaced by another say the same
_STEM = 5  # letters a word is compared by: "apologise", "apologies", "apologised" are one word

Encode = Callable[[Sequence[str]], "np.ndarray"]

# ---- reading a statement: words, names and values, in order ----

_RAW = re.compile(r"[+\-\u2212]?[$£€]?[@#]?\w+(?:[-\u2013/.,:'’]\w+)*%?|[,&]")
_VALUE = re.compile(
    r"(?P<sign>[+\-\u2212])?(?P<cur>[$£€])?(?P<num>\d+(?:,\d{3})*(?:\.\d+)?|\d{1,2}:\d{2})"
    r"(?:[\u2013-](?P<hi>\d+(?:,\d{3})*(?:\.\d+)?))?(?P<unit>%|[a-zA-Z]{1,7})?"
)
# days and months: when something happened, read as the name in a slot (never a party to it); in calendar order
# (a short form opens its month's name), so a stated start (`statements.starts`) reads its day from the same list
WEEKDAYS = tuple("monday tuesday wednesday thursday friday saturday sunday".split())
MONTHS = tuple("january february march april may june july august september october november december".split())
DAYS = frozenset((*WEEKDAYS, *MONTHS, *"jan feb mar apr jun jul aug sep sept oct nov dec".split()))
_FRAME = re.compile(rf"{fx.FRAME.pattern}|\(since \d{{4}}-\d{{2}}-\d{{2}}; was [^)]*\)")


@dataclass(frozen=True)
class Word:
    text: str  # as written, less a sign or currency
    kind: str  # "word", "name" or "value"
    key: str  # what alignment compares: a word's stem, a name lower-cased, "#" for any value
    value: tuple[str, float, float, str] | None = None  # sign, low, high, unit


@dataclass(frozen=True)
class _Lexicon:
    tags: dict[str, tuple[str, str]]  # word → (class, tag)
    one_sided: frozenset[str]  # classes where one statement carrying a tag is enough to set them apart
    groups: tuple[frozenset[str], ...]  # words that set statements apart, one in each
    units: dict[str, str]  # a word after a number → its unit
    phrases: frozenset[str]  # joined with '_' before lookup
    symmetric: frozenset[str]  # connectors whose sides may swap
    when: frozenset[str]  # when a report was made, not what it says


@lru_cache(maxsize=1)
def _lexicon() -> _Lexicon:
    data = json.loads(Path(__file__).with_name("contrasts.json").read_text(encoding="utf-8"))
    tags: dict[str, tuple[str, str]] = {}
    for name, spec in data["classes"].items():
        for tag, words in spec["tags"].items():
            for w in words:
                tags.setdefault(w, (name, tag))
    return _Lexicon(
        tags,
        frozenset(name for name, spec in data["classes"].items() if spec["one_sided"]),
        tuple(frozenset(g) for g in [*data["groups"], *data["antonyms"]]),
        dict(data["units"]),
        frozenset(data["phrases"]),
        frozenset(data["symmetric"]),
        frozenset(data["when"]),
    )


def _to_float(text: str) -> float:
    if ":" in text:
        h, m = text.split(":")
        return int(h) * 60 + int(m)
    return float(text.replace(",", ""))


@lru_cache(maxsize=1 << 16)
def read(text: str) -> tuple[Word, ...]:
    """`text`'s words in order: values (sign, number or range, unit — a unit word after a number is its unit),
    names (identifiers, @handles, days and months, capitalised words not opening the sentence) and words."""
    lex = _lexicon()
    tags, unit_words, phrases = lex.tags, lex.units, lex.phrases
    raw = _RAW.findall(_FRAME.sub(" ", text))
    out: list[Word] = []
    i = 0
    while i < len(raw):
        tok = raw[i]
        m = _VALUE.fullmatch(tok)
        if m and (m.group("unit") is None or m.group("unit").lower() in unit_words):
            unit = unit_words.get((m.group("unit") or "").lower(), "")
            nxt = raw[i + 1].lower() if i + 1 < len(raw) else ""
            if not unit and nxt in unit_words and not (nxt == "m" and i + 2 < len(raw)):
                unit, i = unit_words[nxt], i + 1
            unit = unit or {"$": "$", "£": "£", "€": "€"}.get(m.group("cur") or "", "")
            if m.group("cur") and unit != m.group("cur"):
                unit = f"{m.group('cur')}{unit}"
            sign = "-" if m.group("sign") in ("-", "\u2212") else ""
            lo = _to_float(m.group("num"))
            hi = _to_float(m.group("hi")) if m.group("hi") else lo
            out.append(Word(tok, "value", "#", (sign, lo, hi, unit)))
            i += 1
            continue
        bare = re.sub(r"['’]s$", "", tok.lstrip("+-\u2212$£€"))
        low = bare.lower()
        n = next((n for n in (3, 2) if " ".join(r.lower() for r in raw[i : i + n]) in phrases), 0)
        if n:  # "at most", "no more than", "except for": one word of its class
            out.append(Word(bare, "word", "_".join(r.lower() for r in raw[i : i + n])))
            i += n
            continue
        if _is_name(bare, first=not out):
            out.append(Word(bare, "name", low))
        else:
            out.append(Word(bare, "word", low if low in tags or low in unit_words else stem(low)))
        i += 1
    return tuple(out)


def stem(word: str) -> str:
    """A word's first letters less an inflection: "pushing" and "push", "stored" and "stores" are one word."""
    for suffix in ("ing", "ed", "es", "e", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:_STEM]


def root(word: str) -> str:
    """`stem`, with an agent noun read as its verb: "pager" and "paging", "owner" and "owns" are one word."""
    for suffix in ("ers", "er"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return stem(word[: -len(suffix)])
    return stem(word)


def _is_name(word: str, first: bool) -> bool:
    low = word.lower()
    if low in DAYS and low != "may" or word.startswith(("@", "#")):
        return True
    if any(c.isdigit() for c in word) and any(c.isalpha() for c in word):
        return True
    if re.search(r"[a-z][_/][a-z]", low):
        return True
    if low in fx._NOT_NAMES or not word[:1].isupper():
        return False
    return not first or sum(c.isupper() for c in word) >= 2


def _content(words: Sequence[Word]) -> list[str]:
    """The words that carry what a statement is about: names, and words that are neither function words nor
    contrast words (those are compared by class)."""
    lex = _lexicon()
    tags = lex.tags
    return [
        w.key
        for w in words
        if w.kind == "name"
        or (
            w.kind == "word"
            and len(w.text) > 2
            and w.text.lower() not in fx.STOP_WORDS
            and w.key not in tags
            and w.text.lower() not in lex.when
        )
    ]


@lru_cache(maxsize=1 << 16)
def _tags(words: tuple[Word, ...]) -> dict[str, Counter[str]]:
    """The contrast tags the words carry, by class ('over' and the like only before a number)."""
    tags = _lexicon().tags
    out: dict[str, Counter[str]] = {}
    for i, w in enumerate(words):
        hit = tags.get(w.key) or tags.get(w.text.lower())
        if hit is None:
            continue
        if w.key in ("over", "under", "above", "below", "beneath") and not (
                i + 1 < len(words) and words[i + 1].kind == "value"):  # fmt: skip
            continue
        out.setdefault(hit[0], Counter())[hit[1]] += 1
    return out


@lru_cache(maxsize=1 << 16)
def _negations(text: str) -> int:
    return len(fx.NEGATION.findall(text))


# ---- the judgement ----


def _contrast(a: str, b: str, wa: tuple[Word, ...], wb: tuple[Word, ...]) -> str | None:
    """What sets two statements apart whatever else they share: a negation, a word of one class against
    another of it ('at most' / 'at least', 'before' / 'after', 'must' / 'may'), a one-sided restriction or
    comparison, or two words of one group of look-alikes ('staging' / 'production', 'front' / 'back')."""
    if (_negations(a) > 0) != (_negations(b) > 0):
        return "a negation differs"
    ta, tb = _tags(wa), _tags(wb)
    one_sided = _lexicon().one_sided
    for cls in sorted(set(ta) | set(tb)):
        ca, cb = ta.get(cls, Counter()), tb.get(cls, Counter())
        if ca and cb and set(ca) != set(cb):
            return f"{cls} differs ({'/'.join(sorted(set(ca) ^ set(cb))).lower()})"
        if cls in one_sided and bool(ca) != bool(cb):
            return f"one adds a {cls} ({'/'.join(sorted(set(ca) | set(cb))).lower()})"
    if (apart := _qualifiers(wa, wb)) is not None:
        return f"{'/'.join(sorted(apart[0]))} against {'/'.join(sorted(apart[1]))}"
    return None


def _qualifiers(wa: tuple[Word, ...], wb: tuple[Word, ...]) -> tuple[frozenset[str], frozenset[str]] | None:
    ga, gb = _grouped(wa), _grouped(wb)
    for g in sorted(ga.keys() & gb.keys()):
        if ga[g] - gb[g] and gb[g] - ga[g]:
            return ga[g] - gb[g], gb[g] - ga[g]
    return None


@lru_cache(maxsize=1 << 16)
def _grouped(words: tuple[Word, ...]) -> dict[int, frozenset[str]]:
    """The words of each group of look-alikes the statement has, by the group's place in the list."""
    index = _group_index()
    found: dict[int, set[str]] = {}
    for w in {w.text.lower() for w in words} | {w.key for w in words}:
        for g in index.get(w, ()):
            found.setdefault(g, set()).add(w)
    return {g: frozenset(ws) for g, ws in found.items()}


@lru_cache(maxsize=1)
def _group_index() -> dict[str, tuple[int, ...]]:
    index: dict[str, list[int]] = {}
    for g, group in enumerate(_lexicon().groups):
        for w in group:
            index.setdefault(w, []).append(g)
    return {w: tuple(gs) for w, gs in index.items()}


def qualifiers(a: str, b: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The words of one group of look-alikes (`contrasts.json` groups and antonyms) that `a` has and `b` lacks and
    the other way round ("front" / "back", "staging" / "production", "trade" / "day"), or None: the contrast by
    which `judge` calls two statements of one shape DIFFERENT, asked by the Versioner, for which two statements set
    apart by a qualifier are two facts, never two versions of one."""
    return _qualifiers(*read_pair(a, b))


def _swapped_roles(wa: Sequence[Word], wb: Sequence[Word]) -> bool:
    """The same words with two of them exchanged ("atlas is faster than borealis", "from staging to
    production"), unless only a symmetric connector stands between them ("Hannah and Joe")."""
    ka, kb = [w.key for w in wa], [w.key for w in wb]
    if len(ka) != len(kb) or Counter(ka) != Counter(kb) or ka == kb:
        return False
    diff = [i for i, (x, y) in enumerate(zip(ka, kb, strict=True)) if x != y]
    if len(diff) != 2:
        return False
    i, j = diff
    if ka[i] != kb[j] or ka[j] != kb[i]:
        return False
    between = set(ka[i + 1 : j])
    return not (between and between <= _lexicon().symmetric)


def _value_relation(x: Word, y: Word) -> str | None:
    """'' for the same value, 'other' for another value of the slot, or what makes them different."""
    assert x.value is not None and y.value is not None
    sx, lx, hx, ux = x.value
    sy, ly, hy, uy = y.value
    if ux != uy and ux and uy:
        return f"the unit differs ({ux} / {uy})"
    if sx != sy and (lx or ly):
        return "the sign differs"
    return "" if (lx, hx) == (ly, hy) else "other"


def read_pair(a: str, b: str) -> tuple[tuple[Word, ...], tuple[Word, ...]]:
    """Both statements read, a word that opens one sentence taken as a name where the other names it."""
    wa, wb = read(a), read(b)
    na = {w.key for w in wa if w.kind == "name"}
    nb = {w.key for w in wb if w.kind == "name"}
    return _promote(wa, nb), _promote(wb, na)


def _promote(words: tuple[Word, ...], names: set[str]) -> tuple[Word, ...]:
    if not words or words[0].kind != "word" or words[0].text.lower() not in names:
        return words
    return (Word(words[0].text, "name", words[0].text.lower()), *words[1:])


class _Open(Exception):
    """The words leave the verdict to the model."""


_WORDS = object()  # ask the words alone: `_cosine` raises `_Open` where the model would be asked


def _cosine(near: object, a: str, b: str) -> float | None:
    if near is _WORDS:
        raise _Open
    return near(a, b) if isinstance(near, Near) else near  # type: ignore[return-value]


@lru_cache(maxsize=1 << 17)
def _by_words(a: str, b: str) -> Verdict | None:
    """The verdict the words give, or None where only the model can (cached: the night asks a pair many times)."""
    try:
        return _judge(a, b, _WORDS)
    except _Open:
        return None


def judge(a: str, b: str, near: Near | float | None = None) -> Verdict:
    """Whether `a` and `b` say the same thing (see the module's docstring). `near` is MiniLM's cosine of the
    two, or a `Near` that gives it, asked only when the words leave the verdict open."""
    verdict = _by_words(a, b)
    return verdict if verdict is not None else _judge(a, b, near)


def _judge(a: str, b: str, near: object) -> Verdict:
    wa, wb = read_pair(a, b)
    if [w.key for w in wa] == [w.key for w in wb] and [w.value for w in wa] == [w.value for w in wb]:
        return Verdict(Relation.SAME, "the same words")
    if (why := _contrast(a, b, wa, wb)) is not None:
        return Verdict(Relation.DIFFERENT, why)
    if _swapped_roles(wa, wb):
        return Verdict(Relation.DIFFERENT, "roles swapped")
    matcher = difflib.SequenceMatcher(None, [w.key for w in wa], [w.key for w in wb], autojunk=False)
    if matcher.ratio() >= TIGHT:
        return _by_spans(a, b, wa, wb, matcher.get_opcodes(), near)
    return _by_whole(a, b, wa, wb, near)


def _by_spans(a: str, b: str, wa: Sequence[Word], wb: Sequence[Word],
              ops: Sequence[tuple[str, int, int, int, int]], near: object) -> Verdict:  # fmt: skip
    """Close wordings, span by span: values at one place compared, a value or name replaced by another is
    another value of its slot; a content word added or replaced says something else (unless MiniLM finds a
    synonym)."""
    slots: list[str] = []
    reworded: list[str] = []
    # a phrase moved ("On Mondays the report …" / "The report … on Mondays") is not added on either side
    gone = Counter(k for tag, i1, i2, _, _ in ops if tag == "delete" for k in _content(wa[i1:i2]))
    came = Counter(k for tag, _, _, j1, j2 in ops if tag == "insert" for k in _content(wb[j1:j2]))
    moved = gone & came
    for tag, i1, i2, j1, j2 in ops:
        xs, ys = wa[i1:i2], wb[j1:j2]
        if tag == "equal":
            for x, y in zip(xs, ys, strict=True):
                if x.kind == "value":
                    rel = _value_relation(x, y)
                    if rel == "other":
                        slots.append(f"{x.text} / {y.text}")
                    elif rel:
                        return Verdict(Relation.DIFFERENT, rel)
            continue
        cx, cy = _content(xs), _content(ys)
        if tag != "replace" and not (Counter(cx or cy) - moved):
            continue
        if tag == "replace" and all(w.kind in ("name", "value") for w in (*xs, *ys)):
            if any(w.kind == "value" for w in xs) != any(w.kind == "value" for w in ys):
                return Verdict(Relation.DIFFERENT, f"{_show(xs)} / {_show(ys)}")
            slots.append(f"{_show(xs)} / {_show(ys)}")
        elif not cx and not cy:
            continue  # function words only: "the", "a", "of each" / "of every"
        elif tag != "replace":
            return Verdict(Relation.DIFFERENT, f"one adds {_show(xs or ys)!r}")
        else:
            reworded.append(f"{_show(xs)} / {_show(ys)}")
    if len(slots) > 1:
        return Verdict(Relation.DIFFERENT, f"more than one slot differs ({'; '.join(slots[:3])})")
    if reworded and (len(reworded) > 1 or (cosine := _cosine(near, a, b)) is None or cosine < SYNONYM_COSINE):
        return Verdict(Relation.DIFFERENT, f"reworded: {reworded[0]}")
    if slots:
        return Verdict(Relation.OTHER_VALUE, slots[0])
    return Verdict(Relation.SAME, "reworded" if reworded else "the same wording")


def _show(words: Sequence[Word]) -> str:
    return " ".join(w.text for w in words)


def _by_whole(a: str, b: str, wa: Sequence[Word], wb: Sequence[Word], near: object) -> Verdict:
    """Loose wordings: the same names, values that pair up, and most content words (or MiniLM's verdict)."""
    na = {w.key for w in wa if w.kind == "name"}
    nb = {w.key for w in wb if w.kind == "name"}
    if na != nb:
        return Verdict(Relation.DIFFERENT, f"names differ ({', '.join(sorted(na ^ nb)[:3])})")
    va = sorted((w for w in wa if w.kind == "value"), key=lambda w: w.value or ("", 0, 0, ""))
    vb = sorted((w for w in wb if w.kind == "value"), key=lambda w: w.value or ("", 0, 0, ""))
    if len(va) != len(vb):
        return Verdict(Relation.DIFFERENT, "they state different values")
    other = 0
    for x, y in zip(va, vb, strict=True):
        rel = _value_relation(x, y)
        if rel == "other":
            other += 1
        elif rel:
            return Verdict(Relation.DIFFERENT, rel)
    share = _shared(wa, wb)
    if share < SOME_WORDS or (share < SAME_WORDS and ((cosine := _cosine(near, a, b)) is None
                                                      or cosine < SAME_COSINE)):  # fmt: skip
        return Verdict(Relation.DIFFERENT, f"other words ({share:.2f} shared)")
    if other > 1:
        return Verdict(Relation.DIFFERENT, "more than one value differs")
    return Verdict(Relation.OTHER_VALUE if other else Relation.SAME, "reworded")


def _shared(wa: Sequence[Word], wb: Sequence[Word]) -> float:
    """The smaller of the two shares of content words the other sentence has."""
    ca, cb = set(_content(wa)), set(_content(wb))
    if not ca or not cb:
        return 0.0
    both = len(ca & cb)
    return min(both / len(ca), both / len(cb))


@lru_cache(maxsize=1 << 16)
def content_words(text: str) -> frozenset[str]:
    """The words that carry what `text` is about (names, and words neither function nor contrast words), as the
    judgement compares them."""
    return frozenset(_content(read(text)))


def share_of(sentence: str, statement: str) -> float:
    """The share of `statement`'s content words `sentence` has."""
    want = content_words(statement)
    return len(want & content_words(sentence)) / len(want) if want else 0.0


# ---- does a (perhaps longer) sentence say a statement? ----


def says(sentence: str, statement: str, near: Near | float | None = None, ranges: bool = True) -> bool:
    """Whether a reader of `sentence` knows `statement`: they are the same statement, or `sentence` holds it —
    every value it states (a range over reports of it counts, unless `ranges` is False: then only the value
    itself does), every name, no word that sets them apart, and its words (or, where some are there, MiniLM's
    verdict)."""
    ws, wt = read_pair(sentence, statement)
    share = share_of(sentence, statement)
    if share < SOME_WORDS and [w.key for w in ws] != [w.key for w in wt]:
        return False  # the cheap test first: most sentences a statement is asked of share few of its words
    verdict = judge(sentence, statement, near)
    if verdict.same:
        return True
    if _contrast(sentence, statement, ws, wt) is not None or _swapped_roles(ws, wt):
        return False
    if not {w.key for w in wt if w.kind == "name"} <= {w.key for w in ws if w.kind == "name"}:
        return False
    for v in (w for w in wt if w.kind == "value"):
        if not any(_holds(x, v) if ranges else x.value == v.value for x in ws if x.kind == "value"):
            return False
    if verdict.relation is Relation.OTHER_VALUE and not (ranges and _ranges(ws)):
        return False
    if share >= SAME_WORDS:
        return True
    cosine = near(sentence, statement) if isinstance(near, Near) else near
    return cosine is not None and cosine >= SAME_COSINE


def _ranges(words: Sequence[Word]) -> bool:
    return any(w.value is not None and w.value[1] != w.value[2] for w in words)


def _holds(x: Word, v: Word) -> bool:
    """Whether the value `x` (perhaps a range) states the value `v`: the same unit and sign, `v` within it."""
    assert x.value is not None and v.value is not None
    sx, lx, hx, ux = x.value
    sv, lv, hv, uv = v.value
    if ux != uv and ux and uv:
        return False
    if lx == hx:
        return (sx, lx, hx) == (sv, lv, hv)
    lo = -hx if sx else lx
    return lo - 1e-9 <= (-lv if sv else lv) <= hx + 1e-9 and lo - 1e-9 <= hv <= hx + 1e-9


def same_statement(a: str, b: str, near: Near | float | None = None) -> bool:
    """One statement, perhaps with another value of one slot: what a range may be built over."""
    return judge(a, b, near).relation is not Relation.DIFFERENT


# ---- MiniLM, asked only where the words leave a verdict open ----


class Near:
    """The embedder's cosine between two texts (None without an encoder). Embedding is most of what judging
    costs, so only the texts of pairs whose verdict the words leave open are embedded (`prepare`, one batch)."""

    def __init__(self, encode: Encode | None) -> None:
        self._encode = encode
        self._vectors: dict[str, np.ndarray] = {}

    def prepare(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Embed, in one batch, the texts of the `pairs` (sentence, statement) the words cannot decide."""
        if self._encode is None:
            return
        todo = dict.fromkeys(t for a, b in pairs if _open(a, b) for t in (a, b))
        self._add([t for t in todo if t not in self._vectors])

    def _add(self, texts: list[str]) -> None:
        if texts and self._encode is not None:
            self._vectors.update(zip(texts, self._encode(texts), strict=True))

    def __call__(self, a: str, b: str) -> float | None:
        if self._encode is None:
            return None
        self._add([t for t in dict.fromkeys((a, b)) if t not in self._vectors])
        return float(self._vectors[a] @ self._vectors[b])


def _open(a: str, b: str) -> bool:
    """Whether the words may leave the verdict on `a` and `b` to the model: some but not most of either's content
    words in the other (a close wording with one word replaced asks the model too, one pair at a time)."""
    return SOME_WORDS <= share_of(a, b) < SAME_WORDS or SOME_WORDS <= share_of(b, a) < SAME_WORDS
