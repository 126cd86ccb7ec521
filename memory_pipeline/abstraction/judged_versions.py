"""Versions of one fact as Claude judges them (the Versioner with the `llm` resource in Anthropic mode).

Candidate groups: the memories that state a value in a short statement (`statements.values.statement`: not an event,
not a story), grouped by their vectors — complete linkage at `CANDIDATE_SIMILARITY` (every pair in a group at
least that close), at most `MAX_GROUP` members, one of them a statement of fact the offline rule reads. The bar
is below the night's clustering threshold on purpose: "Finance approved $12,500 for cloud spend this quarter"
and "The quarterly cloud budget is $10,000" are 0.72 apart in MiniLM and worded too differently for the offline
rule. Fresh and archived memories take part (the newest value is usually the freshest memory), summaries do not.

Per group, the model is asked which memories state another value of the same fact and which holds now
(`llm.version_judge`). A valid answer replaces the offline rule's verdict inside the group: its supersessions
are the model's (each version superseded by the next one stated), minus the pairs the look-alike guard keeps
apart, and an offline supersession inside the group the model does not confirm is not made — both errs on the
side of a stale value rather than a hidden one. Anything else — no reply (API error, cost cap), an invalid
answer — leaves the group to the offline rule, counted and logged. An answer is kept in the reports folder
under a hash of its request, so a group that has not changed since an earlier night is not asked again."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from memory_pipeline.abstraction.versions import VersionPlan
from memory_pipeline.llm.version_judge import JudgementRejected, Stated, lookalike, parse_judgement
from memory_pipeline.similarity.clustering import single_linkage
from memory_pipeline.similarity.linkage import LinkageParams, cluster_components
from memory_pipeline.statements.starts import holds_from
from memory_pipeline.statements.values import fact_key, statement
from memory_pipeline.store import repository as repo
from memory_pipeline.store.validity import FactRow, Supersession

CANDIDATE_SIMILARITY = 0.6
MAX_GROUP = 8  # members per question: a larger near-group is split by its weakest links
CACHE_FILE = "version_judgements.json"


@dataclass
class JudgeStats:
    """What the model did tonight, for the log and the asset's metadata."""

    groups: int = 0  # candidate groups
    asked: int = 0  # groups sent to the model tonight
    reused: int = 0  # groups answered on an earlier night, the same request
    judged: int = 0  # groups whose answer was valid (asked or reused)
    fell_back: int = 0  # groups left to the offline rule: no reply or an invalid one
    added: int = 0  # supersessions the model found that the offline rule did not
    declined: int = 0  # the offline rule's supersessions inside a judged group the model did not confirm
    guarded: int = 0  # pairs the model joined that the look-alike guard kept apart
    reasons: Counter[str] = field(default_factory=Counter)

    def line(self) -> str:
        return (f"Claude judged {self.judged} of {self.groups} candidate group(s) ({self.reused} from earlier nights), "
                f"{self.fell_back} fell back to the offline rule; {self.added} supersession(s) added, "
                f"{self.declined} declined, {self.guarded} look-alike pair(s) kept apart")  # fmt: skip

    def metadata(self) -> dict[str, int | str]:
        return {
            "claude_groups": self.groups,
            "claude_judged": self.judged,
            "claude_fell_back": self.fell_back,
            "claude_reused": self.reused,
            "claude_added": self.added,
            "claude_declined": self.declined,
            "claude_lookalikes_kept_apart": self.guarded,
            "claude_fallback_reasons": "; ".join(f"{r} ({n})" for r, n in self.reasons.most_common(5)) or "none",
        }


def statements(rows: Sequence[FactRow]) -> list[FactRow]:
    """The rows a version may be among: short statements of a value."""
    return [r for r in rows if statement(r.content) is not None]


def read_count(rows: Sequence[FactRow]) -> int:
    """Statements of fact either reading counts: the runaway check's denominator with Claude."""
    return sum(1 for r in rows if statement(r.content) is not None or fact_key(r.content) is not None)


Encode = Callable[[list[str]], np.ndarray]


def statement_vectors(
    con: duckdb.DuckDBPyConnection, model: str, rows: Sequence[FactRow], own: Encode | None, other: Encode
) -> np.ndarray:
    """Vectors aligned with `rows`: the stored ones of `model` and, for rows without one, `own` (the model's
    encoder); with no encoder for the model (imported vectors), every row encoded by `other`."""
    if not rows:
        return np.zeros((0, 0), dtype=np.float32)
    if own is None:
        return np.asarray(other([r.content for r in rows]), dtype=np.float32)
    frame = pd.DataFrame({"memory_id": [r.id for r in rows]})  # noqa: F841 - read by the query below
    stored = {str(i): int(n) for i, n in con.sql(
        "SELECT f.memory_id, len(e.vector) FROM frame f JOIN embeddings e ON e.memory_id = f.memory_id AND e.model = ?",
        params=[model]).fetchall()}  # fmt: skip
    missing = [i for i, r in enumerate(rows) if r.id not in stored]
    fresh = np.asarray(own([rows[i].content for i in missing]), dtype=np.float32) if missing else None
    dim = fresh.shape[1] if fresh is not None else next(iter(stored.values()))
    have = [i for i, r in enumerate(rows) if stored.get(r.id) == dim]
    out = np.zeros((len(rows), dim), dtype=np.float32)
    if have:
        out[have] = repo.vectors_for(con, model, [rows[i].id for i in have])
    if fresh is not None:
        out[missing] = fresh
    odd = [i for i, r in enumerate(rows) if r.id in stored and stored[r.id] != dim]
    if odd:  # a vector of another dimension (named by the night's embedding step): encoded again here
        out[odd] = np.asarray(own([rows[i].content for i in odd]), dtype=np.float32)
    return out


def candidate_groups(rows: Sequence[FactRow], vectors: np.ndarray, threshold: float = CANDIDATE_SIMILARITY,
                     max_size: int = MAX_GROUP) -> list[list[FactRow]]:  # fmt: skip
    """Groups of two or more rows whose vectors (aligned with `rows`) are all pairwise ≥ `threshold`, and one of
    which the offline rule reads as a statement of fact (`fact_key`): log lines that merely share a number
    ("Token usage Monday: 412k tokens") are not asked about."""
    if len(rows) < 2:
        return []
    components = single_linkage(vectors, threshold, 2)
    params = LinkageParams(method="complete", threshold=threshold, min_size=2, max_members=max_size)
    outcome = cluster_components(vectors, components, np.ones(len(rows), dtype=np.int64), params)
    groups = [[rows[int(i)] for i in g] for g in outcome.groups]
    return [g for g in groups if any(fact_key(r.content) is not None for r in g)]


class ReplyCache:
    """Valid answers of earlier nights, by a hash of the request; what tonight used is written back."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.old: dict[str, str] = {}
        self.used: dict[str, str] = {}
        if path is not None and path.exists():
            with contextlib.suppress(OSError, ValueError):
                loaded = json.loads(path.read_text(encoding="utf-8"))
                self.old = {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}

    @staticmethod
    def key(model: str, user: str) -> str:
        return hashlib.sha256(f"{model}\n{user}".encode()).hexdigest()[:32]

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.used, indent=0, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)


Ask = Callable[[str, Sequence[Stated]], str]  # (group key, members) → the model's reply; raises when there is none


def judged_plan(
    offline: VersionPlan,
    groups: Sequence[Sequence[FactRow]],
    ask: Ask,
    undone: AbstractSet[tuple[str, str]] = frozenset(),
    *,
    cache: ReplyCache | None = None,
    request_key: Callable[[Sequence[Stated]], str] | None = None,
    log: Callable[[str], object] = lambda _m: None,
) -> tuple[VersionPlan, JudgeStats]:
    """The offline plan with each validly judged group's verdict in place of the offline rule's."""
    stats = JudgeStats(groups=len(groups))
    plan = list(offline.supersessions)
    for group in groups:
        rows = {r.id: r for r in group}
        members = [Stated(r.id, r.content, r.stated_at) for r in sorted(group, key=lambda r: (r.stated_at, r.id))]
        key = "versions-" + hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()[:12]
        hashed = request_key(members) if request_key and cache else None
        try:
            if hashed is not None and cache is not None and hashed in cache.old:
                reply, reused = cache.old[hashed], True
            else:
                reply, reused = ask(key, members), False
                stats.asked += 1
            facts = parse_judgement(reply, members)
        except Exception as exc:  # noqa: BLE001 - AskFailed, JudgementRejected: the group keeps the offline verdict
            stats.fell_back += 1
            reason = type(exc).__name__
            if isinstance(exc, JudgementRejected):  # "fact 2 names 'm9', …" counts as "fact names 'm', …"
                reason = re.sub(r"\s*\d+\b|\{.*", "", str(exc).split(":")[0] if "JSON" in str(exc) else str(exc))
            stats.reasons[reason] += 1
            log(f"Versioner: group {key} ({len(members)} memories) left to the offline rule: {exc}")
            continue
        if hashed is not None and cache is not None:
            cache.used[hashed] = reply
        stats.judged += 1
        stats.reused += reused
        inside = [s for s in plan if s.memory_id in rows and s.superseded_by in rows]
        plan = [s for s in plan if s not in inside]
        taken = {s.memory_id for s in plan}
        mine: list[Supersession] = []
        for name, chain in facts:
            for older, newer in zip(chain, chain[1:], strict=False):
                if rows[older.id].superseded_by is not None or older.id in taken or (older.id, newer.id) in undone:
                    continue
                why = lookalike(older.text, newer.text)
                if why is not None:
                    stats.guarded += 1
                    log(f"Versioner: {older.id} / {newer.id} kept apart ({why}) though Claude joined them")
                    continue
                mine.append(Supersession(older.id, newer.id, holds_from(newer.text, newer.stated_at), name))
        pairs = {(s.memory_id, s.superseded_by) for s in mine}
        stats.declined += sum(1 for s in inside if (s.memory_id, s.superseded_by) not in pairs)
        stats.added += sum(1 for s in mine if all((s.memory_id, s.superseded_by) != (i.memory_id, i.superseded_by)
                                                  for i in inside))  # fmt: skip
        plan += mine
    out = VersionPlan(supersessions=plan, facts_read=offline.facts_read, groups=offline.groups)
    return out, stats
