"""`python -m benchmarks current-facts [--set NAME] [--work DIR]`: does what the agent reads say what holds now?

The labelled sets (written before they were first measured; the scoring rule is benchmarks/current_facts_rule.md):
facts stated in 2–4 versions over several weeks, as-of questions naming a day, and pairs of look-alike facts that
are not versions of each other — among the demo sample's 1,551 unrelated memories. `original`
(current_facts.json) mostly repeats its wording between versions; `terse` (terse notes) and `chat`
(conversational) reword every version, add ≥ 500 unrelated notes carrying numbers, ids and times, and are split by
fact into a dev part and a held-out part, reported apart. Without `--set`, all three run, each in its own table.
Measured with `context --budget 1000` (the compiled prompt), before the night and after one night:

- current value first: the fact's latest value appears in the prompt, before any of its earlier values;
- as-of: for a question naming a day, the value valid that day appears before the fact's other values — with the
  day given as `as_of`, and with the question's own words only;
- false supersessions: look-alike pairs of which one was marked superseded by the other; and, in the reworded
  sets, supersessions involving an unrelated note on either side.

A value counts in its normalised form: "1 percent" is "1%", "4:45 pm" is "16:45", "12.5k" is "$12,500".
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import append_results, load_average, machine, table

DATA = Path(__file__).resolve().parent / "current_facts.json"
SETS = {"original": DATA, "terse": DATA.with_name("current_facts_terse.json"),
        "chat": DATA.with_name("current_facts_chat.json")}  # fmt: skip
SPLITS = ("dev", "held_out")
NOW = datetime(2026, 11, 25, 3, 30, tzinfo=UTC)  # the night runs after the last version was stated
BUDGET = 1000


@dataclass(frozen=True)
class Question:
    text: str
    expected: str  # the value the answer states
    others: tuple[str, ...]  # the fact's other values
    words: frozenset[str]  # what every version of the fact says: a prompt line with two of them is about it
    as_of: date | None = None
    split: str = "all"


_STOP = frozenset("the and for from with now new this that our was were are has have per is my we to at of".split())


def subject_words(texts: list[str]) -> frozenset[str]:
    sets = [{w for w in re.findall(r"[a-z][a-z-]+", t.lower().replace("'", "")) if w not in _STOP} for t in texts]
    return frozenset(set.intersection(*sets)) if sets else frozenset()


_MONTHS = {m: m[:3] for m in "january february march april june july august september october november december"
           .split()}  # fmt: skip
_MONTHS |= {m[:3]: m[:3] for m in _MONTHS} | {"sept": "sep"}
_DAYS = {d: d[:3] for d in "monday tuesday wednesday thursday friday saturday sunday".split()}
_DAYS |= {d[:3]: d[:3] for d in _DAYS} | {"tues": "tue", "thurs": "thu"}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY = "|".join(sorted(_DAYS, key=len, reverse=True))
_CURRENCY = {"usd": "$", "eur": "€", "gbp": "£"}


def _clock(m: re.Match[str]) -> str:
    hour = int(m[1]) % 12 + (12 if m[3] == "p" else 0)
    return f"{hour:02d}:{m[2] or '00'}"


def _money(symbol: str, amount: str) -> str:
    whole, _, cents = amount.replace(",", "").partition(".")
    return f"{symbol}{int(whole):,}" + (f".{cents}" if cents else "")


def normalised(text: str) -> str:
    """`text` with values written one way: "1 percent" → "1%", "4:45 pm" → "16:45", "9:30" → "09:30",
    "12.5k" → "$12,500", "30 USD" → "$30", "Thursdays at 14:00" → "thu 14:00", "14 October" → "oct 14"."""
    t = text.lower()
    t = re.sub(r"(\d+(?:\.\d+)?)\s*(?:%|percent\b|pct\b)", r"\1%", t)
    t = re.sub(r"\b(\d{1,2})(?:[:.](\d{2}))?\s*([ap])\.?m\b\.?", _clock, t)
    t = re.sub(r"(?<![\d:.])(\d):(\d{2})\b", r"0\1:\2", t)
    t = re.sub(r"([$€£]?)(\d+(?:\.\d+)?)k\b", lambda m: _money(m[1] or "$", str(round(float(m[2]) * 1000))), t)
    t = re.sub(r"(\d[\d,]*(?:\.\d+)?)\s*(usd|eur|gbp)\b", lambda m: _money(_CURRENCY[m[2]], m[1]), t)
    t = re.sub(r"([$€£])(\d[\d,]*(?:\.\d+)?)", lambda m: _money(m[1], m[2]), t)
    t = re.sub(rf"\b({_DAY})s?\b(?:\s+at)?(?=\s+\d)", lambda m: _DAYS[m[1]], t)
    t = re.sub(rf"\b({_DAY})s?\b", lambda m: _DAYS[m[1]], t)
    t = re.sub(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\b", lambda m: f"{_MONTHS[m[2]]} {int(m[1])}", t)
    return re.sub(rf"\b({_MONTH})\s+(\d{{1,2}})\b(?![:\d])", lambda m: f"{_MONTHS[m[1]]} {int(m[2])}", t)


def _at(day: str) -> str:
    return f"{day}T09:00:00Z"


def _pair(item: list[Any] | dict[str, Any]) -> list[Any]:
    return item["pair"] if isinstance(item, dict) else item  # the reworded sets give each pair its split


def unrelated(data: dict[str, Any]) -> list[tuple[str, date, str]]:
    """The set's unrelated notes (none in the original set), each with its split: alternate notes."""
    from benchmarks.unrelated_notes import unrelated_notes

    spec = data.get("unrelated")
    if not spec:
        return []
    notes = unrelated_notes(spec["count"], seed=spec["seed"], style=spec["style"])
    return [(text, day, SPLITS[i % 2]) for i, (text, day) in enumerate(notes)]


def records(data: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for fact in data["facts"]:
        for i, (text, _value, day) in enumerate(fact["versions"]):
            out.append({"id": f"f-{fact['id']}-{i}", "content": text, "created_at": _at(day), "categories": ["facts"]})
    for n, item in enumerate(data["lookalikes"]):
        for side, (text, day) in zip("ab", _pair(item), strict=True):
            out.append({"id": f"l-{n}-{side}", "content": text, "created_at": _at(day), "categories": ["facts"]})
    for n, (text, day, _split) in enumerate(unrelated(data)):
        out.append({"id": f"u-{n}", "content": text, "created_at": _at(day.isoformat()), "categories": ["notes"]})
    return out


def questions(data: dict[str, Any]) -> tuple[list[Question], list[Question]]:
    facts = {f["id"]: f for f in data["facts"]}
    current = []
    for f in data["facts"]:
        values = [v for _t, v, _d in f["versions"]]
        words = subject_words([normalised(t) for t, _v, _d in f["versions"]])
        others = tuple(v for v in values[:-1] if normalised(v) != normalised(values[-1]))  # A → B → A: A is current
        current.append(Question(f["question"], values[-1], others, words, split=f.get("split", "all")))
    as_of = []
    for q in data["as_of"]:
        versions = facts[q["fact"]]["versions"]
        day = date.fromisoformat(q["as_of"])
        valid = [v for _t, v, d in versions if date.fromisoformat(d) <= day][-1]
        words = subject_words([normalised(t) for t, _v, _d in versions])
        others = tuple(v for _t, v, _d in versions if normalised(v) != normalised(valid))
        as_of.append(Question(q["question"], valid, others, words, day, q.get("split", "all")))
    return current, as_of


def _position(prompt: str, value: str) -> int | None:
    """Where `value` is in the (normalised) `prompt`, in its normalised form."""
    m = re.search(rf"(?<![\w.]){re.escape(normalised(value))}(?![\w%]|[.,]\d)", prompt)  # "$25" is not in "$25,000"
    return m.start() if m else None


def first(prompt: str, q: Question) -> bool:
    """The expected value is in the prompt's lines about the fact, before every other value of the fact there.
    Only lines about the fact count (two of the words all its versions share, or all of them if fewer): values
    such as "2%" or "3" also occur in unrelated memories, which say nothing about this fact. A fact whose
    versions share no word has every line of the prompt count: each line that states one of its values."""
    need = min(2, len(q.words))
    prompt = "\n".join(line for line in map(normalised, prompt.splitlines())
                       if sum(w in line for w in q.words) >= need)  # fmt: skip
    mine = _position(prompt, q.expected)
    others = [p for v in q.others if (p := _position(prompt, v)) is not None]
    return mine is not None and all(mine < p for p in others)


Outcomes = dict[str, list[tuple[str, bool]]]  # measure → (split, passed) per question


def measure(home: Path, embedder: Any, current: list[Question], as_of: list[Question]) -> Outcomes:
    from memory_pipeline.context.gate import Gate
    from memory_pipeline.context.search_adapter import default_search
    from memory_pipeline.context.service import compile_for_agent

    def prompt(q: Question, explicit: bool) -> str:
        at = datetime.combine(q.as_of, datetime.max.time()) if explicit and q.as_of else None
        out, _ = compile_for_agent(home, q.text, budget_tokens=BUDGET, search=default_search(
            home, embedder, today=NOW.date(), as_of=at), gate=Gate(), today=NOW.date())  # fmt: skip
        return out.prompt

    return {
        "current value first": [(q.split, first(prompt(q, False), q)) for q in current],
        "as-of (as_of given)": [(q.split, first(prompt(q, True), q)) for q in as_of],
        "as-of (question's words)": [(q.split, first(prompt(q, False), q)) for q in as_of],
    }


def share(outcomes: list[tuple[str, bool]], split: str) -> float:
    mine = [ok for s, ok in outcomes if s == split]
    return sum(mine) / len(mine) if mine else float("nan")


def _split(item: list[Any] | dict[str, Any]) -> str:
    return item.get("split", "all") if isinstance(item, dict) else "all"


def false_supersessions(home: Path, data: dict[str, Any]) -> tuple[Counter[str], Counter[str]]:
    """Per split: the look-alike pairs of which one was marked superseded by the other, and the supersessions
    that involve an unrelated note on either side (counted in the split of the note superseded, else of the
    note superseding)."""
    import duckdb

    con = duckdb.connect(str(home / "memory.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT id, CAST(superseded_by AS VARCHAR) FROM memories WHERE superseded_by IS NOT NULL"
                           " AND (id LIKE 'l-%' OR id LIKE 'u-%' OR CAST(superseded_by AS VARCHAR) LIKE 'u-%')"
                           ).fetchall()  # fmt: skip
    finally:
        con.close()
    splits = [_split(item) for item in data["lookalikes"]]
    wrong = {r[0].rsplit("-", 1)[0] for r in rows if str(r[1]).rsplit("-", 1)[0] == r[0].rsplit("-", 1)[0]}
    pairs = Counter(splits[int(pair.split("-")[1])] for pair in wrong)
    notes = Counter(SPLITS[int(u[2:]) % 2] for r in rows if (u := next((i for i in r if i.startswith("u-")), None)))
    return pairs, notes


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
    )  # fmt: skip


def run(name: str, args: argparse.Namespace) -> None:
    """Build the set's store, measure, run one night, measure again; append the set's own table."""
    from memory_pipeline.search import refresh_index

    load_before, env = load_average(), machine()
    data = json.loads(SETS[name].read_text())
    current, as_of = questions(data)
    home, embedder = build(args.work, data, args.embedder)
    before = measure(home, embedder, current, as_of)
    result = night(home, args.embedder)
    if not result.success:
        raise SystemExit("the night failed: see its log above")
    refresh_index(home)
    after = measure(home, embedder, current, as_of)
    wrong, involved = false_supersessions(home, data)
    notes = unrelated(data)
    splits = SPLITS if notes else ("all",)
    targets = {"current value first": 0.95, "as-of (as_of given)": 0.90, "as-of (question's words)": 0.90}
    rows = []
    for split in splits:
        for measure_name, target in targets.items():
            b, a = share(before[measure_name], split), share(after[measure_name], split)
            rows.append([measure_name, split, f"{b:.3f}", f"{a:.3f}", f"≥ {target:.2f}",
                         "met" if a >= target else "missed"])  # fmt: skip
        pairs = sum(_split(item) == split for item in data["lookalikes"])
        rate = wrong[split] / pairs if pairs else float("nan")
        rows.append(["false supersessions (look-alike pairs)", split, "—", f"{wrong[split]}/{pairs} = {rate:.3f}",
                     "≤ 0.01", "met" if rate <= 0.01 else "missed"])  # fmt: skip
        if notes:
            rows.append(["false supersessions (unrelated notes)", split, "—", str(involved[split]), "0",
                         "met" if involved[split] == 0 else "missed"])  # fmt: skip

    def counts(split: str) -> str:
        facts = [f for f in data["facts"] if f.get("split", "all") == split]
        return (f"{len(facts)} facts ({sum(len(f['versions']) for f in facts)} versions), "
                f"{sum(q.split == split for q in as_of)} as-of questions, "
                f"{sum(_split(item) == split for item in data['lookalikes'])} look-alike pairs"
                + (f", {sum(s == split for _t, _d, s in notes)} unrelated notes" if notes else ""))  # fmt: skip

    body = (
        f"Set `{name}` ({SETS[name].name}{'; ' + data['style'] if 'style' in data else ''}): "
        + "; ".join(f"{split}: {counts(split)}" for split in splits)
        + f"; among the demo sample's memories; `context --budget {BUDGET}`; embedder {args.embedder}; "
        f"{superseded_facts(home)} fact versions marked superseded by the night.\n\n"
        + table(["measure", "split", "before the night", "after one night", "target", "verdict"], rows)
    )
    append_results(f"current facts ({name})", body, env, load_before)


def main(argv: list[str]) -> None:
    from memory_pipeline.embedding.spec import MINILM

    parser = argparse.ArgumentParser(prog="python -m benchmarks current-facts", description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=list(SETS), action="append", dest="sets",
                        help="labelled set to run (repeatable; default: all three, each in its own table)")  # fmt: skip
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "memory-pipeline-current-facts",
                        help="scratch folder (rebuilt)")  # fmt: skip
    parser.add_argument("--embedder", default=MINILM, help="embedding model (default: the shipped MiniLM)")
    args = parser.parse_args(argv)
    for name in args.sets or ["original", "terse", "chat"]:
        run(name, args)
