"""How closely what is stored matches a question: one fitted gate over the signals search already computes.

The signals (BM25 and cosine of the top hit, its relevance and `specific` gate value, its margin over the next hit,
whether the lexical and vector rankings agree, how much of the question's focus one hit covers, the question's words
no memory holds, the top hit's kind and age) are combined by a logistic regression whose coefficients live in
`confidence.json` beside this module. They are fitted by `python -m benchmarks abstention-fit`, never at run time:
here they are one dot product.

Three outcomes: `confident` (the hits, as search returns them), `weak` (nothing stored matches this closely; the
nearest hit is shown, marked as such) and `none` (nothing).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from memory_pipeline.search.hits import Hit, Hits

MODEL_FILE = Path(__file__).with_name("confidence.json")
FOCUS_SHARE = 0.05  # a focus word: a content word held by at most this share of the memories (0: by none)
TOP_HITS = 10  # the hits the gate reads (as search/focus.py)
AGREE_N = 3  # rankings agree when the top BM25 hit is among the AGREE_N best by cosine
SUMMARY_KINDS = frozenset({"summary", "abstraction", "fact", "rollup"})
FEATURES = (
    "specific", "margin", "bm25", "cosine", "relevance", "agree", "cover",
    "unseen_share", "unseen_count", "n_hits", "summary_kind", "log_age_days",
)  # fmt: skip
CONFIDENT, WEAK, NONE = "confident", "weak", "none"
WEAK_LINE = "nothing stored matches this closely; nearest: "


@dataclass(frozen=True)
class Signal:
    """What the gate reads of one hit."""

    specific: float  # cosine less the memory's background (0 when the background gate is off)
    bm25: float
    cosine: float
    relevance: float
    words: frozenset[str]  # the hit's words as the index stems them
    kind: str = ""
    age_days: float = 0.0


@dataclass(frozen=True)
class Model:
    coef: tuple[float, ...]
    intercept: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    lo: float  # below: nothing
    hi: float  # at or above: confident; between: weak
    enabled: bool  # whether search's callers apply the gate by default

    def probability(self, x: Sequence[float]) -> float:
        z = (np.asarray(x, float) - np.asarray(self.mean)) / np.asarray(self.scale)
        return float(1.0 / (1.0 + math.exp(-(float(z @ np.asarray(self.coef)) + self.intercept))))

    def outcome(self, p: float) -> str:
        return CONFIDENT if p >= self.hi else WEAK if p >= self.lo else NONE


def features(shares: Mapping[str, float], hits: Sequence[Signal]) -> list[float]:
    """The gate's inputs, in FEATURES' order, for a question (its content words → share of memories holding each,
    0 when none does) and its top hits in search's order. No hit: all zeros but `cover` and the unseen words."""
    unseen = [w for w, s in shares.items() if s == 0]
    focus = {w for w, s in shares.items() if s <= FOCUS_SHARE}
    cover = max((len(focus & h.words) / len(focus) for h in hits), default=0.0) if focus else 1.0
    unseen_share = len(unseen) / len(shares) if shares else 0.0
    if not hits:
        return [0.0] * 6 + [cover, unseen_share, float(len(unseen)), 0.0, 0.0, 0.0]
    spec = sorted((h.specific for h in hits), reverse=True) + [0.0]
    top = max(hits, key=lambda h: h.relevance)
    return [
        spec[0], spec[0] - spec[1], max(h.bm25 for h in hits), max(h.cosine for h in hits),
        top.relevance, float(agree(hits)), cover, unseen_share, float(len(unseen)), float(len(hits)),
        float(hits[0].kind in SUMMARY_KINDS), math.log1p(max(hits[0].age_days, 0.0)),
    ]  # fmt: skip


def agree(hits: Sequence[Signal], n: int = AGREE_N) -> bool:
    """Whether the hit with the highest BM25 part is among the `n` with the highest cosine; no lexical hit: no."""
    if not hits or max(h.bm25 for h in hits) <= 0:
        return False
    lexical = max(range(len(hits)), key=lambda i: (hits[i].bm25, -i))
    return lexical in sorted(range(len(hits)), key=lambda i: (-hits[i].cosine, i))[:n]


@cache
def load_model(path: Path = MODEL_FILE) -> Model:
    data = json.loads(path.read_text(encoding="utf-8"))
    if tuple(data["features"]) != FEATURES:
        raise ValueError(f"{path.name}: fitted on features {data['features']}, the gate reads {list(FEATURES)}")
    return Model(tuple(data["coef"]), float(data["intercept"]), tuple(data["mean"]),
                 tuple(max(s, 1e-9) for s in data["scale"]), float(data["lo"]), float(data["hi"]),
                 bool(data.get("enabled", False)))  # fmt: skip


def judge(shares: Mapping[str, float], hits: Sequence[Signal], model: Model | None = None) -> tuple[str, float]:
    """(outcome, probability that what is stored answers the question). No hit is always `none`."""
    if not hits:
        return NONE, 0.0
    m = model or load_model()
    p = m.probability(features(shares, hits))
    return m.outcome(p), p


def weak_line(nearest: str, width: int = 120) -> str:
    """The one line a weak match is shown as: the nearest memory, marked as not matching closely."""
    text = " ".join(nearest.split())
    return WEAK_LINE + (text if len(text) <= width else text[: width - 1].rstrip() + "…")


def signals_of(hits: Sequence[Hit], now_ts: float) -> list[Signal]:
    """The gate's reading of search's hits (their parts, words and age at `now_ts`, epoch s)."""
    from memory_pipeline.search.tokens import tokenize_one

    return [Signal(h.parts.get("specific", 0.0), h.parts.get("bm25", 0.0), h.parts.get("vector", 0.0),
                   h.parts.get("relevance", 0.0), frozenset(tokenize_one(h.text or h.snippet)), h.kind,
                   (now_ts - h.stated) / 86400 if h.stated else 0.0) for h in hits]  # fmt: skip


def gate_hits(hits: Sequence[Hit], shares: Mapping[str, float], now_ts: float, notice: str, nothing: str,
              model: Model | None = None) -> Hits:  # fmt: skip
    """Search's hits after the gate: all of them (`confident`), the nearest alone marked `weak` (its notice the
    weak-match line), or none."""
    outcome, p = judge(shares, signals_of(hits[:TOP_HITS], now_ts), model)
    if outcome == NONE:
        out = Hits([], notice or nothing)
    elif outcome == WEAK:
        out = Hits(list(hits[:1]), weak_line(hits[0].text or hits[0].snippet))
    else:
        out = Hits(list(hits), notice)
    out.match = outcome
    out.confidence = round(p, 3)
    return out


def combined_on(setting: bool | None) -> bool:
    """Whether search applies the gate: the ranking's `combined_gate`, else the model file's `enabled`."""
    return load_model().enabled if setting is None else setting
