"""Packing P3's knowledge into a prompt: stored text fenced so it cannot forge a section, whole items as one
line each, the query's sentences when an item does not fit, near-identical items once, a transcript's tool dumps
as their size. Pure functions."""

from __future__ import annotations

import math
import re
from datetime import date

SECTION_OPEN = "<!--"
_FENCED = "&lt;!--"
_SENTENCE = re.compile(r"(?<=[.!?…])\s+|\n+")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the and or but of to in on at by for with from is are was were be been it its this that i you he she "
    "we they me my your his her our their what when where who why how which did do does has have had will would "
    "can could should about".split()
)


def fence(text: str) -> str:
    """Stored text as it enters the prompt: a section marker inside it is escaped, so no memory or file can
    open a section of its own (the compiler's headers are the only `<!--` in a prompt)."""
    return text.replace(SECTION_OPEN, _FENCED)


def one_line(text: str) -> str:
    """An item's text on one line (whitespace runs collapsed): a line is an item in the knowledge section."""
    return " ".join(fence(text).split())


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def matching_sentences(text: str, query: str, max_chars: int) -> str:
    """The sentences of `text` that share a word with `query`, in their order, joined by " … ", within
    `max_chars`; "" when none fits. What an item gives when the whole of it does not fit."""
    wanted = words(query)
    if max_chars <= 0 or not wanted:
        return ""
    picked: list[str] = []
    used = 0
    for sentence in (s.strip() for s in _SENTENCE.split(text)):
        if not sentence or not (words(sentence) & wanted):
            continue
        cost = len(sentence) + (3 if picked else 0)
        if used + cost > max_chars:
            continue
        picked.append(sentence)
        used += cost
    return " … ".join(picked)


_TOOL_RESULT = re.compile(r"^(?P<call>> \[tool:[^\]]+\].*?) → (?P<result>.+)$", re.M)
TOOL_RESULT_KEPT = 80  # characters of a tool's result always kept: "exit 0", a short answer, a path


def tool_output_left_out(text: str, query: str) -> str:
    """A transcript's tool results as their size, unless one shares a word with the query: the CSS, patches and
    listings a coding session's tools print would take the knowledge slot from what was said and decided. A
    result the message asks about stays whole, and so does a short one."""
    wanted = words(query)

    def shrink(m: re.Match[str]) -> str:
        result = m.group("result")
        if len(result) <= TOOL_RESULT_KEPT or wanted & words(result):
            return m.group(0)
        return f"{m.group('call')} → [output left out: {len(result):,} characters]"

    return _TOOL_RESULT.sub(shrink, text)


class Kept:
    """The word sets of the items packed so far, by size. Jaccard is at most min/max of two sets' sizes, so an
    item is compared only with the sizes that can reach the threshold (with ~170 items at 8k tokens, a test
    against each one was a fifth of compiling)."""

    def __init__(self, threshold: float = 0.9) -> None:
        self.threshold = threshold
        self._by_size: dict[int, list[set[str]]] = {}

    def add(self, text: str) -> None:
        mine = words(text)
        self._by_size.setdefault(len(mine), []).append(mine)

    def near_duplicate(self, text: str) -> bool:
        """True when `text`'s words overlap a kept item's by ≥ the threshold (Jaccard)."""
        mine = words(text)
        n, t = len(mine), self.threshold
        if not n:
            return False
        for m in range(max(1, math.floor(n * t)), math.ceil(n / t) + 1):
            if min(n, m) / max(n, m) < t:  # the range is a whisker wide on each side: the exact test decides
                continue
            for other in self._by_size.get(m, ()):
                inter = len(mine & other)
                if inter / (n + m - inter) >= t:
                    return True
        return False


_DATED = re.compile(r"^\s*[-*]\s+(\d{4}-\d{2}-\d{2})")


def cut_entries(text: str, max_chars: int, query: str) -> tuple[str, int, int]:
    """`text` within `max_chars`, cut at entry boundaries (an entry is a bullet line; headings stay, the
    front matter goes). Entries are kept in this order until the next does not fit: those sharing a word with
    `query`, then the newest by their leading date, then the file's order; they are printed in the file's
    order. Returns (text, entries kept, entries in all)."""
    body = text
    if body.startswith("---\n") and (end := body.find("\n---", 4)) != -1:
        body = body[end + 4 :].lstrip("\n")
    lines = body.splitlines()
    entries = [i for i, ln in enumerate(lines) if ln.lstrip().startswith(("- ", "* "))]
    if len(body) <= max_chars:
        return body, len(entries), len(entries)
    is_entry = set(entries)
    frame = [i for i, ln in enumerate(lines) if i not in is_entry and ln.strip()]
    used = sum(len(lines[i]) + 1 for i in frame)
    if used > max_chars:  # even the headings do not fit: the entries alone
        frame, used = [], 0
    wanted = words(query)

    def rank(i: int) -> tuple[int, int, int]:
        m = _DATED.match(lines[i])
        try:
            newest = -date.fromisoformat(m.group(1)).toordinal() if m else 0
        except ValueError:
            newest = 0
        return (0 if words(lines[i]) & wanted else 1, newest, i)

    kept: set[int] = set()
    for i in sorted(entries, key=rank):
        if used + len(lines[i]) + 1 <= max_chars:
            kept.add(i)
            used += len(lines[i]) + 1
    out = [ln for i, ln in enumerate(lines) if (i in kept or i in frame)]
    return "\n".join(out), len(kept), len(entries)
