"""The prose of a turn, as the offline extractors read it: coding-session noise left out.

A Claude Code or Codex turn mixes what was said with what was shown: fenced and indented code, markdown tables,
CLI help, tool output, stack traces, JSON, file listings, HTML. None of it is a decision, a lesson or a fact, and
its words (`always`, `never`, `we will`, a number, a capitalised name) are what the sentence patterns look for.
`prose_lines` yields only the lines that are prose; `is_proposal` tells a proposal or a plan ("Let's start with
…", "I'll run …") from a decision. Pure functions; the patterns are data (prose_filters.json).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

_DATA = Path(__file__).with_name("prose_filters.json")
_LIST_ITEM = re.compile(r"^([-*+•]|\d+[.)])\s")
_INDENTED_CODE = re.compile(r"^( {4,}|\t)")
_HELP_BODY = re.compile(r"^( {2,}|\t)")


@cache
def _rules() -> dict[str, Any]:
    data = json.loads(_DATA.read_text(encoding="utf-8"))
    return {
        "fence": re.compile(data["fence"]),
        "injected": [(re.compile(a, re.IGNORECASE), re.compile(b, re.IGNORECASE)) for a, b in data["injected_blocks"]],
        "block_starts": [re.compile(p, re.IGNORECASE) for p in data["block_starts"]],
        "help_start": re.compile(data["help_start"], re.IGNORECASE),
        "noise": [re.compile(p) for p in data["noise_lines"]],
        "symbol_share": float(data["symbol_share"]),
        "openers": tuple(sorted((str(o) for o in data["proposal_openers"]), key=len, reverse=True)),
    }


def mostly_symbols(line: str, share: float | None = None) -> bool:
    """Letters are fewer than `share` of the line's visible characters (a rule, an ASCII box, a diff hunk)."""
    visible = [c for c in line if not c.isspace()]
    if len(visible) < 4:
        return False
    letters = sum(c.isalpha() for c in visible)
    return letters < (share if share is not None else _rules()["symbol_share"]) * len(visible)


def is_noise_line(line: str) -> bool:
    """A single line (indentation removed) that is code, a table row, help, tool output or markup."""
    stripped = line.strip()
    rules = _rules()
    return mostly_symbols(stripped, rules["symbol_share"]) or any(p.search(stripped) for p in rules["noise"])


def prose_lines(text: str) -> Iterator[str]:
    """The lines of a turn's text that are prose, stripped, in order.

    Left out: what the host injects (a `<system-reminder>` with CLAUDE.md, AGENTS.md instructions,
    `<environment_context>`: to its closing tag or the turn's end); fenced blocks (``` or ~~~, to their closing
    fence or the turn's end); indented code (four spaces or
    a tab, list items excepted); a traceback or a `Tool result:`/`Output:` block, to the next blank line; after a
    `usage:` or an `Options:` heading, every indented line of the turn; and any line `is_noise_line` names.
    """
    rules = _rules()
    in_fence = in_block = in_help = False
    injected: re.Pattern[str] | None = None  # the closing line of the injected block being skipped
    for raw in text.split("\n"):
        raw = raw[1:] if raw.startswith("\\") else raw  # the transcript's escape of `#`, `>`, `<!--` lines
        stripped = raw.strip().lstrip("\\")
        if injected is None:
            opened = next(((close, start.match(stripped)) for start, close in rules["injected"]
                           if start.match(stripped)), None)  # fmt: skip
            if opened is not None:
                close, start = opened
                injected = None if close.search(stripped[start.end() :]) else close
                continue
        elif injected.search(stripped):
            injected = None
            continue
        if injected is not None:
            continue
        if rules["fence"].match(stripped):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if not stripped:
            in_block = False
            continue
        if in_block:
            continue
        if rules["help_start"].match(stripped):
            in_help = True
            continue
        if any(p.match(stripped) for p in rules["block_starts"]):
            in_block = True
            continue
        listed = bool(_LIST_ITEM.match(stripped))
        if not listed and (_INDENTED_CODE.match(raw) or (in_help and _HELP_BODY.match(raw))):
            continue
        if is_noise_line(stripped):
            continue
        yield stripped


def is_proposal(sentence: str) -> bool:
    """A proposal, a plan or a status line rather than a decision: it opens with `let's`, `I'll`, `maybe`,
    `we could`, `next we`, `perfect` and the like (prose_filters.json, `proposal_openers`)."""
    lowered = sentence.lower().lstrip("-*• ").replace("\u2019", "'")
    for opener in _rules()["openers"]:
        if lowered.startswith(opener) and not lowered[len(opener) : len(opener) + 1].isalnum():
            return True
    return False
