"""`python -m benchmarks retention-probes`: does the night's knowledge-retention probe track what the agent can
still answer? The rule: benchmarks/retention_rule.md (written before the first run).

Per LoCoMo conversation the turns are imported and embedded once; per grid point (threshold × linkage) a copy is
consolidated by the real `nightly_consolidation` job with the retention check on (floor 0: every night commits) and
`context`'s answer support on categories 1-4 is measured before and after at 1,000 and 2,000 tokens. Since the
rule's amendment the night's own probes are off and every probe variant (VARIANTS) is asked by this module of the
same two stores, the one the night started from and the one it committed. The table holds, per grid point pooled
over the conversations, each variant's retention beside the answer-support ratio, and Spearman's rank correlation
between them.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import append_results, load_average, machine, table

THRESHOLDS = (0.60, 0.66, 0.70, 0.74, 0.78, 0.82)
LINKAGES = ("single", "complete")
CONVERSATIONS = ("conv-26", "conv-41")
BUDGETS = (1000, 2000)
GOAL = 0.8
SHIPPED: dict[str, Any] = {"retention_floor": 0.97, "retention_probes": 300, "retention_seconds": 60.0}
HARMFUL = 0.45  # far below the default: the night merges what should stay apart
PROBES, SEED = 300, 0  # the check's sample: at most this many of the memories a night archives, seeded


@dataclass(frozen=True)
class Variant:
    """A probe as the rule's amendment declares it: what it asks, at what budget, of which state after."""

    name: str
    query: str  # retention.QUERIES: the memory's text less its answers, or its rarest words left
    budget: int
    archive: bool  # False: the state after is read without the night's archived sources


VARIANTS = (
    Variant("shipped", "text", 1000, True),
    Variant("A question-like", "rare", 1000, True),
    Variant("B question-like @500", "rare", 500, True),
    Variant("C no archive", "text", 1000, False),
)


class Prober:
    """Every variant's probes on one conversation: the state before (asked once per question and budget, kept
    across the grid) against each night's committed store."""

    def __init__(self, before: Path, as_of: datetime) -> None:
        from memory_pipeline.abstraction import candidate
        from memory_pipeline.embedding.spec import MINILM
        from memory_pipeline.resources.embedder import EmbedderResource

        self.before, self.day = before, as_of.date()
        self.idf = candidate.idf_of(before)
        self.encode = candidate.memoised(EmbedderResource().encode, [])
        self.model = MINILM
        self.asked: dict[tuple[str, int], str | None] = {}  # (question, budget) -> the prompt before
        self.ask_before = {b: candidate.asker(before, b, (self.encode, MINILM), self.day)
                           for b in {v.budget for v in VARIANTS}}  # fmt: skip

    def measure(self, after: Path) -> dict[str, dict[str, int]]:
        """Per variant: probes asked, kept before, kept after (of those kept before)."""
        from memory_pipeline.abstraction import candidate, retention
        from memory_pipeline.statements import facts

        archived = archived_by(after)
        chosen = retention.sample(sorted(archived), PROBES, SEED)
        found = candidate.texts(self.before, chosen)
        names = facts.known_names(found.values())
        bare = without_archive(after) if any(not v.archive for v in VARIANTS) else after
        out: dict[str, dict[str, int]] = {}
        try:
            for v in VARIANTS:
                built = [retention.build_probe(m, archived[m], found[m], self.idf, names, query=v.query)
                         for m in chosen if m in found]  # fmt: skip
                probes = [p for p in built if p is not None]
                if probes:
                    self.encode([p.question for p in probes])  # one batch: the questions' vectors kept
                ask_after = candidate.asker(after if v.archive else bare, v.budget, (self.encode, self.model),
                                            self.day)  # fmt: skip
                outcomes = retention.measure(probes, functools.partial(self._before, v.budget), ask_after)
                r = retention.tally("", outcomes, 0.0, v.budget, len(archived))
                out[v.name] = {"probes": r.probes, "kept_before": r.kept_before, "kept_after": r.kept_after}
        finally:
            if bare != after:
                shutil.rmtree(bare, ignore_errors=True)
        return out

    def _before(self, budget: int, question: str) -> str | None:
        key = (question, budget)
        if key not in self.asked:
            self.asked[key] = self.ask_before[budget](question)
        return self.asked[key]


def archived_by(home: Path) -> dict[str, str]:
    """The memories archived in a store (none before the night): id -> the cluster that archived it."""
    import duckdb

    with duckdb.connect(str(home / "memory.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT id, archived_by FROM memories WHERE lifecycle = 'archived'").fetchall()
    return {str(r[0]): str(r[1]) for r in rows}


def without_archive(home: Path) -> Path:
    """A copy of a committed store as an agent without the archive would read it: the archived sources made
    unreadable (a lifecycle search does not index), the index rebuilt from the stored vectors."""
    import duckdb

    from memory_pipeline.embedding.spec import MINILM
    from memory_pipeline.resources.embedder import EmbedderResource
    from memory_pipeline.search import build_index
    from memory_pipeline.search.engine import clear_cache

    bare = home.parent / f"{home.name}-bare"
    shutil.rmtree(bare, ignore_errors=True)
    shutil.copytree(home, bare)
    with duckdb.connect(str(bare / "memory.duckdb")) as con:
        con.execute("UPDATE memories SET lifecycle = 'unarchived' WHERE lifecycle = 'archived'")
    build_index(bare, EmbedderResource().encode, MINILM, full=True)
    clear_cache()
    return bare


def support(home: Path, conv: Any) -> dict[int, int]:
    """Questions (categories 1-4) whose answer `context` puts in the prompt, per budget."""
    from memory_pipeline.context.search_adapter import default_search
    from memory_pipeline.context.service import compile_for_agent
    from memory_pipeline.embedding.spec import MINILM
    from memory_pipeline.evaluation.locomo import answer_support
    from memory_pipeline.resources.embedder import EmbedderResource
    from memory_pipeline.search import build_index
    from memory_pipeline.search.engine import clear_cache

    encode = EmbedderResource().encode
    build_index(home, encode, MINILM, full=True)
    clear_cache()
    search = functools.lru_cache(maxsize=4)(default_search(home, embedder=(encode, MINILM)))
    out = dict.fromkeys(BUDGETS, 0)
    for q in conv.questions:
        if q.category == 5:
            continue
        for b in BUDGETS:
            compiled, _ = compile_for_agent(home, q.question, budget_tokens=b, search=search)
            out[b] += bool(answer_support(q.answer, [compiled.prompt]))
    return out


def night(base: Any, threshold: float | None, linkage: str | None, **engine: Any) -> tuple[Path, dict[str, Any], bool]:
    """A copy of the embedded store consolidated at (threshold, linkage) by the real job with the retention check on
    (by default floor 0, no time bound: every night commits): (home, the check's figures, whether the run passed)."""
    import dagster as dg

    from benchmarks.locomo_e2e import _resources
    from memory_pipeline.definitions import defs_with
    from memory_pipeline.resources import EngineConfig
    from memory_pipeline.settings import console_loggers

    home = base.home.parent / f"t{threshold or 0:.2f}-{linkage}"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(base.home, home)
    resources = _resources(home, base.as_of, threshold, linkage)
    settings = {"retention_floor": 0.0, "retention_probes": 300, "retention_seconds": 0.0, **engine}
    resources["engine"] = EngineConfig(as_of=base.as_of.isoformat(), similarity_threshold=threshold, linkage=linkage,
                                       **settings)  # fmt: skip
    run = defs_with(resources).resolve_job_def("nightly_consolidation").execute_in_process(
        instance=dg.DagsterInstance.ephemeral(), raise_on_error=False,
        run_config={"loggers": console_loggers("WARNING")},
    )  # fmt: skip
    path = home / "reports" / f"retention-{run.run_id}.json"
    if not path.exists():
        raise RuntimeError(f"{home.name}: the night failed before its retention check")
    return home, json.loads(path.read_text(encoding="utf-8")), run.success


@dataclass
class Sample:
    """A workspace embedded once, copied per night (what `night` reads of `locomo_e2e.Base`)."""

    home: Path
    as_of: datetime


def harmful(work: Path, threshold: float) -> str:
    """The sample workspace's default night and one at `threshold`, each with the shipped check (floor, probes,
    time bound): the report's lines."""
    from benchmarks.locomo_e2e import _embed
    from memory_pipeline.context.sample import install_sample_knowledge
    from memory_pipeline.sample_data import write_sample_jsonl
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_jsonl

    now = datetime.now(UTC)
    base = Sample(work / "sample" / "base", now)
    base.home.mkdir(parents=True)
    sample = base.home.parent / "memories.jsonl"
    write_sample_jsonl(sample, now)
    import_jsonl(MemoryStore(base.home / "memory.duckdb"), sample)
    install_sample_knowledge(base.home)
    _embed(base.home, now)
    lines = [f"Sample workspace ({active_count(base.home):,} active memories), the shipped check: floor, probes and "
             "time bound as `EngineConfig`'s defaults."]  # fmt: skip
    for label, t in (("default", None), ("harmful", threshold)):
        home, fig, passed = night(base, t, None, **SHIPPED)
        archived_rows = _archived(home)
        lines.append(f"- {label} night (threshold {t if t is not None else 'default'}): retention "
                     f"{fig['retention']:.3f} ({fig['kept_after']} of {fig['kept_before']} probes kept, "
                     f"{fig['probes']} asked in {fig['seconds']:.0f} s), the night would archive {fig['archived']:,}; "
                     f"run "
                     f"{'passed' if passed else 'stopped'}, {archived_rows:,} memories archived")  # fmt: skip
        shutil.rmtree(home, ignore_errors=True)
    return "\n".join(lines) + "\n"


def _archived(home: Path) -> int:
    import duckdb

    with duckdb.connect(str(home / "memory.duckdb"), read_only=True) as con:
        row = con.execute("SELECT count(*) FROM memories WHERE lifecycle = 'archived'").fetchone()
    return int(row[0]) if row else 0


def active_count(home: Path) -> int:
    import duckdb

    with duckdb.connect(str(home / "memory.duckdb"), read_only=True) as con:
        row = con.execute("SELECT count(*) FROM memories WHERE lifecycle = 'active'").fetchone()
    return int(row[0]) if row else 0


def run(data: Path, conversations: Sequence[str], thresholds: Sequence[float], linkages: Sequence[str],
        work: Path) -> list[dict[str, Any]]:  # fmt: skip
    from benchmarks.locomo_e2e import prepare_turns
    from memory_pipeline.evaluation.locomo import load_locomo

    points = []
    for conv in load_locomo(data, list(conversations)):
        base = prepare_turns(conv, work)
        before, active = support(base.home, conv), active_count(base.home)
        prober = Prober(base.home, base.as_of)
        print(f"  {conv.sample_id}: before {before}, {active} active memories", flush=True)
        for t in thresholds:
            for link in linkages:
                home, _, _ = night(base, t, link, retention_probes=0)
                after = support(home, conv)
                variants = prober.measure(home)
                points.append({"conversation": conv.sample_id, "threshold": t, "linkage": link, "before": before,
                               "after": after, "active_before": active, "archived": len(archived_by(home)),
                               "variants": variants})  # fmt: skip
                shown = ", ".join(f"{n} {ratio(f):.3f} ({f['kept_after']}/{f['kept_before']})"
                                  for n, f in variants.items())  # fmt: skip
                print(f"    {t:.2f} {link}: archived {points[-1]['archived']}, after {after}; {shown}", flush=True)
                shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(base.home.parent, ignore_errors=True)
    return points


def ratio(f: dict[str, int]) -> float:
    return f["kept_after"] / f["kept_before"] if f["kept_before"] else 1.0


def pooled(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per grid point over the conversations: each variant's retention, the archived share, the support ratios."""
    rows = []
    for t, link in sorted({(p["threshold"], p["linkage"]) for p in points}):
        g = [p for p in points if (p["threshold"], p["linkage"]) == (t, link)]
        share = sum(p["archived"] for p in g) / max(sum(p["active_before"] for p in g), 1)
        row: dict[str, Any] = {"threshold": t, "linkage": link, "archived_share": share}
        for name in dict.fromkeys(n for p in g for n in p["variants"]):
            row[name] = ratio({k: sum(p["variants"][name][k] for p in g) for k in ("kept_before", "kept_after")})
        for b in BUDGETS:
            row[f"ratio_{b}"] = sum(p["after"][b] for p in g) / max(sum(p["before"][b] for p in g), 1)
        rows.append(row)
    return rows


def rho(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation, None when either column is constant (it is then undefined)."""
    from scipy.stats import spearmanr

    if len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    return float(spearmanr(xs, ys).statistic)


def report(points: list[dict[str, Any]]) -> str:
    rows = pooled(points)
    convs = sorted({p["conversation"] for p in points})
    names = [v.name for v in VARIANTS if v.name in rows[0]] if rows else []
    body = table(["threshold", "linkage", "archived share", *names, *[f"support ratio @{b}" for b in BUDGETS]],
                 [[f"{r['threshold']:.2f}", r["linkage"], f"{r['archived_share']:.3f}",
                   *[f"{r[n]:.3f}" for n in names], *[f"{r[f'ratio_{b}']:.3f}" for b in BUDGETS]]
                  for r in rows])  # fmt: skip
    summary = []
    for n in names:
        rhos = [rho([r[n] for r in rows], [r[f"ratio_{b}"] for r in rows]) for b in BUDGETS]
        met = all(x is not None and x >= GOAL for x in rhos)
        summary.append([n, *["undefined (a constant column)" if x is None else f"{x:.3f}" for x in rhos],
                        "met" if met else "missed"])  # fmt: skip
    rhos_table = table(["probe", *[f"ρ vs support @{b:,}" for b in BUDGETS], f"goal ≥ {GOAL} at both"], summary)
    asked = ", ".join(f"{v.name}: {'rarest words' if v.query == 'rare' else 'text'} @{v.budget}"
                      f"{'' if v.archive else ', after without the archive'}" for v in VARIANTS)  # fmt: skip
    return (f"Conversations {', '.join(convs)}; rule `benchmarks/retention_rule.md` (its amendment); the night's own "
            f"probes off, every probe asked by the benchmark of the store before and the committed store after "
            f"({PROBES} probes at most, seed {SEED}; {asked}).\n\n{body}\n\n{rhos_table}\n")


def main(argv: list[str]) -> None:
    from memory_pipeline.evaluation.locomo_transcripts import default_locomo_path

    parser = argparse.ArgumentParser(prog="python -m benchmarks retention-probes", description=__doc__)
    parser.add_argument("--data", type=Path, default=default_locomo_path())
    parser.add_argument("--conversations", default=",".join(CONVERSATIONS), help="comma-separated sample ids")
    parser.add_argument("--thresholds", default=",".join(map(str, THRESHOLDS)))
    parser.add_argument("--linkages", default=",".join(LINKAGES))
    parser.add_argument("--save", type=Path, default=None, help="also write the grid points here (JSON)")
    parser.add_argument("--harmful", action="store_true",
                        help=f"instead: the sample workspace's default night and one at {HARMFUL}, the shipped check")
    args = parser.parse_args(argv)
    env, load = machine(), load_average()
    if args.harmful:
        with tempfile.TemporaryDirectory() as tmp:
            text = harmful(Path(tmp), HARMFUL)
        append_results("retention check: a harmful night against the default (sample workspace)", text, env, load)
        return
    with tempfile.TemporaryDirectory() as tmp:
        points = run(args.data, args.conversations.split(","), [float(t) for t in args.thresholds.split(",")],
                     args.linkages.split(","), Path(tmp))  # fmt: skip
    if args.save:
        args.save.write_text(json.dumps(points))
    append_results("retention probes against answer support (LoCoMo)", report(points), env, load)
