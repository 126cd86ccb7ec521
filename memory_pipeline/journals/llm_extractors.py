"""The LLM versions of the session extractors (seed 001 §8.3): the seed's extraction prompt per session,
through the shared `llm` resource's AnthropicDistiller (its rate limiter, retries, cost cap and usage ledger).

The decisions prompt is the seed's, word for word (`DecisionExtractor.extract`); the seed names the other four
extractors without writing their prompts, so theirs follow the same template (what to extract, the fields of
each item, "Output JSON array. If no …, output [].", the transcript cut at 6000 characters). The model only
proposes: a reply must be the JSON array asked for, every item with its required fields non-empty and within
the length limits; an item that does not read as a statement on its own is left out, as the offline extractors'
are (`statement_quality`). Anything else — an API error, the cost cap, a reply cut at max_tokens, prose, a missing
field — raises `LLMExtractionFailed`, and the asset falls back to the offline extractor for that session,
reason reported. No Dagster here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memory_pipeline.journals.extractors import EXTRACTORS, Candidate, Extractor
from memory_pipeline.journals.statement_quality import statement
from memory_pipeline.journals.transcript import Transcript, render

# Version of each LLM extractor: its memories' `source` is `extract:<name>@<this>`. Bump one when its prompt,
# fields or validation change (a prompt change is an algorithm change: seed 001 §8.3).
LLM_VERSIONS: dict[str, str] = {name: "llm-2" for name in EXTRACTORS}

TRANSCRIPT_MAX_CHARS = 6000  # the seed's `transcript[:6000]`
MAX_TOKENS = 500  # the seed's `max_tokens=500`
MAX_ITEMS = 12  # items kept from one reply (the rest are dropped, like the offline extractors' limits)
MAX_FIELD_CHARS = 500  # a longer field is not a memory but a paragraph: the reply is rejected
MAX_STEPS = 15

SYSTEM_PROMPT = (
    "You are the knowledge extractor of an AI agent. You read one conversation transcript and answer with the "
    "JSON array asked for and nothing else. Use only what the transcript states."
)

# Seed 001 §8.3, DecisionExtractor.extract, verbatim.
DECISIONS_PROMPT = """Extract any decisions made in this conversation.
For each decision, output:
- decision: what was decided
- context: why
- project: which project (or "general")

Output JSON array. If no decisions, output [].

Transcript:
{transcript}"""

LESSONS_PROMPT = """Extract any lessons learned in this conversation.
For each lesson, output:
- lesson: what was learned (a rule of thumb, or a mistake not to repeat)
- context: what taught it

Output JSON array. If no lessons, output [].

Transcript:
{transcript}"""

PEOPLE_PROMPT = """Extract what this conversation says about people.
For each piece of information, output:
- person: who (their name)
- info: what is said about them (a preference, role, relationship or event)

Output JSON array. If no people information, output [].

Transcript:
{transcript}"""

PROCEDURES_PROMPT = """Extract any how-to procedures written down in this conversation.
For each procedure, output:
- procedure: what it achieves (e.g. "rotate the API keys")
- steps: the steps, in order, as a list of strings

Output JSON array. If no procedures, output [].

Transcript:
{transcript}"""

FACTS_PROMPT = """Extract factual information from this conversation worth keeping as reference.
For each fact, output:
- fact: the statement, one self-contained sentence
- topic: what it is about

Output JSON array. If no facts, output [].

Transcript:
{transcript}"""


class LLMExtractionFailed(Exception):
    """The LLM gave no usable answer for one session; the message is the fallback reason in the metadata."""


def _clip(text: str) -> str:
    return " ".join(text.split())


def _decision(item: Mapping[str, Any]) -> str:
    # the seed's content line, minus the date prefix (the memory has its own timestamp)
    return item["decision"] + (f" — {item['context']}" if item.get("context") else "")


def _lesson(item: Mapping[str, Any]) -> str:
    return item["lesson"] + (f" — {item['context']}" if item.get("context") else "")


def _person(item: Mapping[str, Any]) -> str:
    return f"{item['person']}: {item['info']}"


def _procedure(item: Mapping[str, Any]) -> str:
    what = re.sub(r"^(how to|to)\s+", "", item["procedure"], flags=re.IGNORECASE).rstrip(":.")
    steps = "; ".join(f"{n}. {s.rstrip('.')}" for n, s in enumerate(item["steps"], 1))
    return f"How to {what}: {steps}."


def _fact(item: Mapping[str, Any]) -> str:
    return item["fact"]


@dataclass(frozen=True)
class PromptSpec:
    prompt: str
    required: tuple[str, ...]  # non-empty strings (`steps`: a non-empty list of strings)
    optional: tuple[str, ...]  # strings, may be empty or absent
    content: Callable[[Mapping[str, Any]], str]
    anchor: str  # the field matched against the turns to date the memory


PROMPTS: dict[str, PromptSpec] = {
    "decisions": PromptSpec(DECISIONS_PROMPT, ("decision",), ("context", "project"), _decision, "decision"),
    "lessons": PromptSpec(LESSONS_PROMPT, ("lesson",), ("context",), _lesson, "lesson"),
    "people": PromptSpec(PEOPLE_PROMPT, ("person", "info"), (), _person, "info"),
    "procedures": PromptSpec(PROCEDURES_PROMPT, ("procedure", "steps"), (), _procedure, "procedure"),
    "facts": PromptSpec(FACTS_PROMPT, ("fact",), ("topic",), _fact, "fact"),
}


def _needs_llm(t: Transcript) -> list[Candidate]:
    raise RuntimeError("an LLM extractor runs through LLMSessionExtractor, not offline")


def llm_extractor(name: str) -> Extractor:
    """The LLM version of an extractor: same name, kind and importance; its own version (and so source)."""
    return dataclasses.replace(EXTRACTORS[name], version=LLM_VERSIONS[name], find=_needs_llm)


def llm_configured(env: Mapping[str, str] | None = None) -> bool:
    """Whether the code location's `llm` resource will use Claude (resources.defaults.default_resources' rule), so the
    assets' code_version can name the version that will run and switching the key on or off marks them stale."""
    env = os.environ if env is None else env
    mode = env.get("MEMORY_PIPELINE_LLM", "auto")
    return mode in ("anthropic", "batch") or (mode == "auto" and bool(env.get("ANTHROPIC_API_KEY")))


def version_for(name: str, use_llm: bool) -> str:
    return LLM_VERSIONS[name] if use_llm else EXTRACTORS[name].version


def user_prompt(name: str, t: Transcript) -> str:
    """The seed's prompt with the session's transcript (rebuilt from the parsed session, cut like the seed's)."""
    return PROMPTS[name].prompt.format(transcript=render(t)[:TRANSCRIPT_MAX_CHARS])


def parse_json_array(reply: str) -> list[Any]:
    """The first JSON array in `reply`, tolerating code fences and prose around it."""
    cleaned = re.sub(r"```(?:json)?", "", reply).strip()
    if not cleaned:
        raise LLMExtractionFailed("empty reply")
    start = cleaned.find("[")
    if start < 0:
        raise LLMExtractionFailed(f"invalid JSON: no array in {reply[:80]!r}")
    try:
        value, _ = json.JSONDecoder().raw_decode(cleaned[start:])
    except json.JSONDecodeError as exc:
        raise LLMExtractionFailed(f"invalid JSON: {exc.msg} at char {exc.pos}") from None
    return value


def _field(name: str, i: int, item: Mapping[str, Any], key: str, required: bool) -> str | list[str]:
    value = item.get(key)
    where = f"{name} item {i}: field {key!r}"
    if key == "steps":
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise LLMExtractionFailed(f"{where} is not a list of strings")
        steps = [_clip(s) for s in value if s.strip()]
        if not steps or len(steps) > MAX_STEPS or any(len(s) > MAX_FIELD_CHARS for s in steps):
            raise LLMExtractionFailed(f"{where} needs 1–{MAX_STEPS} steps of at most {MAX_FIELD_CHARS} characters")
        return steps
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise LLMExtractionFailed(f"{where} is {'missing' if value is None else type(value).__name__}, not a string")
    text = _clip(value)
    if required and not text:
        raise LLMExtractionFailed(f"{where} is empty")
    if len(text) > MAX_FIELD_CHARS:
        raise LLMExtractionFailed(f"{where} has {len(text)} characters (at most {MAX_FIELD_CHARS})")
    return text


def _anchor(t: Transcript, text: str) -> tuple[Any, int, str | None]:
    """The turn the item most likely came from (fuzzy match), for its time, line and ref (LoCoMo dia_id);
    the session's start when nothing matches well."""
    from rapidfuzz import fuzz

    best, score = None, 0.0
    for turn in t.turns:
        if turn.role != "system" and turn.text:
            s = fuzz.partial_ratio(text.lower(), turn.text.lower())
            if s > score:
                best, score = turn, s
    if best is None or score < 60:
        return t.started, 0, None
    return best.at or t.started, best.line, best.ref


def parse_reply(name: str, reply: str, t: Transcript) -> list[Candidate]:
    """Candidates from a reply, or LLMExtractionFailed naming the rule it broke. `[]` is a valid answer."""
    spec = PROMPTS[name]
    items = parse_json_array(reply)
    if not isinstance(items, list):
        raise LLMExtractionFailed(f"reply is a JSON {type(items).__name__}, not an array")
    found: dict[str, Candidate] = {}
    for i, item in enumerate(items[:MAX_ITEMS], start=1):
        if not isinstance(item, dict):
            raise LLMExtractionFailed(f"{name} item {i} is a {type(item).__name__}, not an object")
        fields = {k: _field(name, i, item, k, True) for k in spec.required}
        fields |= {k: _field(name, i, item, k, False) for k in spec.optional}
        content = statement(spec.content(fields), EXTRACTORS[name].kind)  # the gate every extractor's lines pass
        if content is None:
            continue
        at, line, ref = _anchor(t, str(fields[spec.anchor]))
        found.setdefault(content, Candidate(content, at, line, ref))
    return list(found.values())


class LLMSessionExtractor:
    """The five prompts over one AnthropicDistiller (`LLMResource.get_distiller`): calls share the run's rate
    limiter, retry policy, cost cap and usage ledger with every other step. Always the Messages API, even in
    the resource's batch mode: a daily partition has a handful of sessions and should not wait for a batch."""

    def __init__(self, distiller: Any) -> None:
        self.distiller = distiller
        self.name = f"anthropic:{distiller.model}"
        self.calls = 0

    @staticmethod
    def stage(name: str) -> str:
        return f"journal_{name}"

    def _ask(self, stage: str, key: str, user: str) -> str:
        from memory_pipeline.llm.anthropic_distiller import AskFailed

        try:
            text = str(self.distiller.ask(stage, key, SYSTEM_PROMPT, user, MAX_TOKENS))
        except AskFailed as exc:  # the session falls back
            self.calls += exc.attempted
            raise LLMExtractionFailed(str(exc)) from None
        self.calls += 1
        return text

    def find(self, name: str, t: Transcript) -> list[Candidate]:
        reply = self._ask(self.stage(name), t.session_id, user_prompt(name, t))
        return parse_reply(name, reply, t)
