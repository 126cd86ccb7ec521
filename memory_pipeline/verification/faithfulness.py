"""Whether an abstraction says only what its sources said: every value it states is stated by a source, and the
values one of its sentences puts together were stated together — by one source, or by sources that are the
same statement (the same words, only the numbers differ: "pytest took 16 minutes" reported three times), where
a range is honest. A range or list built from different events ("Sharpe 0.17–1.87" over three strategies), a
value with its sign lost (−0.09 written 0.09), or a clock time torn into numbers ("02–03:00–30") is not.

Pure and shared: the night's judge rejects an unfaithful distillation from any distiller (offline or Claude),
the offline distiller folds values only where this allows, and the night's grade counts what it finds.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from memory_pipeline.statements import facts as fx

if TYPE_CHECKING:
    import numpy as np

# what the night writes around a distillation, not a claim of its sources
_FRAME = re.compile(rf"{fx.FRAME.pattern}|\(since \d{{4}}-\d{{2}}-\d{{2}}; was [^)]*\)|\b\d+ says?\b")  # "4 say …"
_TIME = re.compile(r"(?<![\w:.])([01]?\d|2[0-3]):([0-5]\d)(?::[0-5]\d)?(?!\w|:\d)")
_MINUS = "-\u2212\u2013"
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[A-Z0-9\"'(\[\u2212-])")


@dataclass(frozen=True)
class Unfaithful:
    """One sentence of an abstraction its sources do not support, and why."""

    sentence: str
    reason: str

    def __str__(self) -> str:
        return f"{self.reason}: {self.sentence[:120]!r}"


SAME_WORDS = 0.5  # the share of content words two reports of one thing have in common, at least


def same_statement(a: str, b: str) -> bool:
    """One statement about one thing, perhaps with other values: the same named things (entities, identifiers:
    "carry trade on BTC" and "momentum on ETH" are two things), the same negation, and most content words in
    common (Jaccard ≥ SAME_WORDS), numbers aside — so reports of one recurring measurement ("pytest took 16
    minutes", "the pytest run took 48 minutes again") are one statement, and a range over them is honest."""
    if _masked(a) == _masked(b):
        return True
    if fx.has_negation(a) != fx.has_negation(b) or _named(a) != _named(b) or swapped(a, b):
        return False
    wa, wb = _words(a), _words(b)
    return bool(wa and wb) and len(wa & wb) / len(wa | wb) >= SAME_WORDS


@lru_cache(maxsize=1 << 16)
def _named(text: str) -> frozenset[str]:
    return frozenset(e.lower() for e in fx.entities(_FRAME.sub("", text)) if fx.parse_number(e) is None)


@lru_cache(maxsize=1 << 16)
def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z][a-z']+", _masked(text)) if len(w) > 2 and w not in fx.STOP_WORDS)


@lru_cache(maxsize=1 << 16)
def _masked(text: str) -> str:
    text = _TIME.sub("#", _FRAME.sub("", text.lower()))
    text = re.sub(r"(?<!\w)[$\u2212-]?\d+(?:[.,:]\d+)*(?:[km%x]|bn)?\+?", "#", text)  # not w17, web-04
    return " ".join(re.findall(r"[\w#']+", text))


def values(text: str) -> set[str]:
    """The values `text` states, each as a signed canonical string: clock times whole ("t:02:30"), numbers with
    their sign ("-0.09"); a stated range gives both ends."""
    out = {f"t:{int(m.group(1)):02d}:{m.group(2)}" for m in _TIME.finditer(text)}
    rest = _TIME.sub(" ", text)
    spans = fx.tokens_with_spans(rest)
    for tok, start, _ in spans:
        negative = start > 0 and rest[start - 1] in _MINUS and (start < 2 or not rest[start - 2].isalnum())
        if (r := fx._RANGE_TOKEN.match(tok)) is not None:
            lo = fx.parse_number(r.group(1) + (r.group(2) or r.group(4) or ""))
            hi = fx.parse_number(r.group(3) + (r.group(4) or ""))
            out |= {f"{'-' if negative else ''}{lo:g}"} if lo is not None else set()
            out |= {f"{hi:g}"} if hi is not None else set()
            continue
        v = fx.parse_number(tok)
        if v is not None:
            out.add(f"{'-' if negative else ''}{v:g}")
    return out


def check(sources: Sequence[str], abstraction: str) -> list[Unfaithful]:
    """The abstraction's sentences its sources do not support (empty: faithful)."""
    # sentence by sentence: a memory that reports two things states each in a sentence of its own
    stated = [(s, values(s)) for source in sources for s in _SENTENCE.split(_FRAME.sub(" ", source)) if s.strip()]
    found: list[Unfaithful] = []
    for sentence in _SENTENCE.split(_FRAME.sub(" ", abstraction)):
        sentence = sentence.strip()
        said = values(sentence)
        if not said:
            continue
        missing = sorted(v for v in said if not any(v in vs for _, vs in stated))
        if missing:
            shown = ", ".join(m.removeprefix("t:") for m in missing[:4])
            found.append(Unfaithful(sentence, f"states {shown}, which no source states"))
            continue
        carriers = [s for s, vs in stated if vs & said]
        named = _named(sentence) - frozenset().union(*(_named(c) for c in carriers))
        if named:  # its values come from sources about other things
            shown = ", ".join(sorted(named)[:3])
            found.append(Unfaithful(sentence, f"names {shown} beside values its sources give for other things"))
            continue
        if len(said) < 2 or any(said <= vs for _, vs in stated):
            continue  # one source sentence states them all
        # else a range over reports of one statement: the reports that say what this sentence says cover its
        # values, and they are one statement among themselves
        reports = [(c, vs) for c, vs in stated if vs & said and same_statement(c, sentence)]
        covered = frozenset().union(*(vs for _, vs in reports)) >= said
        if not (covered and all(same_statement(reports[0][0], c) for c, _ in reports[1:])):
            found.append(Unfaithful(sentence, "puts together values of different statements"))
    return found


def rejection_of(found: Sequence[Unfaithful]) -> str | None:
    """The reason to reject an abstraction with these unfaithful sentences (`check`), or None."""
    if not found:
        return None
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"not faithful to its sources: {found[0]}{more}"


# ---- coverage: does the abstraction still say every distinct statement of its sources? ----
# "Says" was calibrated on labelled pairs (benchmarks/statement_pairs.json: paraphrases that must count,
# look-alikes that must not), thresholds chosen on its dev split; `python -m benchmarks statement-pairs` scores both.

COVER_COSINE = 0.80  # MiniLM cosine at which a sentence with some of a statement's words says it
COVER_SOME = 0.4  # ... the share of the statement's content words it must still have
COVER_WORDS = 0.85  # the share of a statement's content words that says it without a model
COVER_FLOOR = 0.8  # the share of its sources' distinct statements an abstraction must say, or it is rejected
MIN_WORDS = 3  # a sentence with fewer content words ("Thanks!", "Again.") states nothing to keep
# when a report was made, not what it says: "failed again today" and "failed again this morning" say one thing
# (a day named with a capital is a name, and names must match)
_WHEN = frozenset("""today tonight yesterday morning evening afternoon again once more still yet monday tuesday
    wednesday thursday friday saturday sunday""".split())
_STEM = 5  # letters a word is compared by: "apologise", "apologies", "apologised" are one word

Encode = Callable[[Sequence[str]], "np.ndarray"]


@lru_cache(maxsize=1 << 16)
def _stems(text: str) -> frozenset[str]:
    return frozenset(_stem_list(text))


@lru_cache(maxsize=1 << 16)
def _stem_list(text: str) -> tuple[str, ...]:
    return tuple(w[:_STEM] for w in re.findall(r"[a-z][a-z']+", _masked(text))
                 if len(w) > 2 and w not in fx.STOP_WORDS and w not in _WHEN)  # fmt: skip


def swapped(a: str, b: str) -> bool:
    """One or two words of `a` replaced in place by others in `b`, the rest in the same order: the mark of a
    look-alike ("the staging database" / "the production database", "per trade" / "per week", "enabled" /
    "disabled"), not of a paraphrase, which reorders and rephrases."""
    ops = [o for o in difflib.SequenceMatcher(None, _stem_list(a), _stem_list(b), autojunk=False).get_opcodes()
           if o[0] != "equal"]  # fmt: skip
    return len(ops) == 1 and ops[0][0] == "replace" and ops[0][2] - ops[0][1] <= 2 and ops[0][4] - ops[0][3] <= 2


def says(sentence: str, statement: str, cosine: float | Near | None = None) -> bool:
    """Whether a reader of `sentence` knows `statement`: the same words once values are masked, or — with the
    same negation, every thing the statement names, and no word swapped for another in place (`swapped`) —
    most of its content words (`COVER_WORDS`, compared by their first letters so inflections match), or some
    of them (`COVER_SOME`) at a MiniLM `cosine` of at least `COVER_COSINE`. `cosine` may be a `Near`, asked only
    when the words leave the verdict open."""
    verdict = _by_words(sentence, statement)
    if verdict is not None:
        return verdict
    if isinstance(cosine, Near):
        cosine = cosine(sentence, statement)
    return cosine is not None and cosine >= COVER_COSINE


@lru_cache(maxsize=1 << 17)
def _share(sentence: str, statement: str) -> float:
    """The share of `statement`'s content words `sentence` has (1 for the same words once values are masked);
    0 where their negation differs or the statement names a thing the sentence does not."""
    if _masked(sentence) == _masked(statement):
        return 1.0
    if fx.has_negation(statement) != fx.has_negation(sentence) or not _named(statement) <= _named(sentence):
        return 0.0
    want = _stems(statement)
    return len(want & _stems(sentence)) / len(want) if want else 0.0


def _by_words(sentence: str, statement: str) -> bool | None:
    """`says` as far as the words decide it; None where only the embedder's cosine can (some of the words)."""
    if _masked(sentence) == _masked(statement):
        return True
    share = _share(sentence, statement)
    if share < COVER_SOME or swapped(statement, sentence):  # the cheap test first: difflib is not
        return False
    return True if share >= COVER_WORDS else None


def statement_like(sentence: str) -> bool:
    """Whether `sentence` states something to keep (not small talk, not a fragment)."""
    return len(_words(sentence)) >= MIN_WORDS


def sentences(text: str) -> list[str]:
    """`text`'s sentences, less what the night writes around a distillation."""
    return [s.strip() for s in _SENTENCE.split(_FRAME.sub(" ", text)) if s.strip()]


@dataclass(frozen=True)
class Coverage:
    """Which of the sources' distinct statements the abstraction says."""

    said: tuple[str, ...]
    missed: tuple[str, ...]

    @property
    def total(self) -> int:
        return len(self.said) + len(self.missed)

    @property
    def share(self) -> float:
        return len(self.said) / self.total if self.total else 1.0


def coverage(sources: Sequence[str], abstraction: str, encode: Encode | None = None) -> Coverage:
    """The sources' distinct statements — their sentences, one per family of sentences that say each other
    (small talk and fragments left out) — split into those some sentence of `abstraction` says and the rest.
    `encode` (texts → unit vectors) adds the embedder's evidence; without it the words alone decide."""
    wanted = list(dict.fromkeys(s for source in sources for s in sentences(source) if statement_like(s)))
    written = sentences(abstraction)
    near = Near(encode)
    # every pair the loops below may ask about; only those the words leave open are embedded, in one batch
    near.prepare([p for i, s in enumerate(wanted) for f in wanted[:i] for p in ((s, f), (f, s))]
                 + [(w, f) for w in written for f in wanted])  # fmt: skip
    families: list[str] = []
    for s in wanted:
        if not any(says(s, f, near) and says(f, s, near) for f in families):
            families.append(s)
    said: list[str] = []
    missed: list[str] = []
    for f in families:
        (said if any(says(w, f, near) for w in written) else missed).append(f)
    return Coverage(tuple(said), tuple(missed))


class CachedEncoder:
    """An encoder that embeds each sentence once: the distiller and the judge ask for the same sentences."""

    def __init__(self, encode: Encode) -> None:
        self._encode = encode
        self._vectors: dict[str, np.ndarray] = {}
        self.encoded = 0  # texts embedded so far (what the night's grade cost is made of)

    def warm(self, texts: Sequence[str]) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if todo:
            self._vectors.update(zip(todo, self._encode(todo), strict=True))
            self.encoded += len(todo)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        self.warm(texts)
        return np.stack([self._vectors[t] for t in texts])


class Near:
    """The embedder's cosine between two texts (None without an encoder). Embedding is most of what judging
    costs, so only the texts of pairs whose verdict the words leave open are embedded (`prepare`, one batch)."""

    def __init__(self, encode: Encode | None) -> None:
        self._encode = encode
        self._vectors: dict[str, np.ndarray] = {}

    def prepare(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Embed, in one batch, the texts of the `pairs` (sentence, statement) `says` cannot decide by words."""
        if self._encode is None:
            return
        todo = dict.fromkeys(t for a, b in pairs if COVER_SOME <= _share(a, b) < COVER_WORDS for t in (a, b))
        self._add([t for t in todo if t not in self._vectors])

    def _add(self, texts: list[str]) -> None:
        if texts and self._encode is not None:
            self._vectors.update(zip(texts, self._encode(texts), strict=True))

    def __call__(self, a: str, b: str) -> float | None:
        if self._encode is None:
            return None
        self._add([t for t in dict.fromkeys((a, b)) if t not in self._vectors])
        return float(self._vectors[a] @ self._vectors[b])


def coverage_reason(c: Coverage, floor: float = COVER_FLOOR) -> str | None:
    """The reason to reject an abstraction with coverage `c` for what it leaves out, or None."""
    if c.share >= floor:
        return None
    return (f"statements dropped: says {len(c.said)} of its sources' {c.total} statements ({c.share:.2f} < "
            f"{floor}); first left out: {c.missed[0][:120]!r}")  # fmt: skip
