"""Packing P3's knowledge into a prompt: stored text fenced so it cannot forge a section, whole items as one
line each, the query's sentences when an item does not fit, a statement the prompt already carries once, a
transcript's tool dumps as their size. Pure functions."""

from __future__ import annotations

import math
import re
from datetime import date

from memory_pipeline.statements import judgement
from memory_pipeline.verification import faithfulness

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


class Carried:
    """The statements the prompt already carries (its files, the knowledge packed so far), and which statements
    of an item it does not: the one judgement of "the same statement" (`statements.judgement.says`, by its
    words — the read path has no model to spare per sentence), asked only of carried sentences that share
    enough of a statement's content words to say it (an index of their words). A range over reports carries each
    report ("slipped 6.1%" under "slipped 3.8–6.8% (6 reports, …)"): the compiler keeps the report only when the
    question asks for what only it holds."""

    def __init__(self) -> None:
        self._sentences: list[str] = []
        self._by_word: dict[str, list[int]] = {}

    def add(self, text: str) -> None:
        for sentence in statements(text):
            n = len(self._sentences)
            self._sentences.append(sentence)
            for w in judgement.content_words(sentence):
                self._by_word.setdefault(w, []).append(n)

    def new_in(self, text: str) -> list[str]:
        """`text`'s statements the prompt does not already say, in their order."""
        return [s for s in statements(text) if not self.says(s)]

    def says(self, statement: str) -> bool:
        want = judgement.content_words(statement)
        hits: dict[int, int] = {}
        for w in want:
            for n in self._by_word.get(w, ()):
                hits[n] = hits.get(n, 0) + 1
        least = max(1, math.ceil(judgement.SOME_WORDS * len(want)))
        return any(judgement.says(self._sentences[n], statement) for n, c in hits.items() if c >= least)


_MARKUP = re.compile(r"^\s*(?:#+\s*|[-*]\s+|\d+\.\s+|>\s*)?(?:\[[^\]]*\]\s*)?")


def statements(text: str) -> list[str]:
    """The sentences a text states, line by line, less list marks, headings and a leading "[date]"."""
    out: list[str] = []
    for line in text.splitlines():
        line = _MARKUP.sub("", line).strip()
        if line and not line.startswith("<!--"):
            out += [s for s in faithfulness.sentences(line) if faithfulness.statement_like(s)]
    return out


MIN_ASKED = 3  # content words a question must have to be read as asking after one item in its own words


def asked_in_its_words(message: str, text: str) -> bool:
    """Whether every content word of the question is the item's (at least MIN_ASKED): a report asked after in
    its own words ("JTO market order slipped against the quote"), whose value the summary's range does not give."""
    asked = judgement.content_words(message)
    return len(asked) >= MIN_ASKED and asked <= judgement.content_words(text)


def own_value_asked(query: str, text: str) -> bool:
    """Whether the question names a value this item states ("Which day did slippage hit 6.8%?"): an archived
    source keeps what only it holds, its own value, even after a summary whose range says it."""
    asked = {w.value for w in judgement.read(query) if w.value is not None}
    return bool(asked & {w.value for w in judgement.read(text) if w.value is not None})


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
