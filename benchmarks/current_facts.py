"""`python -m benchmarks current-facts [--work DIR] [--embedder NAME]`: does what the agent reads say what holds now?

The labelled set (benchmarks/current_facts.json, written before the first measurement): facts stated in 2–4
versions over several weeks, as-of questions naming a day, and pairs of look-alike facts that are not versions of
each other — among the demo sample's 1,551 unrelated memories. Measured with `context --budget 1000` (the
compiled prompt), before the night and after one night:

- current value first: the fact's latest value appears in the prompt, before any of its earlier values;
- as-of: for a question naming a day, the value valid that day appears before the fact's other values — with the
  day given as `as_of`, and with the question's own words only;
- false supersessions: look-alike pairs of which one was marked superseded by the other.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import append_results, load_average, machine, table

DATA = Path(__file__).resolve().parent / "current_facts.json"
NOW = datetime(2026, 11, 25, 3, 30, tzinfo=UTC)  # the night runs after the last version was stated
BUDGET = 1000


@dataclass(frozen=True)
class Question:
    text: str
    expected: str  # the value the answer states
    others: tuple[str, ...]  # the fact's other values
    words: frozenset[str]  # what every version of the fact says: a prompt line with two of them is about it
    as_of: date | None = None


_STOP = frozenset("the and for from with now new this that our was were are has have per is my we to at of".split())


def subject_words(texts: list[str]) -> frozenset[str]:
    sets = [{w for w in re.findall(r"[a-z][a-z-]+", t.lower().replace("'", "")) if w not in _STOP} for t in texts]
    return frozenset(set.intersection(*sets)) if sets else frozenset()


def _at(day: str) -> str:
    return f"{day}T09:00:00Z"


def records(data: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for fact in data["facts"]:
        for i, (text, _value, day) in enumerate(fact["versions"]):
            out.append({"id": f"f-{fact['id']}-{i}", "content": text, "created_at": _at(day), "categories": ["facts"]})
    for n, pair in enumerate(data["lookalikes"]):
        for side, (text, day) in zip("ab", pair, strict=True):
            out.append({"id": f"l-{n}-{side}", "content": text, "created_at": _at(day), "categories": ["facts"]})
    return out


def questions(data: dict[str, Any]) -> tuple[list[Question], list[Question]]:
    facts = {f["id"]: f for f in data["facts"]}
    current = []
    for f in data["facts"]:
        values = [v for _t, v, _d in f["versions"]]
        words = subject_words([t for t, _v, _d in f["versions"]])
        current.append(Question(f["question"], values[-1], tuple(values[:-1]), words))
    as_of = []
    for q in data["as_of"]:
        versions = facts[q["fact"]]["versions"]
        day = date.fromisoformat(q["as_of"])
        valid = [v for _t, v, d in versions if date.fromisoformat(d) <= day][-1]
        words = subject_words([t for t, _v, _d in versions])
        as_of.append(Question(q["question"], valid, tuple(v for _t, v, _d in versions if v != valid), words, day))
    return current, as_of


def _position(prompt: str, value: str) -> int | None:
    m = re.search(rf"(?<![\w.]){re.escape(value)}(?![\w%])", prompt, re.IGNORECASE)
    return m.start() if m else None


def first(prompt: str, q: Question) -> bool:
    """The expected value is in the prompt's lines about the fact, before every other value of the fact there.
    Only lines about the fact count (two of the words all its versions share, or all of them if fewer): values
    such as "2%" or "3" also occur in unrelated memories, which say nothing about this fact."""
    need = min(2, len(q.words))
    prompt = "\n".join(line for line in prompt.splitlines()
                       if sum(w in line.lower() for w in q.words) >= need)  # fmt: skip
    mine = _position(prompt, q.expected)
    others = [p for v in q.others if (p := _position(prompt, v)) is not None]
    return mine is not None and all(mine < p for p in others)


def measure(home: Path, embedder: Any, current: list[Question], as_of: list[Question]) -> dict[str, float]:
    from memory_pipeline.context.gate import Gate
    from memory_pipeline.context.search_adapter import default_search
    from memory_pipeline.context.service import compile_for_agent

    def prompt(q: Question, explicit: bool) -> str:
        at = datetime.combine(q.as_of, datetime.max.time()) if explicit and q.as_of else None
        out, _ = compile_for_agent(home, q.text, budget_tokens=BUDGET, search=default_search(
            home, embedder, today=NOW.date(), as_of=at), gate=Gate(), today=NOW.date())
        return out.prompt

    return {
        "current value first": sum(first(prompt(q, False), q) for q in current) / len(current),
        "as-of (as_of given)": sum(first(prompt(q, True), q) for q in as_of) / len(as_of),
        "as-of (question's words)": sum(first(prompt(q, False), q) for q in as_of) / len(as_of),
    }


def false_supersessions(home: Path, pairs: int) -> tuple[int, int]:
    import duckdb

    con = duckdb.connect(str(home / "memory.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT id, superseded_by FROM memories WHERE id LIKE 'l-%' AND superseded_by IS NOT NULL"
                           ).fetchall()  # fmt: skip
    finally:
        con.close()
    wrong = {r[0].rsplit("-", 1)[0] for r in rows if str(r[1]).rsplit("-", 1)[0] == r[0].rsplit("-", 1)[0]}
    return len(wrong), pairs


def superseded_facts(home: Path) -> int:
    import duckdb

    con = duckdb.connect(str(home / "memory.duckdb"), read_only=True)
    try:
        row = con.execute("SELECT count(*) FROM memories WHERE id LIKE 'f-%' AND superseded_by IS NOT NULL").fetchone()
    finally:
        con.close()
    return int(row[0]) if row else 0


def build(work: Path, data: dict[str, Any], model: str) -> tuple[Path, Any]:
    from memory_pipeline.resources import EmbedderResource
    from memory_pipeline.sample_data import write_sample_jsonl
    from memory_pipeline.search import build_index
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_jsonl

    home = work / "ws"
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    write_sample_jsonl(work / "sample.jsonl", datetime(2026, 11, 1, 3, 30, tzinfo=UTC))
    (work / "facts.jsonl").write_text("\n".join(json.dumps(r) for r in records(data)) + "\n")
    store = MemoryStore(home / "memory.duckdb")
    import_jsonl(store, work / "sample.jsonl")
    import_jsonl(store, work / "facts.jsonl")
    resource = EmbedderResource(model=model)
    embedder = (resource.encode, resource.model)
    build_index(home, *embedder)
    return home, embedder


def night(home: Path, model: str) -> Any:
    import dagster as dg

    from memory_pipeline.definitions import defs_with
    from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
    from memory_pipeline.resources.notifier import NotifierResource

    resources = {
        "store": MemoryStoreResource(home=str(home)),
        "embedder": EmbedderResource(model=model),
        "llm": LLMResource(mode="offline"),
        "engine": EngineConfig.from_env(as_of=NOW.isoformat()),
        "notifier": NotifierResource(alerts_path=str(home / "reports" / "alerts.jsonl")),
    }
    return defs_with(resources).resolve_job_def("nightly_consolidation").execute_in_process(
        instance=dg.DagsterInstance.ephemeral(), raise_on_error=False
    )


def main(argv: list[str]) -> None:
    from memory_pipeline.embedding.spec import MINILM
    from memory_pipeline.search import refresh_index

    parser = argparse.ArgumentParser(prog="python -m benchmarks current-facts", description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "memory-pipeline-current-facts",
                        help="scratch folder (rebuilt)")  # fmt: skip
    parser.add_argument("--embedder", default=MINILM, help="embedding model (default: the shipped MiniLM)")
    args = parser.parse_args(argv)
    load_before, env = load_average(), machine()
    data = json.loads(DATA.read_text())
    current, as_of = questions(data)
    home, embedder = build(args.work, data, args.embedder)
    before = measure(home, embedder, current, as_of)
    result = night(home, args.embedder)
    if not result.success:
        raise SystemExit("the night failed: see its log above")
    refresh_index(home)
    after = measure(home, embedder, current, as_of)
    wrong, pairs = false_supersessions(home, len(data["lookalikes"]))
    targets = {"current value first": 0.95, "as-of (as_of given)": 0.90, "as-of (question's words)": 0.90}
    rows = [[name, f"{before[name]:.3f}", f"{after[name]:.3f}", f"≥ {targets[name]:.2f}",
             "met" if after[name] >= targets[name] else "missed"] for name in before]  # fmt: skip
    share = wrong / pairs
    rows.append(["false supersessions (look-alike pairs)", "—", f"{wrong}/{pairs} = {share:.3f}", "≤ 0.02",
                 "met" if share <= 0.02 else "missed"])  # fmt: skip
    body = (
        f"{len(current)} facts ({sum(len(f['versions']) for f in data['facts'])} versions), {len(as_of)} as-of "
        f"questions, {pairs} look-alike pairs, among the demo sample's memories; `context --budget {BUDGET}`; "
        f"embedder {args.embedder}; {superseded_facts(home)} fact versions marked superseded by the night.\n\n"
        + table(["measure", "before the night", "after one night", "target", "verdict"], rows)
    )
    append_results("current facts", body, env, load_before)
