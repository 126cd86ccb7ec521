"""The context compiler (seed 001 §6.2–6.4): the densest prompt within a token budget, with a manifest.

Slots in the seed's order: P0 identity (never dropped), P1 MEMORY.md (main session only), today's and
yesterday's journals and `projects/_active.md`, P2 the active topics' instructions, correction hints and
subscriptions, P3 knowledge ranked by search (a session's tool output only where the message asks about it), P4
session history newest first (tool results shrunk to one line). Every section's tokens are counted with its header
and separator, so the manifest's tokens add up to the prompt's and the budget is never exceeded by the project's
token count.

Only regular files are read (a named pipe would block the turn forever): any other kind is skipped with a
manifest entry and a line in `Compiled.warnings`, as is a topic pattern that ran past its time bound.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_pipeline.context.files import NotRegularFile, read_regular_text
from memory_pipeline.context.gate import Gate, GateDecision
from memory_pipeline.context.packing import (
    Carried,
    asked_in_its_words,
    cut_entries,
    fence,
    matching_sentences,
    one_line,
    own_value_asked,
    statements,
    tool_output_left_out,
)
from memory_pipeline.context.read_path import ReadPath
from memory_pipeline.context.timeframe import annotate
from memory_pipeline.context.topics import Topic
from memory_pipeline.context.watchers import Event, SlowTrigger, output_corrections, scorer_for, tier1_matches
from memory_pipeline.tokens import CHARS_PER_TOKEN

DEFAULT_BUDGET = 8192
MIN_SCORE = 0.05  # seed 001 §6.3: scored knowledge below this is not worth a slot
SNIPPET_CHARS = 500  # seed 001 §6.3: f.snippet(max_chars=500)
P3_FLOOR = 100  # seed 001 §6.2: scored knowledge stops when fewer tokens than this are left
_ONE_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
MAX_SEARCH_K = 640  # hits asked of search at most: a 16k-token budget of short memories
ITEM_TOKENS = 40  # P3's first guess of one item's tokens (a memory line), before it has measured any


class ContextError(ValueError):
    """The request cannot be compiled (e.g. a budget below P0); the message says what to do."""


@dataclass(frozen=True)
class Turn:
    """One message of the session history; `tool` marks a tool call's result (shrunk to one line)."""

    role: str
    content: str
    tool: str = ""
    id: str = ""

    def render(self) -> str:
        if self.tool or self.role == "tool":
            lines = [ln.strip() for ln in self.content.splitlines() if ln.strip()]
            head = (lines[0] if lines else "(no output)")[:120]
            more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
            return f"[tool {self.tool or 'result'}] {head}{more}"
        return f"{self.role}: {self.content}"


@dataclass(frozen=True)
class Knowledge:
    """A P3 candidate from search: a memory (`memory_id`) or a file (`path`)."""

    text: str
    score: float
    kind: str = "memory"
    memory_id: str | None = None
    path: str | None = None
    date: str | None = None


Search = Callable[[str, int], Sequence[Knowledge]]


@dataclass
class Entry:
    slot: str
    label: str
    tokens: int
    included: bool
    reason: str
    path: str | None = None
    memory_id: str | None = None
    score: float | None = None


@dataclass
class Compiled:
    prompt: str
    tokens: int
    budget: int
    manifest: list[Entry]
    gate: list[GateDecision] = field(default_factory=list)
    corrections: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # skipped non-regular files, slow topic patterns: one line each

    @property
    def memory_ids(self) -> list[str]:
        return [e.memory_id for e in self.manifest if e.included and e.memory_id]

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "tokens": self.tokens,
            "budget": self.budget,
            "manifest": [asdict(e) for e in self.manifest],
            "gate": [asdict(d) for d in self.gate],
            "corrections": [{"topic": t, "hint": h} for t, h in self.corrections],
            "warnings": self.warnings,
        }


def section_tokens(label: str, content: str) -> int:
    """Tokens of one rendered section, separator included (3.5 characters per token, rounded up)."""
    return math.ceil(len(_render(label, content)) / CHARS_PER_TOKEN)


def _render(label: str, content: str) -> str:
    return f"<!-- {label} -->\n{fence(content).strip()}\n\n"


def _line_tokens(line: str) -> int:
    """A line of a grouped section with its newline (per-line rounding only ever over-counts)."""
    return math.ceil((len(line) + 1) / CHARS_PER_TOKEN)


class _Budget:
    def __init__(self, total: int) -> None:
        self.left = total
        self.sections: list[tuple[int, int, str, str | list[str]]] = []  # (priority, order, label, content)
        self.manifest: list[Entry] = []
        self.groups: dict[str, list[str]] = {}  # a section built line by line (P3's knowledge)
        self.warnings: list[str] = []
        self.not_regular: dict[Path, str] = {}  # files skipped because they are FIFOs, directories, devices

    def offer(self, priority: int, label: str, content: str, order: int | None = None, **where: Any) -> bool:
        why = where.pop("why", "fits")
        tokens = section_tokens(label, content)
        slot = f"P{priority}"
        if tokens > self.left:
            self.manifest.append(Entry(slot, label, tokens, False, f"over budget: needs {tokens}, {self.left} left",
                                       **where))
            return False
        self.left -= tokens
        self.sections.append((priority, len(self.sections) if order is None else order, label, content))
        self.manifest.append(Entry(slot, label, tokens, True, why, **where))
        return True

    def offer_line(self, priority: int, group: str, label: str, line: str, **where: Any) -> bool:
        """One item as one line of the `group` section; the section's header is paid by its first line."""
        why = where.pop("why", "fits")
        head = 0 if group in self.groups else math.ceil((len(f"<!-- {group} -->\n") + 1) / CHARS_PER_TOKEN)
        tokens = _line_tokens(line)
        slot = f"P{priority}"
        if head + tokens > self.left:
            self.manifest.append(Entry(slot, label, tokens, False,
                                       f"over budget: needs {head + tokens}, {self.left} left", **where))
            return False
        if head:
            self.groups[group] = []
            self.sections.append((priority, len(self.sections), group, self.groups[group]))
            self.manifest.append(Entry(slot, group, head, True, "section header"))
        self.groups[group].append(line)
        self.left -= head + tokens
        self.manifest.append(Entry(slot, label, tokens, True, why, **where))
        return True

    def skip(self, priority: int, label: str, reason: str, **where: Any) -> None:
        self.manifest.append(Entry(f"P{priority}", label, 0, False, reason, **where))


def _read(path: Path, b: _Budget, home: Path) -> str | None:
    """The file's text, or None when it is missing, empty or unreadable. A file that is not a regular file
    (a named pipe would block the read forever) or leads outside the workspace `home` (a symlink to
    /etc/hostname) is None too, and is recorded in `b.not_regular` and reported once in `b.warnings`."""
    try:
        text = read_regular_text(path, root=home)
    except NotRegularFile as exc:
        if path not in b.not_regular:
            b.not_regular[path] = exc.problem
            b.warnings.append(f"{path}: {exc.problem}: skipped; replace it with a regular file")
        return None
    except (OSError, UnicodeDecodeError):
        return None
    return text if text.strip() else None


def _skipped_why(path: Path, b: _Budget, otherwise: str) -> str:
    """The manifest's reason for a file `_read` returned None for."""
    problem = b.not_regular.get(path)
    return f"skipped: {problem}" if problem else otherwise


def compile_context(
    home: Path,
    message: str,
    *,
    topics: Sequence[Topic] = (),
    session_history: Sequence[Turn] = (),
    budget_tokens: int = DEFAULT_BUDGET,
    main_session: bool = True,
    search: Search | None = None,
    gate: Gate | None = None,
    agent_output: str = "",
    tool_paths: Sequence[str] = (),
    events: Sequence[Event] = (),
    today: date | None = None,
    search_k: int = 20,
    read: ReadPath | None = None,
) -> Compiled:
    """Assemble the prompt for `message` from the workspace at `home` (see the module docstring)."""
    if budget_tokens <= 0:
        raise ContextError(f"budget must be a positive number of tokens, got {budget_tokens}")
    knowledge = home / "knowledge"
    day = today or datetime.now(UTC).date()
    b = _Budget(budget_tokens)

    # P0: identity, never dropped: a budget below it is the caller's error.
    identity = sorted((knowledge / "identity").glob("*.md")) if (knowledge / "identity").is_dir() else []
    read0 = [(p, _read(p, b, home)) for p in identity]
    p0 = [(p, t) for p, t in read0 if t is not None]
    need = sum(section_tokens(f"identity:{p.name}", t) for p, t in p0)
    if need > budget_tokens:
        raise ContextError(f"budget {budget_tokens} is smaller than the identity files ({need} tokens, "
                           f"{(knowledge / 'identity').relative_to(home)}): raise the budget to at least {need}")
    for p, t in p0:
        b.offer(0, f"identity:{p.name}", t, path=str(p.relative_to(home)))
    for p in identity:
        if p in b.not_regular:
            b.skip(0, f"identity:{p.name}", _skipped_why(p, b, ""), path=str(p.relative_to(home)))
    if not p0:
        b.skip(0, "identity", "missing: no knowledge/identity/*.md", path="knowledge/identity/")

    # P1: core memory (main session only), journals of today and yesterday, the active projects index.
    p1: list[tuple[str, Path]] = [
        ("memory", knowledge / "memory" / "MEMORY.md"),
        (f"journal:{day}", knowledge / "journal" / f"{day}.md"),
        (f"journal:{day - timedelta(days=1)}", knowledge / "journal" / f"{day - timedelta(days=1)}.md"),
        ("projects", knowledge / "projects" / "_active.md"),
    ]
    included_paths: set[str] = set()
    read = read or ReadPath.load()
    slot_left = {"memory": int(read.memory_share * budget_tokens), "journal": int(read.journal_share * budget_tokens)}
    for label, path in p1:
        rel = str(path.relative_to(home))
        if label == "memory" and not main_session:
            b.skip(1, label, "not the main session: MEMORY.md is private to it", path=rel)
            continue
        text = _read(path, b, home)
        if text is None:
            b.skip(1, label, _skipped_why(path, b, "missing file"), path=rel)
            continue
        slot = "memory" if label == "memory" else "journal"
        text, why = _fit_slot(label, text, slot_left[slot], message, slot)
        if text is not None and b.offer(1, label, text, path=rel, why=why):
            included_paths.add(rel)
            slot_left[slot] -= section_tokens(label, text)
        elif text is None:
            b.skip(1, label, why, path=rel)

    # P2: topics woken by the message (Tier 1 → Tier 2 → gate), output corrections, subscriptions.
    scores = scorer_for(tuple(topics)).scores(message) if topics else {}
    slow: list[SlowTrigger] = []
    matched = tier1_matches(topics, message, tool_paths=tool_paths, events=events, slow=slow)
    gate = gate or Gate()
    decisions = [gate.decide(message, t, t.name in matched, scores.get(t.name, 0.0)) for t in topics]
    by_name = {t.name: t for t in topics}
    active = sorted((d for d in decisions if d.activated),
                    key=lambda d: (-by_name[d.topic].priority_rank, -d.tier2_score, d.topic))
    for d in decisions:
        if not d.activated:
            b.skip(2, f"topic:{d.topic}", f"not active: {d.reason}", path=str(by_name[d.topic].path.relative_to(home)),
                   score=d.tier2_score)
    corrections = output_corrections(topics, agent_output, slow) if agent_output else []
    for st in slow:
        b.skip(2, f"trigger:{st.topic.name}.{st.trigger.where}",
               f"pattern ran longer than {st.seconds:g} s on the {st.text}: trigger skipped this turn",
               path=str(st.topic.path.relative_to(home)))
        b.warnings.append(st.line)
    for name, hint in corrections:
        b.offer(2, f"correction:{name}", hint, why="output watcher fired on the agent's last reply")
    topic_left = int(read.topic_share * budget_tokens)
    for d in active:
        topic = by_name[d.topic]
        cap = int(topic.max_context_kb * 1024)
        used = 0
        items = [(f"topic:{topic.name}", topic.instructions, str(topic.path.relative_to(home)))]
        for sub in topic.subscriptions:
            text = _read(home / sub, b, home)
            if text is None:
                b.skip(2, f"sub:{sub}", _skipped_why(home / sub, b, "missing subscription file"), path=sub)
                continue
            items.append((f"sub:{sub}", text, sub))
        for n, (label, text, rel) in enumerate(items):
            if n > 0 and f"topic:{topic.name}" not in {e.label for e in b.manifest if e.included}:
                b.skip(2, label, "its topic's instructions did not fit", path=rel)
            elif rel in included_paths:
                b.skip(2, label, "already included", path=rel)
            elif used + len(text) > cap:
                b.skip(2, label, f"over the topic's max_context_kb ({topic.max_context_kb:g} KB)", path=rel)
            else:
                fitted, why = _fit_slot(label, text, topic_left, message, "topics")
                if fitted is None:
                    b.skip(2, label, why, path=rel, score=d.tier2_score)
                elif b.offer(2, label, fitted, path=rel, score=d.tier2_score,
                             why=d.reason if why == "fits" else f"{d.reason}; {why}"):  # fmt: skip
                    used += len(fitted)
                    topic_left -= section_tokens(label, fitted)
                    included_paths.add(rel)

    # P3: knowledge ranked by search for the message plus the active topics' keywords, until less than
    # P3_FLOOR tokens are left (seed 001 §6.2: "~remaining"): search is asked for the hits the budget left should
    # take, and for more while they all fit and it has more, so a large budget is filled rather than left empty.
    if search is not None:
        query = " ".join([message, *(" ".join(by_name[d.topic].keywords) for d in active)]).strip()
        _knowledge(b, _as_the_message_decides(search, message), query, message, included_paths, read or ReadPath.load(),
                   search_k)  # fmt: skip

    # P4: history, newest first until one does not fit; printed oldest first.
    turns = list(session_history)
    for i in range(len(turns) - 1, -1, -1):
        turn = turns[i]
        label = f"history:{turn.id or i}"
        if not b.offer(4, label, turn.render(), order=i):
            if i == 1:
                b.skip(4, f"history:{turns[0].id or 0}", "older than the first turn that did not fit")
            elif i > 1:  # one entry for the whole run: 100,000 entries made a response clients choke on
                b.skip(4, f"history:{turns[0].id or 0}…{turns[i - 1].id or i - 1}",
                       f"{i} older turns left out: older than the first turn that did not fit")
            break

    sections = sorted(b.sections, key=lambda s: (s[0], s[1]))
    prompt = "".join(
        _render(label, c) if isinstance(c, str) else f"<!-- {label} -->\n" + "\n".join(c) + "\n\n"
        for _, _, label, c in sections
    ).rstrip("\n")
    used = sum(e.tokens for e in b.manifest if e.included)
    return Compiled(prompt, used, budget_tokens, b.manifest, decisions, corrections, b.warnings)


def _as_the_message_decides(search: Search, message: str) -> Search:
    """The active topics' keywords widen P3's query, but whether anything relevant is stored is the message's
    own question (search's abstention floor was calibrated on messages): a topic that wakes never brings
    knowledge to a message that finds none, and never takes it from one that does (its keywords can pull the
    query's relevance under the floor)."""
    relevant: list[bool] = []

    def run(query: str, k: int) -> Sequence[Knowledge]:
        if query == message.strip():
            return search(query, k)
        if not relevant:
            relevant.append(bool(search(message, 1)))
        if not relevant[0]:
            return []
        return search(query, k) or search(message, k)

    return run


def _fit_slot(label: str, text: str, tokens: int, message: str, slot: str) -> tuple[str | None, str]:
    """The file whole when it fits its slot, else cut at entry boundaries (never dropped whole while one
    entry fits); the reason says what was cut."""
    if section_tokens(label, text) <= tokens:
        return text, "fits"
    room = int(tokens * CHARS_PER_TOKEN) - len(_render(label, ""))
    cut, kept, total = cut_entries(text, room, message)
    if kept == 0 or section_tokens(label, cut) > tokens:
        return None, f"over its slot ({slot}: {max(tokens, 0)} tokens) and no entry fits"
    return cut, (f"cut to its slot ({slot}: {tokens} tokens): {kept} of {total} entries, those matching the "
                 "message first, then the newest")  # fmt: skip


def _knowledge(b: _Budget, search: Search, query: str, message: str, included_paths: set[str], read: ReadPath,
               search_k: int) -> None:  # fmt: skip
    """P3: whole items (or the query's sentences of one that does not fit), dated by their facts, each once.

    Search is asked once for as many hits as the budget left should take (at least `search_k`), and again
    only when they all fit: each call is a scan, so asking 20, 40, 80 … cost a large budget five of them."""
    seen: set[str] = set()
    carried = Carried()  # what the prompt says so far: its files, then each item packed
    for _, _, _, content in b.sections:
        carried.add(content if isinstance(content, str) else "\n".join(content))
    included = spent = 0
    k_asked = _hits_for(b.left, ITEM_TOKENS, search_k)
    while True:
        hits = list(search(query, k_asked))
        for k in hits:
            label = f"knowledge:{k.memory_id or k.path}"
            if label in seen:
                continue
            seen.add(label)
            if k.kind == "transcript":  # a session's tool output only when the message asks about it
                k = replace(k, text=tool_output_left_out(k.text, query))
            where: dict[str, Any] = {"path": k.path, "memory_id": k.memory_id, "score": round(k.score, 4)}
            left = b.left
            if k.path and k.path in included_paths:
                b.skip(3, label, "already included", **where)
                continue
            if k.score < MIN_SCORE:
                b.skip(3, label, f"score {k.score:.3f} < {MIN_SCORE}", **where)
                continue
            why = f"{k.kind}, ranked by search"
            stated = statements(k.text)
            new = carried.new_in(k.text) if stated else []
            if len(new) < len(stated) and not _asks_its_own(message, k):
                if not new:
                    b.skip(3, label, "says what the prompt already carries", **where)
                    continue
                k = replace(k, text=" ".join(new))
                why = f"{k.kind}: the statements the prompt does not already carry"
            dated = f"[{k.date}] " if k.date else ""
            if read.p3_format == "sections":
                text = _as_said(k, read) if read.whole_items else k.text[:SNIPPET_CHARS]
                if b.offer(3, label, dated + text, why=why, **where):
                    carried.add(k.text)
            else:
                text = _as_said(k, read)
                line = "- " + dated + one_line(text)
                if _line_tokens(line) > b.left and read.whole_items:
                    room = int(b.left * CHARS_PER_TOKEN) - len("- " + dated) - 8
                    part = matching_sentences(text, query, room)
                    if part:
                        line, why = "- " + dated + one_line(part), f"{k.kind}: the sentences matching the message"
                if b.offer_line(3, "knowledge", label, line, why=why, **where):
                    carried.add(k.text)
            if b.left < left:
                included, spent = included + 1, spent + left - b.left
        if b.left < P3_FLOOR or len(hits) < k_asked or k_asked >= MAX_SEARCH_K:
            break
        per_item = spent / included if included else ITEM_TOKENS
        k_asked = min(MAX_SEARCH_K, k_asked + _hits_for(b.left, per_item, search_k))


_WHEN = re.compile(r"\bwhen\b|\bwhat (?:day|date|time)\b|\bwhich (?:day|date)\b|\bhow long ago\b", re.IGNORECASE)


def _asks_its_own(message: str, k: Knowledge) -> bool:
    """Whether the question asks for what only this item holds though the prompt says its statements: a value
    it states (its own, not a summary's range), its day (a "when" question, an item dated by one day), or the
    item itself (every word the question asks with is the item's: a report asked after in its own words)."""
    return own_value_asked(message, k.text) or bool(_WHEN.search(message) and k.date and _ONE_DAY.fullmatch(k.date)) \
        or asked_in_its_words(message, k.text)


def _hits_for(tokens: int, per_item: float, least: int) -> int:
    """How many more hits should fill `tokens`: a quarter more than the items' size says (some are skipped as
    near-identical or already included), at least `least`, at most MAX_SEARCH_K."""
    return min(MAX_SEARCH_K, max(least, math.ceil(1.25 * tokens / max(per_item, 1.0))))


def _as_said(k: Knowledge, read: ReadPath) -> str:
    """An item dated by one day with its relative time expressions resolved against that day."""
    if read.resolve_dates and k.date and _ONE_DAY.fullmatch(k.date):
        return annotate(k.text, date.fromisoformat(k.date))
    return k.text


def read_history(path: Path) -> list[Turn]:
    """Session history from JSONL: one `{"role": …, "content": …[, "tool": …, "id": …]}` per line."""
    turns: list[Turn] = []
    try:
        lines = read_regular_text(path, errors="strict").splitlines()  # a FIFO, a link out of the workspace: refused
    except (OSError, UnicodeDecodeError) as exc:
        raise ContextError(f"{path}: cannot read the history file ({exc})") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ContextError(f"{path}:{n}: invalid JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("content"), str):
            raise ContextError(f"{path}:{n}: field 'content': expected text")
        role = obj.get("role", "user")
        if role not in ("user", "assistant", "agent", "system", "tool"):
            raise ContextError(f"{path}:{n}: field 'role': expected user, assistant, system or tool, got {role!r}")
        turns.append(Turn(role, obj["content"], str(obj.get("tool", "")), str(obj.get("id", ""))))
    return turns
