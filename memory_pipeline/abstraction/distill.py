"""Distillation: the seed's prompts, JSON parsing, validation, and the offline extractive distiller.

Every distiller — offline or an LLM — goes through `validate_abstraction`, and the compression ratio is
always computed from our own token counts, never taken from a model's claim.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_pipeline.tokens import estimate_tokens

SYSTEM_PROMPT = """You are a knowledge distillation engine for an AI agent's memory system.
Given N related memories, produce a single compressed abstraction that:
1. Preserves ALL actionable insights and causal relationships
2. Is ≤30% the combined token length of the inputs
3. Is written as a declarative fact or principle, not a narrative or story
4. Captures the most generalizable form of the pattern
5. Determines whether the pattern is causal (action → outcome) or merely descriptive

Output ONLY valid JSON: { "abstraction": "...", "compression_ratio": 3.4, "is_causal": true }"""

ATOM_SYSTEM_PROMPT = """You extract causal knowledge atoms from text. A causal atom has four fields:
- subject: WHO or WHAT acts (e.g., "Helios", "whale wallet", "Matthew")
- action: WHAT they do (e.g., "asserts without verifying", "accumulates BTC")
- outcome: WHAT results (e.g., "assertion is wrong", "price rises")
- consequences: WHAT follows downstream (e.g., "Matthew corrects; trust eroded")

Output ONLY valid JSON: { "subject": "...", "action": "...", "outcome": "...", "consequences": "..." }
If the text is not genuinely causal, output: { "not_causal": true }"""


@dataclass(frozen=True)
class Member:
    """What a distiller sees of one source memory."""

    id: str
    content: str
    importance: float


@dataclass
class Distillation:
    """Seed 000 §6 DistilledResult, plus who produced it."""

    abstraction: str
    compression_ratio: float
    is_causal: bool
    input_tokens: int
    output_tokens: int
    llm_latency_ms: float
    distiller: str
    usage: dict[str, int] = field(default_factory=dict)


def build_user_message(members: Sequence[Member], category: str) -> str:
    lines = [f"MEMORIES TO COMPRESS (cluster of {len(members)} related entries, category: {category}):", ""]
    lines += [f"[{i}] importance={m.importance:g} | {m.content}" for i, m in enumerate(members, start=1)]
    lines += ["", "Produce a single compressed abstraction."]
    return "\n".join(lines)


class DistillationRejected(ValueError):
    """The distillation failed a validation rule; the message is the skip reason."""


def parse_json_object(text: str) -> dict[str, object]:
    """The first JSON object in `text`, tolerating code fences and prose around it."""
    cleaned = re.sub(r"```(?:json)?", "", text).strip()
    start = cleaned.find("{")
    if start < 0:
        raise DistillationRejected(f"invalid JSON: no object in {text[:80]!r}")
    try:
        obj, _ = json.JSONDecoder().raw_decode(cleaned[start:])
    except json.JSONDecodeError as exc:
        raise DistillationRejected(f"invalid JSON: {exc.msg} at char {exc.pos}") from None
    if not isinstance(obj, dict):
        raise DistillationRejected("invalid JSON: not an object")
    return obj


def validate_abstraction(
    abstraction: str,
    source_tokens: int,
    member_ids: Sequence[str],
    min_ratio: float,
    max_tokens: int,
) -> float:
    """Seed 000 §4.2 validation rules. Returns the measured compression ratio or raises with the reason."""
    text = abstraction.strip()
    if not text:
        raise DistillationRejected("empty abstraction")
    tokens = estimate_tokens(text)
    if tokens > max_tokens:
        raise DistillationRejected(f"abstraction has {tokens} tokens, above the {max_tokens} cap")
    for mid in member_ids:
        if mid and re.search(rf"(?<![\w-]){re.escape(mid)}(?![\w-])", text):
            raise DistillationRejected(f"leaked memory id {mid}")
    ratio = source_tokens / tokens
    if ratio < min_ratio:
        raise DistillationRejected(f"compression_ratio={ratio:.1f} below floor")
    return ratio


# ------------------------------------------------------------------ offline extractive distiller

_STOP = frozenset(
    """a an the and or but if then so of to in on at by for with from into onto over under about as is are was
    were be been being it its this that these those i me my we our you your he she they them their his her
    not no yes do does did done have has had will would can could should may might must just again also very
    more most less least than too up down out off only own same such both each few other some any all there
    here when where which who whom what why how after before while during because today yesterday tomorrow""".split()
)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[A-Z0-9\"'(])")
_WORD = re.compile(r"[a-z0-9][a-z0-9_'$%.-]*[a-z0-9%]|[a-z0-9]")
CAUSAL_MARKERS = re.compile(
    r"\b(because|caused|causes|causing|led to|leads to|lead to|resulted in|results in|result in|triggered|"
    r"triggers|preceded|precedes|due to|so that|therefore|which meant|whenever|when .+?,|after .+?,|if .+?,)"
    r"|→|->|=>",
    re.IGNORECASE,
)


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1]


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def is_causal_text(text: str) -> bool:
    return CAUSAL_MARKERS.search(text) is not None


class OfflineDistiller:
    """Deterministic, extractive, and honest about it: it selects the sentences that carry the words most
    members share, drops redundant ones, and adds how many observations the pattern rests on. It
    paraphrases nothing, so it cannot invent a fact."""

    name = "offline-extractive"

    def __init__(self, budget_fraction: float = 0.3) -> None:
        self.budget_fraction = budget_fraction

    def distill(self, members: Sequence[Member], category: str, date_range: tuple[str, str]) -> Distillation:
        source_tokens = sum(estimate_tokens(m.content) for m in members)
        doc_freq: Counter[str] = Counter()
        for m in members:
            doc_freq.update(set(content_words(m.content)))
        shared = {w: c for w, c in doc_freq.items() if c >= 2}
        # The pattern is causal when at least half the members state a cause; then the causal sentences
        # are preferred so the abstraction (and the atom drawn from it) keeps the cause.
        causal = 2 * sum(1 for m in members if is_causal_text(m.content)) >= len(members)

        candidates: list[tuple[float, int, str, set[str]]] = []
        for order, m in enumerate(members):
            for sentence in split_sentences(m.content):
                words = set(content_words(sentence))
                if not words:
                    continue
                weight = sum(shared.get(w, 0) for w in words)
                score = weight / (len(words) ** 0.5) + 0.01 * m.importance
                if causal and is_causal_text(sentence):
                    score *= 1.5
                candidates.append((score, order, sentence, words))
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))

        budget = max(1, int(self.budget_fraction * source_tokens))
        chosen: list[tuple[int, str]] = []
        covered: set[str] = set()
        used = 0
        for _, _, sentence, words in candidates:
            cost = estimate_tokens(sentence)
            if chosen and used + cost > budget:
                continue
            new_shared = {w for w in words if w in shared} - covered
            if chosen and len(new_shared) < max(2, 0.3 * len([w for w in words if w in shared])):
                continue  # redundant with what we already have
            chosen.append((len(chosen), _as_statement(sentence)))
            covered |= words
            used += cost
            if used >= budget:
                break
        body = " ".join(s for _, s in chosen)
        start, end = date_range[0][:10], date_range[1][:10]
        span = start if start == end else f"{start} to {end}"
        abstraction = f"{body} [Pattern seen {len(members)} times, {span}.]"
        out_tokens = estimate_tokens(abstraction)
        return Distillation(
            abstraction=abstraction,
            compression_ratio=round(source_tokens / max(1, out_tokens), 3),
            is_causal=causal and is_causal_text(body),
            input_tokens=source_tokens,
            output_tokens=out_tokens,
            llm_latency_ms=0.0,
            distiller=self.name,
        )

    def extract_atom(self, text: str) -> dict[str, str] | None:
        return extract_atom_rule_based(text)


def _as_statement(sentence: str) -> str:
    s = sentence.strip()
    if s and s[-1] not in ".!?":
        s += "."
    return s[0].upper() + s[1:] if s else s


# ------------------------------------------------------------------ rule-based atom extraction

_FORWARD = re.compile(
    r"^(?P<cause>.+?)\s*(?:,\s*which\s+)?\b(?P<verb>led to|leads to|lead to|caused|causes|resulted in|results in|"
    r"triggered|triggers|preceded|precedes|produced|produces)\b\s+(?P<effect>.+)$",
    re.IGNORECASE,
)
_ARROW = re.compile(r"^(?P<cause>.+?)\s*(?:→|->|=>)\s*(?P<effect>.+)$")
_CONDITION = re.compile(r"^(?:when|whenever|after|if|once)\s+(?P<cause>.+?),\s*(?:then\s+)?(?P<effect>.+)$", re.I)
_BECAUSE = re.compile(r"^(?P<effect>.+?)\s+(?:because|due to)\s+(?P<cause>.+)$", re.IGNORECASE)
_VERBISH = re.compile(
    r"^(?:is|are|was|were|has|have|had|do|does|did|can|will|should|keeps?|gets?|got|goes|went|makes?|made|"
    r"takes?|took|runs?|ran|sees?|saw|\w+ed|\w+es|\w{3,}s)$",
    re.IGNORECASE,
)
_LEADING = re.compile(r"^(?:the|a|an|my|our)\s+", re.IGNORECASE)
_PARTICIPLE = re.compile(r"^(?:\w+ing|\w+ed|is|are|was|were|has|have|had|can|will|should)$", re.IGNORECASE)
AGENT = "the agent"


def _split_subject(clause: str) -> tuple[str, str]:
    """Subject = the words before the first verb-like word. A plural noun ("wallets") is not taken for a
    verb when a participle follows it; a clause that opens with a gerund is something the agent did."""
    words = clause.strip().rstrip(".").split()
    if words and words[0].lower().endswith("ing"):
        return AGENT, " ".join(words)
    for i, word in enumerate(words[1:5], start=1):
        w = word.strip(",")
        if not _VERBISH.match(w):
            continue
        following = words[i + 1].strip(",") if i + 1 < len(words) else ""
        if not _PARTICIPLE.match(w) and w.lower().endswith("s") and _PARTICIPLE.match(following):
            continue
        return " ".join(words[:i]), " ".join(words[i:])
    return " ".join(words[:2]), " ".join(words[2:]) or " ".join(words)


def _split_outcome(effect: str) -> tuple[str, str]:
    effect = effect.strip().rstrip(".")
    for sep in ("; ", ", so ", ", and then ", ", which ", " — ", ", and "):
        if sep in effect:
            head, tail = effect.split(sep, 1)
            return head.strip(), tail.strip()
    return effect, ""


def extract_atom_rule_based(text: str) -> dict[str, str] | None:
    """{subject, action, outcome, consequences} from the first causal sentence, or None if none is causal."""
    for sentence in split_sentences(re.sub(r"\s*\[Pattern seen.*?\]\s*$", "", text)):
        s = sentence.strip().rstrip(".")
        for pattern in (_CONDITION, _FORWARD, _ARROW, _BECAUSE):
            m = pattern.match(s)
            if not m:
                continue
            cause, effect = m.group("cause").strip(" ,"), m.group("effect").strip(" ,")
            if len(cause.split()) < 2 or len(effect.split()) < 1:
                continue
            subject, action = _split_subject(_LEADING.sub("", cause))
            outcome, consequences = _split_outcome(effect)
            if subject and action and outcome:
                return {"subject": subject, "action": action, "outcome": outcome, "consequences": consequences}
    return None
