"""Versioned extraction algorithms (seed 001 §8.3): session transcript → memories.

Offline extractors are deterministic (patterns and sentence scoring), so a replay of unchanged transcripts
gives the same memories with the same ids. Each has its own `version`: the Dagster asset's `code_version`
and the memory's `source` (`extract:<name>@<version>`). Bump a version when its rules change; a
reconstruction then replaces exactly that extractor's memories.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from memory_pipeline.journals.flush import LEGACY_TAG
from memory_pipeline.journals.prose import is_proposal, prose_lines
from memory_pipeline.journals.statement_quality import is_explicit_choice, statement, subject_of
from memory_pipeline.journals.transcript import Transcript, Turn

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_NUMBERED = re.compile(r"^\s*(\d+)[.)]\s+(.*)$")
# A decision said as one: a `Decided:`/`Decision:` (`Decision for the cache:`) label or a verb of choosing. A
# sentence opening with `we will`, `we'll` or `let's go with` is one only when a choice follows (`we will use …`,
# `statement_quality.is_explicit_choice`): in a coding session those words open plans far more often.
_DECISION = re.compile(
    r"\b(?:decided|decision)\s*:|^(?:final\s+)?decision\s+(?:for|on|about)\s[^:]{3,60}:|"
    r"^(?:let'?s go with|we will|we'll|we are going to|we're going to)\s|"
    r"\b(we decided|decided to|decided against|going with|agreed to|agreed on|we chose|"
    r"chose to|settled on|opted for|i've decided|i decided)\b",
    re.IGNORECASE,
)
_EXPLICIT_DECISION = re.compile(
    r"^(?:final\s+)?(?:decided|decision)\s*:|^(?:final\s+)?decision\s+(?:for|on|about)\s[^:]{3,60}:|"
    r"\b(?:we|i)(?:'ve| have)? decided\b",
    re.I,
)
_WE_WILL = re.compile(r"^(?:let'?s go with|we will|we'll|we are going to|we're going to)\s", re.IGNORECASE)
_LESSON_LABEL = re.compile(r"^(?:lesson learned|lesson|note to self|takeaway)\b[^:.]{0,24}:", re.IGNORECASE)
_LESSON = re.compile(
    r"\b(?:lesson learned|lesson|note to self|takeaway)\b[^:.]{0,24}:|\b(lesson learned|learned that|i learned|"
    r"always|never|turns out|in hindsight|the mistake was|remember that)\b",
    re.IGNORECASE,
)
_TRAIT = re.compile(
    r"\b(prefers|likes|loves|hates|wants|needs|asked|works|joined|owns|leads|insists|runs|reviews|is|was|has|"
    r"lives|moved|started|signs off|my|i'm|i am|i have|i've|i went|i was)\b",
    re.IGNORECASE,
)
_PROCEDURE_HEAD = re.compile(r"^(?:to|how to)\s+(.+?):\s*$", re.IGNORECASE)
_LABEL = re.compile(
    r"^(decision:|lesson learned:|lesson:|note to self:|takeaway from this one:|takeaway:|"
    r"going with the plan to|we decided to|decided to|agreed to)\s*",
    re.IGNORECASE,
)
_FILLER = re.compile(r"^(two options|i recommend|i checked|here is|here are|the main issue)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Candidate:
    """One memory an extractor proposes, before it becomes a store row."""

    content: str
    at: datetime
    turn_line: int
    ref: str | None = None


@dataclass(frozen=True)
class Extractor:
    name: str
    version: str
    kind: str
    importance: float
    description: str
    find: Callable[[Transcript], list[Candidate]]

    @property
    def source(self) -> str:
        return f"extract:{self.name}@{self.version}"


def _heading(line: str) -> bool:
    """A markdown heading, a line in bold alone, or a lead-in ending with a colon (`For the thumbnailer:`)."""
    return line.startswith("#") or (line.startswith(("**", "__")) and line.rstrip(":").endswith(("**", "__"))) or (
        line.endswith(":") and len(line.split()) <= 10
    )


def _sentences(turn: Turn) -> Iterator[tuple[str, str | None]]:
    """The turn's prose sentences — code, tables, help text, tool output, markup and the instructions the host
    injects left out (`prose_lines`) — each with the subject of the nearest heading or lead-in above it."""
    subject = None
    for line in prose_lines(turn.text):
        if _NUMBERED.match(line):
            continue
        if _heading(line):
            subject = subject_of(line)
            continue
        for sentence in _SENTENCE.split(line):
            sentence = " ".join(sentence.split())
            if sentence:
                yield sentence, subject


def _speaker_turns(t: Transcript) -> Iterator[Turn]:
    return (turn for turn in t.turns if turn.role != "system" and turn.text)


def not_a_decision(sentence: str) -> bool:
    """A proposal or a plan ("Let's start with …", "I'll run …", "We will look at …") unless labelled `Decided:`
    or a choice (`we will use …`, `let's go with …`), or a lesson so labelled."""
    if _EXPLICIT_DECISION.search(sentence):
        return False
    if _WE_WILL.match(sentence):
        return not is_explicit_choice(sentence)
    return is_proposal(sentence) or bool(_LESSON_LABEL.match(sentence))


def not_a_lesson(sentence: str) -> bool:
    """A decision said as one (`Decided: … never before`) is the decision's, not a lesson."""
    return bool(_EXPLICIT_DECISION.search(sentence)) and not _LESSON_LABEL.match(sentence)


def _pattern_extractor(
    kind: str, pattern: re.Pattern[str], limit: int, min_words: int = 4, skip: Callable[[str], bool] = lambda s: False
) -> Callable[[Transcript], list[Candidate]]:
    def find(t: Transcript) -> list[Candidate]:
        found: dict[str, Candidate] = {}
        for turn in _speaker_turns(t):
            for s, subject in _sentences(turn):
                if s.endswith("?") or not pattern.search(s) or len(s.split()) < min_words or skip(s):
                    continue
                kept = statement(s, kind, subject)  # the statement gate: None when it cannot stand alone
                if kept is None:
                    continue
                core = _LABEL.sub("", kept)
                core = core[:1].upper() + core[1:]
                content = core if turn.role in ("user", "agent") else f"{turn.role}: {core}"
                found.setdefault(content, Candidate(content, turn.at or t.started, turn.line, turn.ref))
        return list(found.values())[:limit]

    return find


def find_people(t: Transcript) -> list[Candidate]:
    """Sentences about a named person: a mention of someone in `people`/participants with a trait verb, or a
    first-person statement by a named speaker (LoCoMo-style conversations)."""
    names = [str(n) for n in (t.frontmatter.get("people") or [])]
    names += [p for p in t.participants if p not in ("user", "agent", "system")]
    firsts = {n.split()[0] for n in names if n}
    found: dict[str, Candidate] = {}
    scored: list[tuple[int, int, Candidate]] = []
    for turn in _speaker_turns(t):
        named_speaker = turn.role in firsts or turn.role in names
        for s, _ in _sentences(turn):
            if s.endswith("?") or len(s.split()) < 5 or not _TRAIT.search(s) or statement(s, "person") is None:
                continue
            words = set(re.findall(r"[A-Z][a-z]+", s))
            if words & firsts and not named_speaker:
                content = s
            elif named_speaker and re.match(r"^(i|i'm|i've|my|we)\b", s, re.IGNORECASE):
                content = f"{turn.role}: {s}"
            else:
                continue
            if content in found:
                continue
            cand = Candidate(content, turn.at or t.started, turn.line, turn.ref)
            found[content] = cand
            score = len(words) + (2 if re.search(r"\d", s) else 0) + min(len(s.split()), 25) // 5
            scored.append((-score, len(scored), cand))
    return [c for _, _, c in sorted(scored)[:8]]


def find_procedures(t: Transcript) -> list[Candidate]:
    """A `To X:` line followed by at least two numbered steps, kept as one memory."""
    out: list[Candidate] = []
    for turn in _speaker_turns(t):
        lines = [line.strip() for line in turn.text.split("\n")]
        i = 0
        while i < len(lines):
            head = _PROCEDURE_HEAD.match(lines[i])
            steps: list[str] = []
            j = i + 1
            while head and j < len(lines) and (m := _NUMBERED.match(lines[j])):
                steps.append(m.group(2).rstrip("."))
                j += 1
            if head and len(steps) >= 2:
                body = "; ".join(f"{n}. {s}" for n, s in enumerate(steps, 1))
                if (kept := statement(f"How to {head.group(1)}: {body}.", "procedure")) is not None:
                    out.append(Candidate(kept, turn.at or t.started, turn.line, turn.ref))
                i = j
            else:
                i += 1
    return out


def find_facts(t: Transcript) -> list[Candidate]:
    """Sentence scoring: numbers, proper nouns and a declarative length; decisions and lessons left to theirs."""
    scored: list[tuple[int, int, Candidate]] = []
    seen: set[str] = set()
    for turn in _speaker_turns(t):
        for s, _ in _sentences(turn):
            words = s.split()
            if (
                s.endswith("?")
                or len(words) < 5
                or _DECISION.search(s)
                or _LESSON.search(s)
                or _FILLER.match(s)
                or is_proposal(s)
                or s in seen
            ):
                continue
            seen.add(s)
            proper = len(re.findall(r"(?<!^)(?<![.!?] )\b[A-Z][A-Za-z0-9]+", s))
            score = (2 if re.search(r"\d", s) else 0) + min(2, proper)
            score += 1 if 6 <= len(words) <= 30 else 0
            if score >= 3 and (kept := statement(s, "fact")) is not None:
                content = kept if turn.role in ("user", "agent") else f"{turn.role}: {kept}"
                scored.append((-score, len(scored), Candidate(content, turn.at or t.started, turn.line, turn.ref)))
    return [c for _, _, c in sorted(scored)[:4]]


EXTRACTORS: dict[str, Extractor] = {
    e.name: e
    for e in (
        Extractor("decisions", "3", "decision", 1.6, "Decisions made in the session (who chose what, and why).",
                  _pattern_extractor("decision", _DECISION, 6, min_words=6, skip=not_a_decision)),
        Extractor("lessons", "3", "lesson", 1.5, "Lessons learned, rules of thumb, mistakes not to repeat.",
                  _pattern_extractor("lesson", _LESSON, 6, skip=not_a_lesson)),
        Extractor("people", "3", "person", 1.2, "What the session says about people: preferences, roles, events.",
                  find_people),
        Extractor("procedures", "2", "procedure", 1.4, "How-to steps written down in the session.", find_procedures),
        Extractor("facts", "3", "fact", 1.0, "Factual statements worth keeping, by sentence score.", find_facts),
    )
}


def memory_id(source: str, session_id: str, content: str) -> str:
    """Deterministic: the same extractor version on the same session gives the same ids (idempotent replays)."""
    digest = hashlib.sha256(f"{source}\x1f{session_id}\x1f{content}".encode()).hexdigest()
    return f"ext_{digest[:20]}"


def category_of(t: Transcript) -> str:
    """The session's topic for grouping: `project`, else `conversation`, else the first tag, else 'general'."""
    for key in ("project", "conversation"):
        if t.frontmatter.get(key):
            return str(t.frontmatter[key])
    tags = [tag for tag in t.tags if tag != LEGACY_TAG]  # an earlier release's flush: no project
    return tags[0] if tags else "general"


def select(names: Sequence[str] | None) -> list[Extractor]:
    if not names:
        return list(EXTRACTORS.values())
    unknown = [n for n in names if n not in EXTRACTORS]
    if unknown:
        raise ValueError(f"unknown extractor(s) {', '.join(unknown)}; known: {', '.join(EXTRACTORS)}")
    return [EXTRACTORS[n] for n in names]
