"""`python -m benchmarks named-questions [--notes N]`: is a question that names a person, host or thing no memory
names ever answered confidently with another's value, and does one whose named thing is stored stay confident?

Labelled questions (benchmarks/named_questions.json, written before the rule): a small store of the set's memories
among N unrelated notes (`benchmarks/unrelated_notes.py`), indexed with the default embedder, asked as `search`
and the MCP `search` tool answer (`search.named.checked` over the engine's hits; without it, the engine's match
as it is). Reported per split: never-stored questions answered `confident`, and stored ones kept `confident`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks import common

DATA = common.HERE / "named_questions.json"
SPLITS = ("dev", "held_out")


def _workspace(root: Path, memories: list[str], notes: int) -> Path:
    from benchmarks.unrelated_notes import unrelated_notes
    from memory_pipeline.search import build_index
    from memory_pipeline.search.engine import default_embedder
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_jsonl

    ws = root / "ws"
    ws.mkdir()
    t0 = datetime(2026, 8, 1, 9)
    lines = [{"id": f"m{i}", "content": t, "created_at": (t0 + timedelta(days=i)).isoformat()}
             for i, t in enumerate(memories)]  # fmt: skip
    lines += [{"id": f"n{i}", "content": t, "created_at": f"{d.isoformat()}T10:00:00"}
              for i, (t, d) in enumerate(unrelated_notes(notes, seed=11))]  # fmt: skip
    (root / "m.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    import_jsonl(MemoryStore(ws / "memory.duckdb"), root / "m.jsonl")
    build_index(ws, *default_embedder())
    return ws


def score(data: dict[str, Any], notes: int) -> dict[str, Any]:
    from memory_pipeline.search import search

    try:
        from memory_pipeline.search import named

        checked = named.checked
    except ImportError:  # the code before the rule: the engine's match as it is
        checked = None

    out: dict[str, Any] = {s: {"never": 0, "never_confident": 0, "stored": 0, "stored_confident": 0, "wrong": []}
                           for s in SPLITS}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        ws = _workspace(Path(tmp), data["memories"], notes)
        for q in data["questions"]:
            hits = search(q["q"], 5, home=ws)
            hits = checked(q["q"], hits) if checked is not None else hits
            confident = bool(hits) and getattr(hits, "match", "confident") == "confident"
            row = out[q["split"]]
            key = "stored" if q["stored"] else "never"
            row[key] += 1
            row[f"{key}_confident"] += confident
            if confident != q["stored"]:
                row["wrong"].append(f"{q['q']} → {hits.match}: {hits[0].text if hits else '-'}")
    return out


def demo_weak(home: Path) -> tuple[int, int, list[str]]:
    """On a demo workspace (`memory-pipeline demo`), the answerable questions of `demo_questions.json` that search
    answers confidently and the check marks weak: (marked weak, answered confident, the questions marked)."""
    from memory_pipeline.search import named, search

    questions = json.loads((common.HERE / "demo_questions.json").read_text(encoding="utf-8"))["questions"]
    confident, weak = 0, []
    for q in questions:
        hits = search(q["q"], 5, home=home)
        if not hits or getattr(hits, "match", "confident") != "confident":
            continue
        confident += 1
        if named.checked(q["q"], hits).match != "confident":
            weak.append(q["q"])
    return len(weak), confident, weak


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks named-questions", description=__doc__.split("\n")[0])
    p.add_argument("--notes", type=int, default=500, help="unrelated notes the set's memories sit among")
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--label", default="this branch")
    p.add_argument("--record", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--show", action="store_true", help="print each question scored wrong")
    p.add_argument("--demo-home", type=Path, help="a demo workspace: also count its answerable questions that the "
                   "check marks weak (benchmarks/demo_questions.json)")  # fmt: skip
    args = p.parse_args(argv)
    if args.demo_home is not None and not (args.demo_home / "memory.duckdb").is_file():
        p.error(f"--demo-home {args.demo_home}: no memory store there; build one with `memory-pipeline demo`")
    env, load_before = common.machine(), common.load_average()
    out = score(json.loads(args.data.read_text(encoding="utf-8")), args.notes)
    rows = []
    for split in SPLITS:
        r = out[split]
        rows.append((args.label, split, f"{r['never_confident']} of {r['never']}",
                     f"{r['stored_confident']} of {r['stored']}"))  # fmt: skip
        if args.show:
            print("\n".join(f"  {split}: {w}" for w in r["wrong"]))
    body = ("### Questions naming what no memory names: answered confidently (default embedder, "
            f"{args.notes:,} unrelated notes)\n\n"
            + common.table(("code", "split", "never stored, answered confident", "stored, kept confident"), rows))
    if args.demo_home is not None:
        marked, asked, which = demo_weak(args.demo_home)
        body += (f"\n\nDemo workspace: {marked} of {asked} answerable questions search answers confidently are marked "
                 "weak by the check" + "".join(f"\n- {q}" for q in which))
    print(body)
    if args.record:
        common.append_results("named-questions", body, env, load_before)
    return out


if __name__ == "__main__":
    main()
