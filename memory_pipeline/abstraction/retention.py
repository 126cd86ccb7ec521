"""Knowledge-retention probes: a night grades itself before it archives anything. No labels, no LLM.

Each memory the night would archive becomes a cloze probe: its answer tokens (numbers, amounts, dates and
times, identifiers, proper names; when it has none, its rarest terms by idf) are masked, and the rest is asked of
the read path. A probe is kept when every masked token comes back in what the read path returns. Measured on the
state before the night and on the state it would commit, retention = probes kept after ÷ probes kept before
(a probe the night newly answers is counted apart, as gained). Pure functions; the asking is a callable."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memory_pipeline.statements import facts
from memory_pipeline.statements.values import _values

RAREST = 2  # terms masked when a memory states no value and names no one
MIN_LEFT = 3  # words a question keeps after masking, else the memory makes no probe
MAX_QUESTION = 2000  # characters asked (the read path takes at most 4096)
QUERY_WORDS = 4  # words a question-like probe asks with
QUERIES = ("text", "rare")  # what a probe asks: the memory's text less its answers, or its rarest words left
WORST_SHOWN = 5
AT_LEAST = 20  # probes asked whatever the time bound says: fewer tell nothing
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Probe:
    memory_id: str
    cluster_id: str
    question: str
    answers: tuple[str, ...]
    by: str  # "values": numbers, amounts, dates, times, identifiers, names; "rarest": rarest terms by idf


def words(text: str) -> list[str]:
    """The lower-case words an idf is counted over (three letters or more)."""
    return [w.lower() for w in _WORD.findall(text)]


def answer_tokens(text: str, names: Iterable[str] = ()) -> list[str]:
    """What a probe masks: the values `statements.values` reads (dates, times, percentages, amounts, identifiers,
    numbers, capitalised names) and the entities `statements.facts` reads (all-caps words, identifiers, names also
    known from other memories: `names`), as written, each once, in order of appearance."""
    spans = [(v.start, v.raw) for v in _values(text)]
    for entity in facts.entities(text, names):
        m = re.search(rf"(?<!\w){re.escape(entity)}(?!\w)", text)
        if m is not None:
            spans.append((m.start(), entity))
    out: list[str] = []
    seen: set[str] = set()
    for _, raw in sorted(spans, key=lambda s: (s[0], -len(s[1]))):  # the longest span at a place first
        token = raw.strip(" .,;:!?'\"()")
        if token and token.lower() not in seen and not any(token.lower() in s for s in seen):
            seen.add(token.lower())
            out.append(token)
    return out


def rarest_terms(text: str, idf: Callable[[str], float], n: int = RAREST) -> list[str]:
    """The `n` words of `text` with the highest idf (first occurrence wins a tie)."""
    unique = list(dict.fromkeys(words(text)))
    ranked = sorted(range(len(unique)), key=lambda i: (-idf(unique[i]), i))
    return [unique[i] for i in sorted(ranked[:n])]


def _pattern(token: str) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(part) for part in token.split())
    return re.compile(rf"(?<![\w]){body}(?![\w])", re.IGNORECASE)


def mask(text: str, answers: Sequence[str]) -> str:
    """`text` with every occurrence of each answer removed, spaces folded."""
    for token in sorted(answers, key=len, reverse=True):
        text = _pattern(token).sub(" ", text)
    return _SPACE.sub(" ", text).strip()


def build_probe(
    memory_id: str, cluster_id: str, text: str, idf: Callable[[str], float], names: Iterable[str] = (),
    query: str = "text",
) -> Probe | None:
    """The memory's probe, or None when masking leaves fewer than MIN_LEFT words to ask with. `query` "text"
    asks the memory's text less its answers; "rare" asks only the QUERY_WORDS words of that text with the
    highest idf, in the memory's order (a question-like probe: the same answers, the same memories probed)."""
    if query not in QUERIES:
        raise ValueError(f"probe query must be one of {', '.join(QUERIES)}, got {query!r}")
    answers, by = answer_tokens(text, names), "values"
    if not answers:
        answers, by = rarest_terms(text, idf), "rarest"
    if not answers:
        return None
    question = mask(text, answers)
    if len(question.split()) < MIN_LEFT:
        return None
    if query == "rare":
        question = question_like(question, answers, idf)
        if not question:
            return None
    return Probe(memory_id, cluster_id, question[:MAX_QUESTION], tuple(answers), by)


def question_like(masked: str, answers: Sequence[str], idf: Callable[[str], float], n: int = QUERY_WORDS) -> str:
    """The `n` words of a masked memory with the highest idf, in its order, none of them part of an answer."""
    inside = {w for a in answers for w in words(a)}
    kept = " ".join(w for w in words(masked) if w not in inside)
    return " ".join(rarest_terms(kept, idf, n))


def missing(answers: Sequence[str], returned: str) -> list[str]:
    """The answers that do not come back in `returned` (whole words, case and spacing aside)."""
    return [a for a in answers if not _pattern(a).search(returned)]


def sample(ids: Sequence[str], n: int, seed: int) -> list[str]:
    """At most `n` of `ids` in a seeded random order, the same for the same ids and seed (any first part of it
    is a random sample too: a time bound may end the asking early)."""
    return random.Random(seed).sample(sorted(ids), min(n, len(ids)))


@dataclass(frozen=True)
class Outcome:
    """One probe asked of both states: the answers each did not return (None: the read path failed)."""

    probe: Probe
    before: list[str] | None
    after: list[str] | None

    @property
    def kept_before(self) -> bool:
        return self.before == []

    @property
    def kept_after(self) -> bool:
        return self.after == []


@dataclass
class Loss:
    cluster_id: str
    probes_lost: int
    example: str  # a probe the night loses, shortened
    tokens_lost: list[str]


@dataclass
class Retention:
    """The night's figures, as the check's metadata, the run's line, `status` and the fleet report read them."""

    run_id: str
    probes: int  # probes asked (the sample, less memories that make no probe, less any the time bound left out)
    kept_before: int
    kept_after: int  # of the probes kept before, those still kept after
    gained: int  # probes kept after only
    floor: float
    budget_tokens: int
    archived: int  # memories the night would archive
    seconds: float = 0.0
    errors: int = 0  # probes the read path failed on (in either state)
    worst: list[Loss] = field(default_factory=list)
    finished_at: str = ""
    blocked: bool = False
    built: int = 0  # probes built from the sample; more than `probes` when the time bound ended the asking

    @property
    def retention(self) -> float:
        return round(self.kept_after / self.kept_before, 4) if self.kept_before else 1.0

    @property
    def passed(self) -> bool:
        return self.retention >= self.floor

    def line(self) -> str:
        if not self.probes:
            return f"knowledge kept: no probe asked (the night archives {self.archived} memories)"
        return (f"knowledge kept: {self.kept_after} of {self.kept_before} probes answered before the night "
                f"({self.probes} asked), retention {self.retention:.3f}")  # fmt: skip

    def worst_text(self) -> str:
        return "; ".join(
            f"{w.cluster_id}: {w.probes_lost} probe(s) lost, e.g. {w.example!r} lost {', '.join(w.tokens_lost)}"
            for w in self.worst
        ) or "none"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"retention": self.retention, "passed": self.passed}


def from_dict(data: dict[str, Any]) -> Retention:
    fields_ = {k: v for k, v in data.items() if k in Retention.__dataclass_fields__}
    fields_["worst"] = [Loss(**w) for w in data.get("worst", [])]
    return Retention(**fields_)


def tally(run_id: str, outcomes: Sequence[Outcome], floor: float, budget: int, archived: int) -> Retention:
    kept_before = [o for o in outcomes if o.kept_before]
    lost = [o for o in kept_before if not o.kept_after]
    by_cluster: dict[str, list[Outcome]] = {}
    for o in lost:
        by_cluster.setdefault(o.probe.cluster_id, []).append(o)
    ranked = sorted(by_cluster.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:WORST_SHOWN]
    worst = [
        Loss(cid, len(os_), _short(os_[0].probe.question), list(os_[0].after or os_[0].probe.answers))
        for cid, os_ in ranked
    ]
    return Retention(
        run_id=run_id,
        probes=len(outcomes),
        kept_before=len(kept_before),
        kept_after=len(kept_before) - len(lost),
        gained=sum(1 for o in outcomes if o.kept_after and not o.kept_before),
        floor=floor,
        budget_tokens=budget,
        archived=archived,
        errors=sum(1 for o in outcomes if o.before is None or o.after is None),
        worst=worst,
    )


def _short(text: str, n: int = 120) -> str:
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def measure(
    probes: Sequence[Probe], ask_before: Callable[[str], str | None], ask_after: Callable[[str], str | None],
    progress: Callable[[int], Any] | None = None,
    deadline: float | None = None,
    at_least: int = AT_LEAST,
) -> list[Outcome]:
    """Each probe asked of both states in turn, in the given order, while it can be done by `deadline`
    (time.monotonic(); a probe is started only when the mean time of those done so far still fits, so the bound is
    kept, not overrun by the last probe) — but at least `at_least` of them; `progress` hears the count done after
    each."""
    out: list[Outcome] = []
    spent = 0.0
    for i, p in enumerate(probes, 1):
        started = time.monotonic()
        if deadline is not None and i > at_least and started + (spent / len(out) if out else 0.0) >= deadline:
            break
        before, after = ask_before(p.question), ask_after(p.question)
        spent += time.monotonic() - started
        out.append(Outcome(p, _missed(p, before), _missed(p, after)))
        if progress is not None:
            progress(i)
    return out


def _missed(p: Probe, returned: str | None) -> list[str] | None:
    return None if returned is None else missing(p.answers, returned)


# ------------------------------------------------------------------ the figures kept per night


def figures_path(reports_dir: Path, run_id: str) -> Path:
    return reports_dir / f"retention-{run_id}.json"


def save(reports_dir: Path, r: Retention) -> Path:
    """The night's figures as reports/retention-<run id>.json, written whole (a temporary file renamed)."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    path = figures_path(reports_dir, r.run_id)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(r.to_dict(), indent=2), encoding="utf-8")
    tmp.replace(path)
    return path


def load(reports_dir: Path, run_id: str) -> Retention | None:
    path = figures_path(reports_dir, run_id)
    try:
        return from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def recent(reports_dir: Path, n: int = 5) -> list[Retention]:
    """The last `n` nights' figures, newest first (a file that does not read is left out)."""
    found = []
    for path in reports_dir.glob("retention-*.json") if reports_dir.is_dir() else []:
        try:
            found.append(from_dict(json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError, KeyError):
            continue
    return sorted(found, key=lambda r: r.finished_at, reverse=True)[:n]


def status_lines(nights: Sequence[Retention]) -> list[str]:
    """`status`'s lines: one per night, newest first."""
    if not nights:
        return ["retention     no night measured yet"]
    out = []
    for i, r in enumerate(nights):
        when = r.finished_at[:16].replace("T", " ")
        verdict = "BLOCKED" if r.blocked else "ok"
        head = f"{'retention' if i == 0 else '':<14}{when} UTC  "
        if not r.probes:  # nothing asked (probes off, or nothing to archive): no figure to show as "1.000 ok"
            out.append(f"{head}not measured (no probe asked) run {r.run_id[:8]}")
            continue
        out.append(f"{head}{r.retention:.3f} {verdict} ({r.kept_after} of {r.kept_before} probes kept, floor "
                   f"{r.floor:g}) run {r.run_id[:8]}")  # fmt: skip
    return out
