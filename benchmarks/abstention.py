"""`python -m benchmarks abstention`: a gate for questions about things never stored, chosen by a written rule.

The rule (benchmarks/abstention_rule.md, committed before the first run and amended before each new pair of
candidates): gates on top of the shipped floors reading a question's content words (its words less a maintained
stop list) — `unseen`, `focus`, `rarest`, `cover`/`cover-rare` (one hit holds every focus word), each with a rescue
bar `t`, `unseen-hit`/`unseen-word` (every word no memory holds is near a hit, or a hit's word, by MiniLM
cosine ≥ `w`), `margin` (the best hit's lead over the next ≥ `m`) and `agree` (the best BM25 hit among the `n` best
by cosine) — each bar chosen on LoCoMo dev alone (the highest on its grid at which answerable questions lose at
most 0.5 % of their hits), then judged on the held-out everyday set (benchmarks/everyday_questions.json): 127
notes, 44 answerable and 44 never-stored questions.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import HERE, append_results, load_average, machine, table
from memory_pipeline.search.confidence import Signal

EVERYDAY = HERE / "everyday_questions.json"
NEVER = HERE / "search_never_stored.txt"
GRID: list[float | None] = [round(0.08 + 0.02 * i, 2) for i in range(27)] + [None]  # None: no rescue
CANDIDATES = ("unseen", "focus", "rarest", "cover", "cover-rare", "unseen-hit", "unseen-word", "margin", "agree")
NEAR = ("unseen-hit", "unseen-word")  # candidates with a word-level bar `w` instead of the rescue bar `t`
# each candidate's bars where they are not GRID, loosest first (`choose` takes the strictest that passes)
GRIDS: dict[str, list[float | None]] = {
    **dict.fromkeys(NEAR, [round(0.20 + 0.05 * i, 2) for i in range(15)]),
    "margin": [round(0.01 * i, 2) for i in range(21)],  # `m`: the top hit's `specific` over the second's
    "agree": [10, 5, 3, 2, 1],  # `n`: the top BM25 hit among the n best by cosine
}
SHARES = {"cover-rare": 0.02}  # a candidate's focus-word share bar where it is not FOCUS_SHARE
GATES = {"cover-rare": "cover"}  # a candidate's gate where its name is not the gate's
FOCUS_SHARE = 0.05
LOCOMO_LOSS = 0.005
EVERYDAY_NEVER = 0.05


@dataclass
class Asked:
    """One question's shipped hits, as the candidates read them."""

    group: str  # "locomo" | "probe" | "cross" | "everyday"
    text: str
    never: bool
    found: bool  # answerable: its evidence among the shipped top 10
    words: dict[str, float]  # content word → share of documents holding it (0: none)
    hits: list[tuple[float, frozenset[str]]]  # (specific, the hit's words), top 10 over the shipped floors
    parts: list[tuple[float, float]]  # (BM25 part, cosine) of the same hits
    unseen: list[str]  # content words, as the question spells them, whose stem no memory holds
    texts: list[str]  # the hits' texts
    near: dict[str, float]  # candidate in NEAR → the least-covered unseen word's highest cosine (see focus.nearest)
    signals: list[Signal] = field(default_factory=list)  # what the combined gate reads of the same hits
    conv: str = ""  # the LoCoMo conversation asked (the everyday store: "everyday")


def unseen_words(question: str, held: Callable[[str], bool]) -> list[str]:
    """The question's content words, in its own spelling, whose stem no memory holds (`held(stem)` False)."""
    from memory_pipeline.search.focus import FUNCTION_WORDS
    from memory_pipeline.search.tokens import _WORDS, stem

    words = (w for w in _WORDS.findall(question.lower()) if w not in FUNCTION_WORDS)
    return [w for w in dict.fromkeys(words) if not held(stem(w))]


def nearest(unseen: np.ndarray, near: np.ndarray) -> float:
    """How near the question's least-covered unseen word is to the hits: the lowest, over the unseen words'
    vectors, of their highest cosine to `near` (vectors of the hits, or of the hits' words; unit rows). No unseen
    word: +inf (nothing to cover); nothing to be near: -inf."""
    if not len(unseen):
        return float("inf")
    if not len(near):
        return float("-inf")
    return float((unseen @ near.T).max(axis=1).min())


def margin(specific: Sequence[float]) -> float:
    """The highest `specific` over the second highest (one hit: over 0; none: -inf)."""
    top = sorted(specific, reverse=True)[:2] + [0.0]
    return top[0] - top[1] if specific else float("-inf")


def agree(parts: Sequence[tuple[float, float]], n: int) -> bool:
    """Whether the hit with the highest BM25 part is among the `n` with the highest cosine (a tie in BM25: the
    first in search's order). No hit holding a query word (every BM25 part 0): no lexical ranking, no agreement."""
    if not parts or max(b for b, _ in parts) <= 0:
        return False
    lexical = max(range(len(parts)), key=lambda i: (parts[i][0], -i))
    by_cosine = sorted(range(len(parts)), key=lambda i: (-parts[i][1], i))
    return lexical in by_cosine[:n]


def answered(a: Asked, candidate: str, t: float | None) -> bool:
    """Whether the candidate gate with rescue bar `t` lets the question's shipped hits through."""
    from memory_pipeline.search.focus import focus_open

    if candidate in NEAR:
        return bool(a.hits) and a.near[candidate] >= (t if t is not None else 0.20)
    if candidate == "margin":
        return margin([s for s, _ in a.hits]) >= (t or 0.0)
    if candidate == "agree":
        return agree(a.parts, int(t or 10))
    return focus_open(a.words, a.hits, GATES.get(candidate, candidate), SHARES.get(candidate, FOCUS_SHARE), t)


def _ask(home: Path, questions: Sequence[tuple[str, bool, Callable[[list[Any]], bool]]], group: str,
         encode: Any, model: str, now: datetime, near: bool = True, conv: str = "") -> list[Asked]:  # fmt: skip
    from memory_pipeline.search import search
    from memory_pipeline.search.engine import clear_cache
    from memory_pipeline.search.focus import content_words
    from memory_pipeline.search.index import load_index, tokenize
    from memory_pipeline.search.scoring import idf_share

    clear_cache()
    idx = load_index(home)
    out = []
    for text, never, evidence in questions:
        hits = search(text, 10, home=home, embedder=(encode, model), now=now)
        words = {}
        content = content_words(text)
        for w in [t for t in dict.fromkeys(tokenize([text])[0]) if t in content]:
            idf = idx.idf_of(w)
            words[w] = 0.0 if idf is None else idf_share(idf, idx.n_live)
        out.append(Asked(group, text, never, bool(hits) and not never and evidence(hits), words,
                         [(h.parts.get("specific", 0.0), frozenset(tokenize([h.text])[0])) for h in hits],
                         [(h.parts.get("bm25", 0.0), h.parts.get("vector", 0.0)) for h in hits],
                         unseen_words(text, lambda w: idx.idf_of(w) is not None),
                         [h.text for h in hits], {}, _signals(hits, now), conv))  # fmt: skip
    return _near(out, encode) if near else out


def _signals(hits: list[Any], now: datetime) -> list[Signal]:
    from memory_pipeline.search.index import tokenize

    return [Signal(h.parts.get("specific", 0.0), h.parts.get("bm25", 0.0), h.parts.get("vector", 0.0),
                   h.parts.get("relevance", 0.0), frozenset(tokenize([h.text])[0]), h.kind,
                   (now.timestamp() - h.stated) / 86400 if h.stated else 0.0) for h in hits]  # fmt: skip


def _near(asked: list[Asked], encode: Any) -> list[Asked]:
    """Candidates 9-10's figure for each question: its unseen words against its hits, and against their words."""
    from memory_pipeline.search.focus import FUNCTION_WORDS
    from memory_pipeline.search.tokens import _WORDS

    for a in asked:
        words = sorted({w for t in a.texts for w in _WORDS.findall(t.lower()) if w not in FUNCTION_WORDS})
        a.near = {"unseen-hit": _nearest(a.unseen, a.texts, encode), "unseen-word": _nearest(a.unseen, words, encode)}
    return asked


def _nearest(unseen: list[str], near: list[str], encode: Any) -> float:
    if not unseen or not near:
        return float("inf") if not unseen else float("-inf")
    return nearest(encode(unseen), encode(near))


def run(data: Path, conversations: list[str] | None, near: bool = True, heldout: Sequence[str] = ()) -> list[Asked]:
    from benchmarks.search_locomo import _cached, cross_probes
    from memory_pipeline.evaluation.locomo import answer_support, evidence_hit, load_locomo, write_jsonl
    from memory_pipeline.resources.embedder import MINILM, EmbedderResource
    from memory_pipeline.search import build_index
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_jsonl

    encode = _cached(EmbedderResource(model=MINILM).encode)
    probes = [q for q in NEVER.read_text().splitlines() if q.strip() and not q.startswith("#")]
    rows: list[Asked] = []
    with tempfile.TemporaryDirectory() as tmp:
        convs = load_locomo(data, conversations)
        for conv in convs:
            home = Path(tmp) / conv.sample_id
            home.mkdir()
            import_jsonl(MemoryStore(home / "memory.duckdb"), write_jsonl(conv, home / "turns.jsonl"))
            build_index(home, encode, MINILM)
            now = (conv.last_session_at + timedelta(days=1)).replace(tzinfo=UTC)
            qs = [(q.question, False, lambda hits, q=q: bool(evidence_hit(q.evidence, [h.id for h in hits], {})))
                  for q in conv.questions if q.category != 5 and q.evidence]  # fmt: skip
            sid = conv.sample_id
            rows += _ask(home, qs, "locomo", encode, MINILM, now, near, sid)
            rows += _ask(home, [(p, True, bool) for p in probes], "probe", encode, MINILM, now, near, sid)
            rows += _ask(home, [(p, True, bool) for p in cross_probes(conv, convs)], "cross", encode, MINILM, now,
                         near, sid)  # fmt: skip
        everyday = json.loads(EVERYDAY.read_text(encoding="utf-8"))
        home = Path(tmp) / "everyday"
        home.mkdir()
        lines = [json.dumps({"id": f"note-{i:03d}", "content": n["text"], "created_at": f"{n['date']}T09:00:00+00:00"})
                 for i, n in enumerate(everyday["notes"])]  # fmt: skip
        (home / "notes.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        import_jsonl(MemoryStore(home / "memory.duckdb"), home / "notes.jsonl")
        build_index(home, encode, MINILM)
        now = datetime(2026, 11, 28, 9, tzinfo=UTC)
        qs = [(q["q"], False, lambda hits, a=q["answer"]: bool(answer_support(a, [h.text for h in hits])))
              for q in everyday["answerable"]]  # fmt: skip
        asked = qs + [(q, True, bool) for q in everyday["never"]]
        rows += _ask(home, asked, "everyday", encode, MINILM, now, near=near, conv="everyday")
        if heldout:
            rows += _ask(home, [(q, True, bool) for q in heldout], "heldout", encode, MINILM, now, near=near,
                         conv="everyday")  # fmt: skip
    return rows


def rates(rows: list[Asked], group: str, candidate: str | None, t: float | None) -> tuple[float, float, int, int]:
    """(answerable loss, never-stored answered, answerable found, never-stored asked) for one group."""

    def passes(a: Asked) -> bool:
        return bool(a.hits) if candidate is None else answered(a, candidate, t)

    found = [a for a in rows if a.group == group and a.found]
    never = [a for a in rows if a.group == group and a.never]
    loss = sum(not passes(a) for a in found) / max(len(found), 1)
    return loss, sum(passes(a) for a in never) / max(len(never), 1), len(found), len(never)


def choose(rows: list[Asked]) -> dict[str, float | None]:
    """Each candidate's bar (`t`, `w`, `m` or `n`): the strictest on its grid (no rescue counts strictest) with
    LoCoMo loss ≤ 0.5 %."""
    out: dict[str, float | None] = {}
    for c in CANDIDATES:
        grid = GRIDS.get(c, GRID)
        ok = [t for t in grid if rates(rows, "locomo", c, t)[0] <= LOCOMO_LOSS]
        out[c] = ok[-1] if ok else grid[0]
    return out


def report(rows: list[Asked]) -> str:
    chosen = choose(rows)
    heads = ["gate", "bar (t, w, m or n)", "LoCoMo loss", "LoCoMo probes answered", "cross answered", "everyday loss",
             "everyday never answered", "passes"]  # fmt: skip
    body, passing = [], []
    for c in (None, *CANDIDATES):
        t = chosen.get(c) if c else None
        lo, _, nf, _ = rates(rows, "locomo", c, t)
        _, pr, _, _ = rates(rows, "probe", c, t)
        _, cr, _, _ = rates(rows, "cross", c, t)
        el, en, ef, nn = rates(rows, "everyday", c, t)
        ok = c is not None and el * ef <= 1 and en <= EVERYDAY_NEVER
        if ok:
            passing.append((en * nn + pr * sum(a.group == "probe" for a in rows), CANDIDATES.index(c), c))
        body.append([c or "shipped", _bar(c, t), f"{lo:.3f}",
                     f"{pr:.3f}", f"{cr:.3f}", f"{el:.3f} ({round(el * ef)} of {ef})",
                     f"{en:.3f} ({round(en * nn)} of {nn})", "yes" if ok else "no"])  # fmt: skip
    found = sum(a.found for a in rows if a.group == "locomo")
    verdict = f"ships: `{min(passing)[2]}`" if passing else "none passes: nothing ships"
    text = (f"LoCoMo: {found} answerable questions with evidence in the shipped top 10. Rule: "
            f"`benchmarks/abstention_rule.md`. {verdict}.\n\n") + table(heads, body)  # fmt: skip
    everyday = [a for a in rows if a.group == "everyday"]
    for c in CANDIDATES:
        leaks = [a for a in everyday if a.never and answered(a, c, chosen[c])]
        text += f"\n- `{c}` answers never-stored: {', '.join(sorted(map(_q, leaks))) or 'none'}"
    return text + "\n"


def _bar(candidate: str | None, t: float | None) -> str:
    if candidate is None:
        return "-"
    return "none" if t is None else f"{t:.0f}" if candidate == "agree" else f"{t:.2f}"


def _q(a: Asked) -> str:
    return a.text


def main(argv: list[str]) -> None:
    from memory_pipeline.evaluation.locomo_transcripts import default_locomo_path

    parser = argparse.ArgumentParser(prog="python -m benchmarks abstention", description=__doc__)
    parser.add_argument("--data", type=Path, default=default_locomo_path())
    parser.add_argument("--conversations", default="", help="comma-separated sample ids (default: all)")
    parser.add_argument("--rows", type=Path, default=None, help="also write each question's hits here (JSON)")
    args = parser.parse_args(argv)
    env, load = machine(), load_average()
    rows = run(args.data, [c for c in args.conversations.split(",") if c] or None)
    if args.rows:
        args.rows.write_text(json.dumps([{**vars(a), "hits": [[s, sorted(w)] for s, w in a.hits]} for a in rows],
                                        default=str))  # fmt: skip
    append_results("abstention: a gate for never-stored questions", report(rows), env, load)
