"""`python -m benchmarks coding-lines`: what the offline extractors keep from coding-session lines.

The labelled sample (benchmarks/coding_session_lines.json) holds lines and blocks as they appear in Claude Code
and Codex sessions — decisions, lessons and facts worth keeping, and markdown tables, code, CLI help, tool output,
stack traces, HTML and proposals that are not memories. It was written before the extractors' filters were changed;
the filters were tuned on the dev split, the held-out split is scored as it is. Each item is one agent turn; a
kept item is kept correctly when some extractor keeps it as its label's kind, junk when it was labelled drop.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

from benchmarks import common

SAMPLE = common.HERE / "coding_session_lines.json"
START = datetime(2026, 10, 14, 9, 0)


def kinds_kept(text: str) -> set[str]:
    """The kinds the offline extractors keep from `text` said by the agent in a one-turn session."""
    from memory_pipeline.journals.extractors import EXTRACTORS
    from memory_pipeline.journals.transcript import Transcript, Turn

    turn = Turn("09:00", "agent", tuple(text.split("\n")), at=START, line=8, text=text)
    t = Transcript("<sample>", "sample", START, START, "sample", "sample", {}, (turn,))
    return {e.kind for e in EXTRACTORS.values() if e.find(t)}


def score(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        row = out.setdefault(item["split"], {"keep": 0, "correct": 0, "wrong_kind": 0, "drop": 0, "junk": 0,
                                             "junk_lines": [], "missed_lines": []})  # fmt: skip
        got = kinds_kept(item["text"])
        if item["label"] == "drop":
            row["drop"] += 1
            if got:
                row["junk"] += 1
                row["junk_lines"].append(f"{'/'.join(sorted(got))}: {item['text'][:80]!r}")
        else:
            row["keep"] += 1
            if item["label"] in got:
                row["correct"] += 1
            else:
                row["wrong_kind"] += bool(got)
                row["missed_lines"].append(f"{item['label']} → {'/'.join(sorted(got)) or '-'}: {item['text'][:80]!r}")
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks coding-lines", description=__doc__.split("\n")[0])
    p.add_argument("--record", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--show", action="store_true", help="list the junk kept and the memories missed")
    args = p.parse_args(argv)
    env, load_before = common.machine(), common.load_average()
    items = json.loads(SAMPLE.read_text(encoding="utf-8"))["items"]
    results = score(items)
    rows = [[split, f"{r['correct']} of {r['keep']}", r["wrong_kind"], f"{r['junk']} of {r['drop']}"]
            for split, r in sorted(results.items())]  # fmt: skip
    text = "### Coding-session lines: what the offline extractors keep (labelled sample)\n\n" + common.table(
        ["split", "kept correctly", "kept as another kind", "junk kept"], rows
    )
    if args.record:
        common.append_results("coding-lines", text, env, load_before)
    print(text)
    if args.show:
        for split, r in sorted(results.items()):
            for line in r["junk_lines"]:
                print(f"[{split}] junk {line}")
            for line in r["missed_lines"]:
                print(f"[{split}] missed {line}")
    return results
