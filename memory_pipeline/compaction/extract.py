"""Offline, deterministic extraction: working note → episodic summary, episodic summary → semantic entries.

Extractive, not generative: sentences are scored by term frequency within the note (the classic Luhn idea),
by cue phrases (decisions, lessons, outcomes), by being first under a heading, and by length; the best ones
are kept verbatim, in document order. Code blocks, log lines, diffs and tool output are never picked.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from memory_pipeline.compaction.governance import SemanticEntry, forbidden_content

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of
    off on once only or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours yourself yourselves also got get gets""".split()
)
DECISION_CUES = re.compile(
    r"\b(decided|decide|decision|agreed|chose|choose|opted|settled on|switched to|adopted|will now|going forward|"
    r"plan(?:ned)? to|committed to)\b",
    re.I,
)
INSIGHT_CUES = re.compile(
    r"\b(learned|lesson|always|never|should|must|prefer|avoid|better to|works best|turns out|realized|realised|"
    r"principle|rule of thumb|key insight|takeaway|important to|remember to)\b",
    re.I,
)
OUTCOME_CUES = re.compile(
    r"\b(fixed|resolved|shipped|released|deployed|completed|finished|failed|broke|caused|resulted|launched|"
    r"migrated|merged|met|visited|started|moved)\b",
    re.I,
)
_EPISTEMIC = re.compile(r"\bmust\s+(have\s+\w+|be\s+(so|really|very|great|nice|fun|hard|tough))\b", re.I)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]+")
_LEAD_IN = re.compile(
    r"^(?:(?:key\s+)?(?:lesson(?:s)?(?:\s+learned)?|insight|takeaway|principle|note|decision)\s*[:\-–]\s*|"
    r"(?:we|i)\s+(?:learned|realized|realised)\s+(?:that\s+)?|it\s+turns\s+out\s+(?:that\s+)?)",
    re.I,
)
NONE_RECORDED = "None recorded."


@dataclass(frozen=True)
class Sentence:
    text: str
    heading: str
    position: int
    first_in_section: bool


def _strip_frontmatter(text: str) -> str:
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end >= 0:
            return text[end + 4 :]
    return text


def sentences(text: str) -> list[Sentence]:
    """Prose sentences and bullet items with the heading they sit under; code fences and lines that look
    like logs, diffs or tool output are skipped (they stay in the archived original)."""
    out: list[Sentence] = []
    paragraph: list[str] = []
    heading, in_fence, first = "", False, True

    def flush() -> None:
        nonlocal paragraph, first
        joined = " ".join(paragraph).strip()
        paragraph = []
        for part in _SENTENCE_SPLIT.split(joined):
            part = part.strip()
            if len(_WORD.findall(part)) >= 3 and not forbidden_content(part):
                out.append(Sentence(part, heading, len(out), first))
                first = False

    for raw in _strip_frontmatter(text).splitlines():
        line = raw.strip()
        if line.startswith("```"):
            flush()
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if line.startswith("#"):
            flush()
            heading, first = line.lstrip("#").strip(), True
        elif not line:
            flush()
        elif _BULLET.match(line):
            flush()
            paragraph = [_BULLET.sub("", line)]
            flush()
        else:
            paragraph.append(line)
    flush()
    return out


def _content_words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in STOPWORDS and len(w) > 2]


def score_sentences(items: list[Sentence]) -> list[float]:
    """Luhn-style significance: a word counts by how many sentences use it, discounted when nearly every
    sentence does (speaker names, "said"); normalised to 0–3, plus cue, position and length terms.
    First-person chatter and speaker-prefixed lines are events of a conversation, not key events."""
    n_items = len(items)
    df = Counter(w for s in items for w in set(_content_words(s.text)))

    def weight(w: str) -> float:
        return min(df[w], 4) * math.log((n_items + 1) / (df[w] + 0.5))

    raw = []
    for s in items:
        words = set(_content_words(s.text))
        raw.append(sum(weight(w) for w in words) / math.sqrt(len(words)) if words else 0.0)
    top = max(raw, default=0.0) or 1.0
    scores = []
    for s, r in zip(items, raw, strict=True):
        n = len(_WORD.findall(s.text))
        cue = 1.5 * bool(DECISION_CUES.search(s.text)) + 1.5 * bool(INSIGHT_CUES.search(s.text))
        cue += 1.0 * bool(OUTCOME_CUES.search(s.text))
        position = 0.75 if s.first_in_section else 0.0
        length = -2.0 if n < 6 else -1.0 if n > 45 else 0.0
        chatter = -1.5 if "conversational fragment" in forbidden_content(s.text) else 0.0
        scores.append(round(3.0 * r / top + cue + position + length + chatter, 6))
    return scores


def _principle(text: str) -> bool:
    """A candidate insight: a lesson cue and nothing the semantic filter would reject (no chatter)."""
    if len(_WORD.findall(text)) < 6 or _EPISTEMIC.search(text):
        return False
    return bool(INSIGHT_CUES.search(text)) and not forbidden_content(_LEAD_IN.sub("", text))


def _top(items: list[Sentence], scores: list[float], k: int) -> list[Sentence]:
    ranked = sorted(range(len(items)), key=lambda i: (-scores[i], i))[:k]
    return [items[i] for i in sorted(ranked)]


def _clip(text: str, limit: int = 280) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class EpisodicSummary:
    source_name: str
    summary: list[str]
    decisions: list[str]
    insights: list[str]
    domain: str = ""  # the working note's explicit domain, carried as a `Domain:` line for routing

    def render(self) -> str:
        """Seed 003 step 2's format (plus `Domain:` when the note named its semantic domain)."""

        def block(items: list[str]) -> str:
            return "\n".join(f"- {_clip(i)}" for i in items) if items else NONE_RECORDED

        return (
            f"# Compiled: {self.source_name}\n"
            + (f"Domain: {self.domain}\n" if self.domain else "")
            + f"## Summary\n{block(self.summary)}\n"
            f"## Decisions\n{block(self.decisions)}\n"
            f"## Extracted Insights\n{block(self.insights)}\n"
        )


def summarise(source_name: str, text: str) -> EpisodicSummary:
    """3–5 summary bullets (fewer only when the note has fewer sentences), decisions and insights."""
    items = sentences(text)
    scores = score_sentences(items)
    k = min(len(items), max(3, min(5, math.ceil(len(items) / 4))))
    decisions = [s for s in items if DECISION_CUES.search(s.text)]
    insights = [s for s in items if _principle(s.text)]
    by_score = {s.position: sc for s, sc in zip(items, scores, strict=True)}
    return EpisodicSummary(
        source_name,
        [s.text for s in _top(items, scores, k)],
        [s.text for s in _top(decisions, [by_score[s.position] for s in decisions], 5)],
        [s.text for s in _top(insights, [by_score[s.position] for s in insights], 5)],
    )


def _section(text: str, name: str) -> list[str]:
    match = re.search(rf"^##\s+{re.escape(name)}\s*$(.*?)(?=^#|\Z)", text, re.M | re.S)
    if not match:
        return []
    items = [_BULLET.sub("", line).strip() for line in match[1].splitlines() if _BULLET.match(line)]
    return [i for i in items if i and i != NONE_RECORDED]


def make_title(sentence: str, max_words: int = 7) -> str:
    cleaned = _LEAD_IN.sub("", sentence.strip()).rstrip(".!;:…")
    words = cleaned.split()
    title = " ".join(words[:max_words]).rstrip(",;:")
    return title[:1].upper() + title[1:]


def _overlap(a: str, b: str) -> float:
    wa, wb = set(_content_words(a)), set(_content_words(b))
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def extract_insights(episodic_name: str, text: str, limit: int = 3) -> list[SemanticEntry]:
    """Candidate semantic entries from one episodic file: its `## Extracted Insights` bullets when it has
    them (a compiled summary), else the best insight-cue sentences of the note. Candidates are validated
    and duplicate-checked by the caller; this function never filters by governance."""
    insights = _section(text, "Extracted Insights")
    if not insights:
        items = [s for s in sentences(text) if _principle(s.text)]
        insights = [s.text for s in _top(items, score_sentences(items), limit)]
    decisions = _section(text, "Decisions")
    summary = _section(text, "Summary")
    compiled = re.search(r"^# Compiled:\s*(.+)$", text, re.M)
    source = compiled[1].strip() if compiled else episodic_name
    entries = []
    for insight in insights[:limit]:
        cleaned = _LEAD_IN.sub("", insight).strip()
        cleaned = cleaned[:1].upper() + cleaned[1:]
        best_summary = max(summary, key=lambda s: (_overlap(s, insight), -summary.index(s)), default="")
        context = f"Compacted from {source}"
        if best_summary and best_summary != insight:
            context += f": {_clip(best_summary, 200)}"
        impact = next((d for d in decisions if d != insight and _overlap(d, insight) >= 0.15), "")
        entries.append(SemanticEntry(make_title(cleaned), context, _clip(cleaned, 400), _clip(impact, 300)))
    return entries
