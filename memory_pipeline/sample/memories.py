"""The sample memories' data model: families, frames and slot pools read from the JSON files, and the filler.

Why here: ``drafts`` decides what is written when and ``sample_data`` assigns ids and lineage; what the agent
writes lives in ``memory_pipeline/sample/*.json`` (families, rules, frames, pools), not in Python literals.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memory_pipeline.sample import parse_sample_file


@dataclass(frozen=True)
class Family:
    """One recurring observation: members are ``head + " " + tail`` combinations."""

    key: str
    categories: tuple[str, ...]
    tags: tuple[str, ...]
    nexus: tuple[str, ...]
    heads: tuple[str, ...]
    tails: tuple[str, ...]
    causal: bool = False


@dataclass(frozen=True)
class Frame:
    """A singleton template; ``{slot}`` placeholders are filled from the pools."""

    text: str
    tags: tuple[str, ...] = ()
    nexus: tuple[str, ...] = ()
    cap: int | None = None  # lower the use limit when the fixed wording dominates


@dataclass
class Draft:
    template: str
    categories: list[str]
    tags: list[str]
    nexus: list[str]
    importance: float
    source: str
    age: timedelta = timedelta(0)
    family: str | None = None
    pinned: bool = False
    locked: bool = False
    kind: str = "observation"
    lifecycle: str = "active"
    role: str = ""  # "", "archived-source" or "summary"
    special: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _strs(values: Any) -> tuple[str, ...]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise TypeError(f"expected a list of strings, got {values!r:.80}")
    return tuple(values)


def _families(data: dict[str, Any]) -> tuple[Family, ...]:
    """Paraphrase families: members are head + tail combinations written on different days."""
    return tuple(
        Family(
            f["key"],
            _strs(f["categories"]),
            _strs(f["tags"]),
            _strs(f["nexus"]),
            _strs(f["heads"]),
            _strs(f["tails"]),
            bool(f.get("causal", False)),
        )
        for f in data["families"]
    )


def _rules(data: dict[str, Any]) -> tuple[tuple[tuple[str, str, float, bool, bool], ...], tuple[str, ...], str]:
    """Hard rules and identity (critical / pinned / locked), and the earlier run's sources and summary."""
    core = tuple(
        (str(r["category"]), str(r["text"]), float(r["importance"]), bool(r["pinned"]), bool(r["locked"]))
        for r in data["core"]
    )
    earlier = data["earlier_run"]
    return core, _strs(earlier["sources"]), str(earlier["summary"])


def _frames(
    data: dict[str, Any],
) -> tuple[dict[str, tuple[Frame, ...]], dict[str, int], dict[str, tuple[str, ...]], frozenset[str]]:
    """Singleton frames per category, how many singletons each category gets, their sources, the light slots."""
    frames = {
        category: tuple(
            Frame(f["text"], _strs(f.get("tags", [])), _strs(f.get("nexus", [])), f.get("cap")) for f in items
        )
        for category, items in data["frames"].items()
    }
    counts = {category: int(n) for category, n in data["singleton_counts"].items()}
    sources = {category: _strs(s) for category, s in data["sources"].items()}
    return frames, counts, sources, frozenset(_strs(data["light_slots"]))


def _pools(data: dict[str, Any]) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[float, float, int]]]:
    """Slot pools (dealt like decks) and each ticker's price range and decimals."""
    pools = {name: _strs(values) for name, values in data["pools"].items()}
    prices = {t: (p["low"], p["high"], int(p["digits"])) for t, p in data["ticker_prices"].items()}
    return pools, prices


FAMILIES = parse_sample_file("families.json", _families)
CORE, EARLIER_SOURCES, EARLIER_SUMMARY = parse_sample_file("rules.json", _rules)
FRAMES, SINGLETON_COUNTS, SOURCES, LIGHT_SLOTS = parse_sample_file("frames.json", _frames)
POOLS, TICKER_PRICES = parse_sample_file("pools.json", _pools)
SLOT_RE = re.compile(r"\{(\w+)\}")


class Filler:
    """Fills ``{slot}`` placeholders; pools are dealt like shuffled decks.

    Why decks: drawing without replacement keeps two singletons from the same
    frame from also sharing their main slot value, so they stay dissimilar.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self._decks: dict[str, list[str]] = {}

    def draw(self, name: str) -> str:
        deck = self._decks.get(name)
        if not deck:
            deck = list(POOLS[name])
            self.rng.shuffle(deck)
            self._decks[name] = deck
        return deck.pop()

    def value(self, name: str, when: datetime, cache: dict[str, str]) -> str:
        if name in cache:
            return cache[name]
        rng = self.rng
        if name.endswith("_l") and name[:-2] in POOLS:
            value = self.value(name[:-2], when, cache).lower().replace("the ", "").replace(" ", "-")
        elif name == "ticker2":
            value = rng.choice([t for t in POOLS["ticker"] if t != self.value("ticker", when, cache)])
        elif name == "venue2":
            value = rng.choice([v for v in POOLS["venue"] if v != self.value("venue", when, cache)])
        elif name == "tprice":
            lo, hi, digits = TICKER_PRICES[self.value("ticker", when, cache)]
            price = rng.uniform(lo, hi)
            value = f"{price:,.0f}" if digits == 0 else f"{price:.{digits}f}"
        elif name in POOLS:
            value = self.draw(name)
        else:
            value = self._number(name, when)
        cache[name] = value
        return value

    def _number(self, name: str, when: datetime) -> str:
        rng = self.rng
        if name == "n1":
            return str(rng.randint(2, 9))
        if name == "n2":
            return str(rng.randint(12, 95))
        if name == "n3":
            return str(rng.randint(120, 980))
        if name == "pct":
            return f"{rng.uniform(1.2, 9.5):.1f}"
        if name == "pr":
            return str(rng.randint(380, 990))
        if name == "ms":
            return str(rng.randint(450, 2600))
        if name == "gb":
            return f"{rng.uniform(5.5, 7.9):.1f}"
        if name == "gwei":
            return str(rng.randint(45, 160))
        if name == "btc":
            return f"{rng.randint(880, 1040) * 100:,}"
        if name == "sha":
            return f"{rng.getrandbits(28):07x}"
        if name == "sharpe":
            return f"{rng.uniform(-0.4, 2.1):.2f}"
        if name == "usd":
            return f"{rng.choice(['$', ''])}{rng.randint(2, 60) * 500:,} USDC"
        if name == "pnl":
            if rng.random() < 0.5:
                return f"{rng.choice(['+', '-'])}{rng.uniform(0.3, 3.2):.1f}R"
            return f"{rng.choice(['+', '-', '+'])}${rng.randint(40, 2400):,}"
        if name == "hhmm":
            return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
        if name == "dow":
            return when.strftime("%A")
        if name == "date":
            return when.strftime("%b %d")
        raise KeyError(f"unknown sample slot {{{name}}}")

    def fill(self, template: str, when: datetime, cache: dict[str, str] | None = None) -> str:
        cache = {} if cache is None else cache
        return SLOT_RE.sub(lambda m: self.value(m.group(1), when, cache), template)


def frame_capacity(frame: Frame) -> int:
    """How often a frame may be used before two of its memories get too close.

    Why: MiniLM scores two fillings that share their main phrase at ~0.85 and
    those sharing one of two descriptive phrases at ~0.7. So a frame may reuse
    its main phrase once when a second descriptive slot varies, never more.
    """
    heavy = sorted(
        (len(POOLS[name]) for name in SLOT_RE.findall(frame.text) if name in POOLS and name not in LIGHT_SLOTS),
        reverse=True,
    )
    if not heavy:
        return 0
    capacity = heavy[0] * (2 if len(heavy) > 1 else 1)
    return capacity if frame.cap is None else min(capacity, frame.cap)
