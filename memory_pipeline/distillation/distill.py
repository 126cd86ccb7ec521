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

from memory_pipeline.distillation import abstractive as ab
from memory_pipeline.statements import facts as fx
from memory_pipeline.statements import judgement
from memory_pipeline.tokens import estimate_tokens
from memory_pipeline.verification import faithfulness

SYSTEM_PROMPT = """You are a knowledge distillation engine for an AI agent's memory system.
Given N related memories, produce a single compressed abstraction that:
1. Preserves ALL actionable insights and causal relationships
2. Is ≤30% the combined token length of the inputs
3. Is written as a declarative fact or principle, not a narrative or story
4. Captures the most generalizable form of the pattern
5. Determines whether the pattern is causal (action → outcome) or merely descriptive
6. Says every distinct lesson, instruction, decision and observation of the inputs (paraphrases of one may be
   said once); distinct events stay distinct, each with its own detail — they are not one "pattern"
7. States no number, name, date or range that no input states: values are combined into a range only across
   reports of the same thing ("took 16-48 minutes" over three reports of one job), never across different
   events, people, places or strategies; signs and clock times are kept as written

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
    day: str = ""  # the day it was written (YYYY-MM-DD), when known: values over several days say which


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
    if any(VERSION_LINE.search(m.content) for m in members):
        lines += ["", "A memory marked (since DATE; was VALUE DATE → DATE, …) holds the current value of a fact and "
                      "its earlier values, and the memories marked (replaced …) are those earlier values: state the "
                      "current value first with its date, then the earlier values with their date ranges, never as "
                      "a bare list of values."]
    lines += ["", "Produce a single compressed abstraction."]
    return "\n".join(lines)


VERSION_LINE = re.compile(r"\(since \d{4}-\d{2}-\d{2}; was ")  # written by abstraction.versions.present_first
REPLACED = "(replaced by a later value, stated above) "  # an earlier version, which the version line states


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
        if mid and mid in text and re.search(rf"(?<![\w-]){re.escape(mid)}(?![\w-])", text):  # `in`: no compile
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


# Conversational filler: words that make a sentence friendly but carry no fact an agent could be asked about.
_FILLER = frozenset(
    """hey hi hello thanks thank wow awesome great good nice cool glad love lovely amazing sweet sound sounds
    totally really yeah yep yup oh ah haha lol hope hoping hear heard see seeing talk talking chat chatting catch
    bye later care happy excited super fun means mean lot lots appreciate proud congrats congratulations sure
    definitely absolutely agree right okay ok well whoa omg incredible beautiful wonderful fantastic stuff thing
    things something anything everything much many feel feeling felt keep going gonna wanna got get getting
    doing been new since time long missed miss share sharing kind words way totally pretty little bit
    always never ever even still like know think thought guess let let's i'm you're it's that's what's
    can't don't i've you've we're i'll you'll isn't didn't doesn't wasn't say said saying want wanted tell
    told talked spoke speak spill beans moment moments cherish wish wishing best enjoy enjoyed fave inspiring
    inspired support supportive""".split()
)
_VOCATIVE = re.compile(  # "Hey Mel!", "Thanks, Tomas!", "Kofi, I moved…": addressing someone states nothing
    r"(?:^|(?<=,\s)|"
    + "|".join(
        rf"(?<=\b{w}\s)|(?<=\b{w.capitalize()}\s)"
        for w in ("hey", "hi", "hello", "thanks", "bye", "wow", "dear", "yo", "thank you")
    )
    + r")[A-Z][a-z]+(?=\s*[!,.?;])"
)
_NUMERIC = re.compile(r"\d")
_DATE_WORD = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|march|april|june|july|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|"
    r"nov(?:ember)?|dec(?:ember)?|monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|"
    r"yesterday|tomorrow|tonight|week|month|year|ago)\b",
    re.IGNORECASE,
)
RATIO_MARGIN = 1.08  # aim this far above the validation floor: token estimates of parts and whole differ


class OfflineDistiller:
    """Deterministic, and it invents nothing: every word it writes comes from a member, values fold into a range
    only across reports of one statement (`statements.judgement`), and distinct events are written each
    with its own values. Every member's number, named entity and negation survives — verbatim or inside an
    honest range — or the night's judge refuses the text and the cluster stays as it is.

    Sentences that say the same thing are one family (`abstractive.group`) written once: the skeleton with
    its numbers folded into ranges ("slipped 2.3–8.0% against the quote"); a statement that disagrees (another
    name, a state with another value, a negation) is its own family, said in its own words. Which families are
    written (measured on LoCoMo): first those carrying facts not yet stated, most facts
    first; then each member's most informative sentence — most words that are neither stop words nor
    conversational filler, names, numbers and dates counting double — unless its words are already there;
    then families that add words, up to `budget_fraction` of the sources. Small talk ("Thanks, Mel!") is
    never written for what it says. The whole stays within the validation rules: at most `max_tokens`, and a
    compression ratio at least `min_ratio` (with a margin); a member written "Name: text" keeps its label."""

    name = "offline-extractive"

    def __init__(self, budget_fraction: float = 0.3, max_tokens: int = 2000, min_ratio: float = 1.5,
                 encode: faithfulness.Encode | None = None) -> None:  # fmt: skip
        self.encode = encode  # the embedder's, when the night has one: paraphrases already said are not repeated
        self.budget_fraction = budget_fraction
        self.max_tokens = max_tokens
        self.min_ratio = min_ratio

    def distill(self, members: Sequence[Member], category: str, date_range: tuple[str, str]) -> Distillation:
        """Versions of one fact come as one line, the present first (`VERSION_LINE`), and their earlier members
        marked `REPLACED`: the line is written as it is, first; the earlier members count as sources (tokens,
        the count in its frame) but are not written again; the other members are distilled as usual after it."""
        pinned = [m.content.strip() for m in members if VERSION_LINE.search(m.content)]
        if not pinned:
            return self._distill(members, date_range)
        rest = [m for m in members if not VERSION_LINE.search(m.content) and not m.content.startswith(REPLACED)]
        return self._distill(rest, date_range, sum(estimate_tokens(m.content) for m in members), len(members),
                             " ".join(pinned))  # fmt: skip

    def _distill(self, members: Sequence[Member], date_range: tuple[str, str], source_tokens: int = 0,
                 seen: int = 0, pinned: str = "") -> Distillation:  # fmt: skip
        source_tokens = source_tokens or sum(estimate_tokens(m.content) for m in members)
        seen = seen or len(members)
        labels: list[str] = []
        bodies: list[str] = []
        for m in members:
            label, body = fx.speaker_and_body(m.content)
            labels.append(label)
            bodies.append(body)
        if not all(labels):  # "On-chain: …" in one memory is a heading; transcripts label every turn
            labels, bodies = [""] * len(members), [m.content.strip() for m in members]
        names = {w for label in labels for w in content_words(label)}

        def name_like(word: str) -> bool:  # "Mel" for a member labelled "Melanie" is an address, not a fact
            return word in names or (len(word) >= 3 and any(n.startswith(word) for n in names))

        doc_freq: Counter[str] = Counter()
        for body in bodies:
            doc_freq.update(set(content_words(body)))
        shared = {w: c for w, c in doc_freq.items() if c >= 2}
        # The pattern is causal when at least half the members state a cause; then the causal sentences
        # are preferred so the abstraction (and the atom drawn from it) keeps the cause.
        causal = 2 * sum(1 for m in members if is_causal_text(m.content)) >= len(members)
        known = fx.known_names(m.content for m in members)

        pieces: list[ab.Piece] = []
        for order, (m, body) in enumerate(zip(members, bodies, strict=True)):
            for position, sentence in enumerate(split_sentences(body)):
                plain = _VOCATIVE.sub(lambda v: v.group(0) if _DATE_WORD.fullmatch(v.group(0)) else "", sentence)
                words = frozenset(w for w in content_words(plain) if w not in _FILLER and not name_like(w))
                ents = [e for e in fx.entities(sentence, known) if not name_like(e.lower())]
                marks = len(ents) + len(_DATE_WORD.findall(sentence)) + (1 if _NUMERIC.search(sentence) else 0)
                if not (len(words) >= 3 or (marks and words)):
                    words = frozenset()  # small talk: never picked for what it says
                score = len(words) + marks + 0.01 * m.importance
                sentence_causal = is_causal_text(sentence)
                if causal and sentence_causal:
                    score *= 1.5
                nums = fx.numbers(sentence) if words else []
                pieces.append(
                    ab.Piece(
                        order,
                        position,
                        sentence,
                        labels[order],
                        score,
                        words,
                        sentence_causal,
                        nums,
                        ents if words else [],
                    )  # fmt: skip
                )

        tail = fx.frame(seen, date_range[0][:10], date_range[1][:10])
        hard = min(self.max_tokens, int(source_tokens / (self.min_ratio * RATIO_MARGIN))) - estimate_tokens(tail) - 1
        hard -= estimate_tokens(pinned) + 1 if pinned else 0
        soft = max(1, int(self.budget_fraction * source_tokens))

        near = judgement.Near(self.encode)
        families = ab.merge_rewordings([f for f in ab.group(pieces) if f.words], near)
        # a family whose folded sentence its own sentences do not support (a sign, a clock time, values of two
        # statements) is written as its most typical sentence, verbatim, instead
        days = [m.day for m in members]
        texts = [_supported(f, ab.render(f, days)[0], near) for f in families]
        texts = [t if estimate_tokens(t) < hard else ab.without_trend(t) for t in texts]  # a range's reports said short
        costs = [estimate_tokens(t) + (estimate_tokens(f.pieces[0].label + ":") if f.pieces[0].label else 0) + 1
                 for t, f in zip(texts, families, strict=True)]  # fmt: skip
        fam_facts = [f.facts() for f in families]
        family_sentences = [s for t in texts for s in faithfulness.sentences(t)]
        asked = family_sentences + [p.text for p in pieces]  # what `said` may be asked of them below
        near.prepare([(w, t) for w in family_sentences for t in asked])

        def said(text: str, written: Sequence[str]) -> bool:
            return any(judgement.says(w, text, near) for w in written)

        def paraphrased(i: int) -> bool:  # every sentence of family i already said by what is chosen
            written = [w for j in chosen for w in faithfulness.sentences(texts[j])]
            return all(said(t, written) for t in faithfulness.sentences(texts[i]))
        shown_words = [ab.skeleton(f).words for f in families]
        chosen: list[int] = []
        covered_facts: set[str] = set()
        covered: set[str] = set()
        used = 0

        def take(i: int) -> None:
            nonlocal used
            chosen.append(i)
            used += costs[i]
            covered_facts.update(fam_facts[i])
            covered.update(shown_words[i])

        def open_(i: int, limit: int) -> bool:
            return i not in chosen and used + costs[i] <= limit

        by_score = sorted(range(len(families)), key=lambda i: (-max(p.score for p in families[i].pieces), i))
        represented: set[int] = set()
        for i in by_score:  # 1. every member's most informative sentence, unless its words (or a paraphrase) are there
            fresh = families[i].members - represented
            represented |= families[i].members
            if fresh and open_(i, hard) and not shown_words[i] <= covered and not paraphrased(i):
                take(i)
        while True:  # 2. facts not yet stated, most new facts first
            best = max(
                (i for i in range(len(families)) if open_(i, hard) and fam_facts[i] - covered_facts),
                key=lambda i: (len(fam_facts[i] - covered_facts), len(families[i].members), -i),
                default=None,
            )
            if best is None:
                break
            take(best)
        rest = [i for i in range(len(families)) if i not in chosen]
        while rest:  # 3. families that add words, within the soft budget
            i = max(rest, key=lambda i: (len(shown_words[i] - covered), -i))
            rest.remove(i)
            new_words = shown_words[i] - covered
            if len(new_words) < 2 or (not labels[0] and 2 * len(new_words) < len(shown_words[i])):
                continue
            if paraphrased(i):
                continue
            if open_(i, min(hard, max(soft, used))):
                take(i)
        if causal and not any(families[i].causal for i in chosen):
            for i in by_score:
                if families[i].causal and open_(i, hard):
                    take(i)
                    break
        written = [s for i in chosen for s in faithfulness.sentences(texts[i])]
        extra: list[tuple[tuple[int, int], str, str]] = []
        by_size = sorted(range(len(families)), key=lambda i: (-len(families[i].members), i))
        for p in (p for i in by_size for p in families[i].pieces):
            # 4. every statement not said yet — a lesson, an instruction, a decision — verbatim, within the limit
            text = ab.as_statement(p.text)
            if not faithfulness.statement_like(text) or said(p.text, written):
                continue
            cost = estimate_tokens(text) + 1
            if used + cost <= hard:
                used += cost
                extra.append(((p.member, p.position), p.label, text))
                written.append(text)

        body = self._render([(families[i].first, labels[families[i].first[0]], texts[i]) for i in chosen] + extra)
        if not chosen and pieces:  # nothing but filler: keep the sentence that shares the most words
            fallback = max(
                pieces,
                key=lambda p: (sum(shared.get(w, 0) for w in content_words(p.text)) / estimate_tokens(p.text) ** 0.5,
                               -p.member),
            )  # fmt: skip
            if estimate_tokens(fallback.text) + 1 <= max(hard, 1):
                body = self._render([((fallback.member, 0), labels[fallback.member], ab.as_statement(fallback.text))])
        body = f"{pinned} {body}".strip()
        abstraction = f"{body} {tail}" if body else tail
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

    @staticmethod
    def _render(parts: list[tuple[tuple[int, int], str, str]]) -> str:
        """Families in the order their first sentence appears, behind the member's label if it had one."""
        out: list[str] = []
        previous = ""
        seen: dict[str, list[str]] = {}
        for _, label, text in sorted(parts, key=lambda p: p[0]):
            said = seen.setdefault(label, [])
            kept: list[str] = []
            for s in split_sentences(text):  # one statement written once, however its sources worded it
                if not any(judgement.judge(k, s).same for k in said):
                    kept.append(s)
                    said.append(s)
            if not kept:
                continue
            text = " ".join(kept)
            out.append(f"{label}: {text}" if label and label != previous else text)
            previous = label
        return " ".join(out)

    def extract_atom(self, text: str) -> dict[str, str] | None:
        return extract_atom_rule_based(text)


def _supported(family: ab.Family, folded: str, near: judgement.Near | None = None) -> str:
    if not faithfulness.check([p.text for p in family.pieces], folded, near):
        return folded
    return ab.as_statement(ab.skeleton(family).text)


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
    for sentence in split_sentences(fx.FRAME.sub(" ", text)):
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
