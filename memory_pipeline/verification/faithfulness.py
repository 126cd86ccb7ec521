"""Whether an abstraction says only what its sources said: every value it states is stated by a source, and the
values one of its sentences puts together were stated together — by one source, or by sources that are the
same statement (the same words, only the numbers differ: "pytest took 16 minutes" reported three times), where
a range is honest. A range or list built from different events ("Sharpe 0.17–1.87" over three strategies), a
value with its sign lost (−0.09 written 0.09), a clock time torn into numbers ("02–03:00–30"), two statements
fused into one no source made ("to eu-west-1 or us-east-1 first") or several reports told as one moment ("up
2.3–2.8% today") is not. Whether two sentences are one statement is the one judgement, `statements.judgement`.

Pure and shared: the night's judge rejects an unfaithful distillation from any distiller (offline or Claude),
the offline distiller folds values only where this allows, and the night's grade counts what it finds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from memory_pipeline.statements import facts as fx
from memory_pipeline.statements import judgement
from memory_pipeline.statements.judgement import Near, says

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


def check(sources: Sequence[str], abstraction: str, near: Near | None = None) -> list[Unfaithful]:
    """The abstraction's sentences its sources do not support (empty: faithful). `near` (MiniLM) lets a range over
    reports of one statement in other words stand, where the words leave that open."""
    # sentence by sentence: a memory that reports two things states each in a sentence of its own
    stated = [(s, values(s)) for source in sources for s in _SENTENCE.split(_FRAME.sub(" ", source)) if s.strip()]
    found: list[Unfaithful] = []
    for sentence in _SENTENCE.split(_FRAME.sub(" ", abstraction)):
        sentence = sentence.strip()
        if (fused := _fused(sentence, [s for s, _ in stated])) is not None:
            found.append(Unfaithful(sentence, f"fuses two statements into {fused!r}, which no source says"))
            continue
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
        reports = [(c, vs) for c, vs in stated if vs & said and judgement.same_statement(c, sentence, near)]
        covered = frozenset().union(*(vs for _, vs in reports)) >= said
        if not (covered and all(judgement.same_statement(reports[0][0], c, near) for c, _ in reports[1:])):
            found.append(Unfaithful(sentence, "puts together values of different statements"))
        elif _MOMENT.search(sentence):
            found.append(Unfaithful(sentence, "tells values of several reports as one moment"))
    return found


# "yesterday", "today": one moment, whose values are one report's, never a range over several
_MOMENT = re.compile(r"\b(?:yesterday|today|tonight|this (?:morning|afternoon|evening)|last night|right now)\b", re.I)
_ALTERNATIVE = re.compile(r"([\w@#$£€−+.:/-]+)\s*,?\s+or\s+([\w@#$£€−+.:/-]+)")


def _fused(sentence: str, stated: Sequence[str]) -> str | None:
    """ "X or Y" where sources state X and Y each in a sentence of its own and none says "X or Y" or names both:
    two statements fused into one that no source says ("to eu-west-1 or us-east-1 first", "64 GB or GiB")."""
    for m in _ALTERNATIVE.finditer(sentence):
        x, y = (w.strip(".,;:!?").lower() for w in m.groups())
        if not x or not y or x == y:
            continue
        has_x = [s for s in stated if _has_word(s, x)]
        has_y = [s for s in stated if _has_word(s, y)]
        if has_x and has_y and not any(_has_word(s, y) for s in has_x):
            return f"{m.group(1)} or {m.group(2)}"
    return None


def _has_word(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, re.IGNORECASE) is not None


def repeated(abstraction: str, near: Near | None = None) -> list[str]:
    """The abstraction's sentences that say again what an earlier one of its sentences said, in any words."""
    return said_once(abstraction, near)[1]


def said_once(abstraction: str, near: Near | None = None) -> tuple[str, list[str]]:
    """The abstraction with each sentence that says again what an earlier one said taken out (a distiller, Claude
    included, that words one statement twice: nothing is lost, the later wording goes), and those sentences."""
    kept: list[str] = []
    said: list[str] = []
    twice: list[str] = []
    for raw in _SENTENCE.split(abstraction.strip()):
        s = _FRAME.sub(" ", raw).strip()
        if s and statement_like(s) and any(judgement.share_of(k, s) >= judgement.SOME_WORDS
                                           and judgement.judge(k, s, near).same for k in said):  # fmt: skip
            twice.append(s)
            continue
        kept.append(raw)
        said += [s] if s else []
    return (" ".join(kept) if twice else abstraction), twice


def rejection_of(found: Sequence[Unfaithful]) -> str | None:
    """The reason to reject an abstraction with these unfaithful sentences (`check`), or None."""
    if not found:
        return None
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"not faithful to its sources: {found[0]}{more}"


# ---- coverage: does the abstraction still say every distinct statement of its sources? ----
# "Says" was calibrated on labelled pairs (benchmarks/statement_pairs.json: paraphrases that must count,
# look-alikes that must not), thresholds chosen on its dev split; `python -m benchmarks statement-pairs` scores both.

COVER_FLOOR = 1.0  # every distinct statement of its sources an abstraction must say, or it is rejected
MIN_WORDS = 3  # a sentence with fewer content words ("Thanks!", "Again.") states nothing to keep

Encode = Callable[[Sequence[str]], "np.ndarray"]


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


def coverage_reason(c: Coverage, floor: float = COVER_FLOOR) -> str | None:
    """The reason to reject an abstraction with coverage `c` for what it leaves out, or None."""
    if c.share >= floor:
        return None
    return (f"statements dropped: says {len(c.said)} of its sources' {c.total} statements ({c.share:.2f} < "
            f"{floor}); first left out: {c.missed[0][:120]!r}")  # fmt: skip
