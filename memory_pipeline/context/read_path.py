"""How P3 reads knowledge: its format, whole items, the abstention floor, neighbouring turns, time-aware
reading. The shipped values live in read_path.json and were chosen by benchmarks/read_path_rule.md on the
LoCoMo dev conversations; the benchmark overrides them per ablation row. No Dagster here."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

READ_PATH_FILE = Path(__file__).with_name("read_path.json")
FORMATS = ("lines", "sections")


@dataclass(frozen=True)
class ReadPath:
    p3_format: str = "lines"  # one knowledge section with a line per item, or a section per item
    whole_items: bool = True  # the item's whole text (matching sentences when it does not fit), not a snippet
    below_floor: bool = False  # refill with every item below search's abstention floor (as before it had one)
    item_floor: float = 0.0  # once the top hit clears the floor, items down to this share of its relevance
    neighbours: int = 0  # turns of the same session either side of a hit
    neighbours_max_chars: int = 0  # only hits this short get neighbours (0: every hit); a short turn needs its context
    time_aware: bool = False  # a time expression in the message boosts memories of that period
    # an archived memory is left out when the summary that archived it ranks above it
    covered_sources: bool = False
    # P3 takes search's hits with each archived source moved below its summary (search's own order), or
    # (False) in relevance order
    abstractions_first: bool = True
    resolve_dates: bool = False  # "yesterday" in an item dated 2023-05-08 reads "yesterday (7 May 2023)"
    # Slot budgets as shares of the requested total (seed 001's 3, 4 and 6 KB of ~32 KB): a file over its slot
    # is cut at entry boundaries; what a slot does not use flows on, and P3/P4 share the rest.
    memory_share: float = 3 / 32
    journal_share: float = 4 / 32
    topic_share: float = 6 / 32

    def with_(self, **changes: Any) -> ReadPath:
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValueError(f"unknown read-path setting(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        out = replace(self, **changes)
        for name in ("memory_share", "journal_share", "topic_share"):
            share = getattr(out, name)
            if not isinstance(share, (int, float)) or not 0 < share <= 1:
                raise ValueError(f"read path: {name} must be a share of the budget in (0, 1], got {share!r}")
        if out.p3_format not in FORMATS:
            raise ValueError(f"read path: p3_format must be one of {', '.join(FORMATS)}, got {out.p3_format!r}")
        return out

    @classmethod
    def load(cls, path: Path = READ_PATH_FILE) -> ReadPath:
        return cls().with_(**json.loads(path.read_text(encoding="utf-8")))
