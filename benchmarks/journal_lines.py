"""`python -m benchmarks journal-lines`: which candidate lines reach a journal, and whether they read on their own.

The labelled set (benchmarks/journal_lines.json) holds turns as Claude Code and Codex sessions write them: decisions,
lessons and facts to keep (some whose subject is only in the heading above them), and headings, list fragments,
changelog lines, reasoning in progress, plan steps, tool output and the instructions the host injects, to drop.
Each item is one turn said by its `role`, run through every offline extractor (and so through the statement
gate). A line kept from a `keep` item is a statement when it holds the item's `expect` text and, when the item
names one, its `subject`; every line kept from a `drop` item is junk. Precision: statements among all lines
kept. Recall: decisions and lessons labelled keep that came out as a statement.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

from benchmarks import common

SAMPLE = common.HERE / "journal_lines.json"
START = datetime(2026, 10, 14, 9, 0)


def lines_kept(text: str, role: str) -> list[str]:
    """What the offline extractors keep from `text` said by `role` in a one-turn session."""
    from memory_pipeline.journals.extractors import EXTRACTORS
    from memory_pipeline.journals.transcript import Transcript, Turn

    turn = Turn("09:00", role, tuple(text.split("\n")), at=START, line=8, text=text)
    t = Transcript("<sample>", "sample", START, START, "sample", "sample", {}, (turn,))
    return [c.content for e in EXTRACTORS.values() for c in e.find(t)]


def is_statement(line: str, item: dict[str, Any]) -> bool:
    if item["label"] != "keep" or item["expect"].lower() not in line.lower():
        return False
    return "subject" not in item or item["subject"].lower() in line.lower()


def score(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        row = out.setdefault(item["split"], {"kept": 0, "good": 0, "wanted": 0, "found": 0, "junk": [], "missed": []})
        lines = lines_kept(item["text"], item["role"])
        good = [line for line in lines if is_statement(line, item)]
        row["kept"] += len(lines)
        row["good"] += len(good)
        row["junk"] += [f"{item['kind']}: {line[:90]!r}" for line in lines if line not in good]
        if item["label"] == "keep" and item["kind"] in ("decision", "lesson"):
            row["wanted"] += 1
            row["found"] += bool(good)
            if not good:
                row["missed"].append(f"{item['kind']}: {item['text'][:90]!r} -> {lines}")
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks journal-lines", description=__doc__.split("\n")[0])
    p.add_argument("--record", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--show", action="store_true", help="list the junk kept and the decisions and lessons missed")
    args = p.parse_args(argv)
    env, load_before = common.machine(), common.load_average()
    items = json.loads(SAMPLE.read_text(encoding="utf-8"))["items"]
    results = score(items)
    rows = []
    for split, r in sorted(results.items()):
        precision = r["good"] / r["kept"] if r["kept"] else 1.0
        recall = r["found"] / r["wanted"] if r["wanted"] else 0.0
        rows.append([split, sum(i["split"] == split for i in items), f"{r['good']} of {r['kept']}",
                     f"{precision:.2f}", f"{r['found']} of {r['wanted']}", f"{recall:.2f}"])  # fmt: skip
    text = "### Journal lines: statements among the lines kept (labelled set, offline)\n\n" + common.table(
        ["split", "items", "statements / lines kept", "precision", "decisions+lessons kept", "recall"], rows
    )
    if args.record:
        common.append_results("journal-lines", text, env, load_before)
    print(text)
    if args.show:
        for split, r in sorted(results.items()):
            for line in r["junk"]:
                print(f"[{split}] junk {line}")
            for line in r["missed"]:
                print(f"[{split}] missed {line}")
    return results
