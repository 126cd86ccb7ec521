"""`python -m benchmarks version-families [--notes N] [--data FILE]`: does the night's Versioner
(`abstraction.versions.plan`) supersede the older value when a newer memory restates the attribute or says the
value changed, and never between look-alikes or unrelated notes?

Labelled families (benchmarks/version_families.json, written before the change-word rule and the look-alike guard):
each split's families are planned together, among N unrelated notes carrying numbers, ids and times
(`benchmarks/unrelated_notes.py`). Scored per split:

- current first: a version family whose latest memory is not superseded and every earlier one is;
- as-of: for a day, the memory that held then is the only one of its family valid that day (holding by then —
  from when it was stated, or from the later start it states, `statements.starts.holds_from`, as reading does —
  and not yet superseded: the plan's `valid_until`);
- false supersessions: any supersession inside a look-alike or unrelated family, across two families, or
  touching a note;
- as-of through search: the same as-of days asked of the real read path (`search` with `as_of`, the hashing
  embedder, the family's first memory as the query) over a store of the split's families after the plan is
  applied: the memory that held then is its family's first hit and not marked superseded.

Words alone (no embedder): the night's rule with the embedder only adds what the words leave open.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks import common

DATA = common.HERE / "version_families.json"
SPLITS = ("dev", "held_out", "held_out_2")
VERSION_KINDS = ("says_change", "shares_words")


def _day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(hour=9)


def score(families: list[dict[str, Any]], notes: int) -> dict[str, Any]:
    """One plan over the families (and `notes` unrelated notes), scored as the module says."""
    from benchmarks.unrelated_notes import unrelated_notes
    from memory_pipeline.abstraction.versions import plan
    from memory_pipeline.statements.starts import holds_from
    from memory_pipeline.store.validity import FactRow

    rows, family_of = [], {}
    for f in families:
        for i, (text, day) in enumerate(f["memories"]):
            mid = f"{f['id']}-{i}"
            rows.append(FactRow(mid, text, _day(day), None))
            family_of[mid] = f["id"]
    start = datetime(2026, 7, 1)
    rows += [FactRow(f"note-{i}", text, datetime.combine(day, start.time()), None)
             for i, (text, day) in enumerate(unrelated_notes(notes, seed=7))]  # fmt: skip
    made = plan(rows).supersessions
    until = {s.memory_id: s.valid_until for s in made}
    out: Counter[str] = Counter()
    wrong: list[str] = []
    for f in families:
        ids = [f"{f['id']}-{i}" for i in range(len(f["memories"]))]
        inside = [s for s in made if s.memory_id in ids]
        if f["kind"] in VERSION_KINDS:
            out[f"{f['kind']}_families"] += 1
            ok = ids[-1] not in until and all(i in until for i in ids[:-1])
            out[f"{f['kind']}_current"] += ok
            if not ok:
                wrong.append(f"{f['id']}: current value not first")
            for day, expected in f.get("as_of", []):
                at = _day(day)
                valid = [i for i, (text, said) in zip(ids, f["memories"], strict=True)
                         if holds_from(text, _day(said)) <= at and not (i in until and until[i] <= at)]  # fmt: skip
                out["as_of"] += 1
                out["as_of_right"] += valid == [ids[expected]]
                if valid != [ids[expected]]:
                    wrong.append(f"{f['id']} as of {day}: valid {valid}")
        else:
            out["look_alike_or_unrelated"] += 1
            out["false"] += len(inside)
            wrong += [f"{f['id']}: {s.memory_id} superseded by {s.superseded_by}" for s in inside]
    crossing = [s for s in made if family_of.get(s.memory_id) != family_of.get(s.superseded_by)]
    out["false"] += len(crossing)
    wrong += [f"across: {s.memory_id} superseded by {s.superseded_by}" for s in crossing]
    return {"counts": dict(out), "wrong": wrong}


def searched(families: list[dict[str, Any]]) -> tuple[int, int, list[str]]:
    """(right, asked, wrong) of the as-of days through `search` over the families' store after one plan."""
    import tempfile

    from memory_pipeline.abstraction.versions import plan
    from memory_pipeline.embedding.hashing import hashing_embed
    from memory_pipeline.embedding.spec import HASHING
    from memory_pipeline.search import build_index, search
    from memory_pipeline.search.engine import clear_cache
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_jsonl
    from memory_pipeline.store.validity import apply, fact_rows

    right, asked, wrong = 0, 0, []
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        rows = [{"id": f"{f['id']}-{i}", "content": text, "created_at": _day(day).isoformat()}
                for f in families for i, (text, day) in enumerate(f["memories"])]  # fmt: skip
        (Path(tmp) / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        store = MemoryStore(ws / "memory.duckdb")
        import_jsonl(store, Path(tmp) / "m.jsonl")
        with store.transaction() as con:
            apply(con, plan(fact_rows(con)).supersessions, "version-families", datetime(2026, 12, 1))
        build_index(ws, hashing_embed, HASHING)
        clear_cache()
        for f in families:
            ids = [f"{f['id']}-{i}" for i in range(len(f["memories"]))]
            for day, expected in f.get("as_of", []):
                hits = search(f["memories"][0][0], 10, home=ws, embedder=(hashing_embed, HASHING), floor=0.0,
                              as_of=_day(day).isoformat())  # fmt: skip
                mine = [h for h in hits if h.id in ids]
                ok = bool(mine) and mine[0].id == ids[expected] and not mine[0].superseded_by
                right, asked = right + ok, asked + 1
                if not ok:
                    wrong.append(f"{f['id']} as of {day} through search: {[(h.id, h.superseded_by) for h in mine]}")
        clear_cache()
    return right, asked, wrong


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks version-families", description=__doc__.split("\n")[0])
    p.add_argument("--notes", type=int, default=2000, help="unrelated notes each split is planned among")
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--label", default="this branch")
    p.add_argument("--record", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--show", action="store_true", help="print each family scored wrong")
    args = p.parse_args(argv)
    env, load_before = common.machine(), common.load_average()
    families = json.loads(args.data.read_text(encoding="utf-8"))["families"]
    rows, out = [], {}
    for split in SPLITS:
        r = score([f for f in families if f["split"] == split], args.notes)
        right, asked, wrong = searched([f for f in families if f["split"] == split])
        r["wrong"] += wrong
        out[split] = r
        c = r["counts"]
        rows.append((args.label, split,
                     f"{c.get('says_change_current', 0)} of {c.get('says_change_families', 0)}",
                     f"{c.get('shares_words_current', 0)} of {c.get('shares_words_families', 0)}",
                     f"{c.get('as_of_right', 0)} of {c.get('as_of', 0)}", f"{right} of {asked}",
                     f"{c.get('false', 0)} ({c.get('look_alike_or_unrelated', 0)} families, {args.notes:,} notes)",
                     ))  # fmt: skip
        if args.show:
            print("\n".join(f"  {split}: {w}" for w in r["wrong"]))
    body = ("### Version families: current value first, as-of, false supersessions (words alone)\n\n"
            + common.table(("code", "split", "says a change: current first", "shares the words: current first",
                            "as-of right", "as-of through search", "false supersessions"), rows))  # fmt: skip
    print(body)
    if args.record:
        common.append_results("version-families", body, env, load_before)
    return out


if __name__ == "__main__":
    main()
