"""Whether an abstraction says only what its sources said: every value it states is stated by a source, and the
values one of its sentences puts together were stated together — by one source, or by sources that are the
same statement (the same words, only the numbers differ: "pytest took 16 minutes" reported three times), where
a range is honest. A range or list built from different events ("Sharpe 0.17–1.87" over three strategies), a
value with its sign lost (−0.09 written 0.09), or a clock time torn into numbers ("02–03:00–30") is not.

Pure and shared: the night's judge rejects an unfaithful distillation from any distiller (offline or Claude),
the offline distiller folds values only where this allows, and the night's grade counts what it finds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memory_pipeline.llm import facts as fx

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
    if fx.has_negation(a) != fx.has_negation(b) or _named(a) != _named(b):
        return False
    wa, wb = _words(a), _words(b)
    return bool(wa and wb) and len(wa & wb) / len(wa | wb) >= SAME_WORDS


def _named(text: str) -> frozenset[str]:
    return frozenset(e.lower() for e in fx.entities(_FRAME.sub("", text)) if fx.parse_number(e) is None)


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z][a-z']+", _masked(text)) if len(w) > 2 and w not in fx.STOP_WORDS)


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


def rejection(sources: Sequence[str], abstraction: str) -> str | None:
    """The reason to reject `abstraction` as unfaithful, or None."""
    found = check(sources, abstraction)
    if not found:
        return None
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"not faithful to its sources: {found[0]}{more}"
