"""What a search returns and how it is filtered: `Hit`, `Hits`, `Filters` — shared by the index search and the
keyword fallback, so neither imports the other."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from memory_pipeline.search.documents import Doc
from memory_pipeline.search.scoring import Ranking, snippet

NOTHING = "nothing relevant"


@dataclass
class Hit:
    id: str  # memory id, or relative path for a file
    kind: str
    snippet: str
    score: float
    parts: dict[str, float]
    date: str
    source: str
    tier: str
    categories: list[str]
    lifecycle: str = "active"
    chunk: str = ""  # the index key (path#n for files)
    archived_by: str = ""
    sources: list[Hit] = field(default_factory=list)
    text: str = ""  # the whole text (the context compiler packs whole items); not in to_dict's output
    members: list[str] = field(default_factory=list)  # a summary's source ids (lineage); not in to_dict's output
    stated: float = 0.0  # when it was written (epoch s; a memory's valid-from); not in to_dict's output
    # a memory a later value of the same fact replaced: which one, and when it stopped holding (ISO); "" if current
    superseded_by: str = ""
    valid_until: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for h in (out, *out["sources"]):
            h.pop("text", None)
            h.pop("members", None)
            h.pop("stated", None)
        return out


class Hits(list[Hit]):
    """A list of hits with a `notice` ("nothing relevant", fallback mode, busy store), `mode`, and `match`: how
    closely what is stored matches the query — `confident`, `weak` (the nearest hit alone, the notice saying it does
    not match closely) or `none` — with the fitted gate's `confidence` (search/confidence.py; None when it is off)."""

    def __init__(self, hits: Sequence[Hit] = (), notice: str = "", mode: str = "index") -> None:
        super().__init__(hits)
        self.notice = notice
        self.mode = mode
        self.match = "confident" if hits else "none"
        self.confidence: float | None = None
        # at most this relevance for any document the search did not score (0: it scored them all; inf: unknown)
        self.outside = float("inf")


@dataclass(frozen=True)
class Filters:
    category: str | None = None
    kind: str | None = None
    tier: str | None = None
    since: float | None = None
    until: float | None = None

    def keep(self, d: Doc, lifecycle: str | None = None) -> bool:
        if self.category is not None and self.category not in d.categories:
            return False
        if self.kind is not None:
            if self.kind == "memory":
                if d.source != "store" or d.kind == "summary":
                    return False
            elif d.kind != self.kind:
                return False
        tier = (
            d.tier
            if lifecycle is None or d.source != "store"
            else ("archived" if lifecycle == "archived" else "active")
        )
        if self.tier is not None and tier != self.tier:
            return False
        if self.since is not None and d.date < self.since:
            return False
        return not (self.until is not None and d.date > self.until)


def make_hit(d: Doc, query: str, score: float, parts: dict[str, float], r: Ranking, lifecycle: str, by: str) -> Hit:
    tier = d.tier if d.source != "store" else ("archived" if lifecycle == "archived" else "active")
    return Hit(
        id=d.key if d.source == "store" else d.path,
        kind=d.kind,
        snippet=snippet(d.text, query, r.snippet_chars),
        score=round(score, 6),
        parts=parts,
        date=datetime.fromtimestamp(d.date, UTC).date().isoformat() if d.date else "",
        source=d.source,
        tier=tier,
        categories=list(d.categories),
        lifecycle=lifecycle,
        chunk=d.key,
        archived_by=by,
        text=d.text,
        members=list(d.source_ids),
        stated=d.date,
    )
