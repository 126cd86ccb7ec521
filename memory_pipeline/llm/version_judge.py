"""The Versioner's judgement through Claude: which memories of a candidate group state another value of the same
fact, and which holds now — the question `statements.values` answers offline from masked texts, asked of the model
with the prompt in version_prompts.json, through the shared `llm` resource's AnthropicDistiller (its rate
limiter, retries, cost cap and usage ledger).

The model only proposes, and its answer is validated as a distillation's is. It must be the JSON object asked
for; every label one given, no memory in two facts, two or more versions per fact; `current` one of them and
the one stated last (the dates were given; a tie cannot be ordered); each version's values differing from the
next's. Anything else raises `JudgementRejected` and the group keeps the offline rule's verdict.

Look-alikes (`lookalike`): a pair the offline rule reads as two facts is never superseded on the model's word
alone. A qualifier swapped between them ("risk per trade" / "risk per day", "staging host" / "production
host", "Leeds pickup" / "York pickup") blocks it whatever the model says; a qualifier only one of them has
("Daily standup is at 09:30" / "Standup moved to 10:15") blocks it unless the newer memory says in its own words
that a value changed ("moved to", "now", "instead", "no longer", "from … to …"). No Dagster here."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_pipeline.distillation.distill import DistillationRejected, parse_json_object
from memory_pipeline.statements.values import fact_key, stated_values, statement, versions_of

PROMPTS: dict[str, Any] = json.loads(Path(__file__).with_name("version_prompts.json").read_text(encoding="utf-8"))
SYSTEM_PROMPT: str = PROMPTS["system"]
MAX_TOKENS: int = PROMPTS["max_tokens"]
STAGE = "versions"
# The newer memory says itself that a value changed: what lets the model's word join facts a qualifier sets apart.
CHANGE_WORDS = re.compile(
    r"\b(?:now|moved to|changed to|updated to|set to|raised to|lowered to|increased to|reduced to|cut to|"
    r"tightened to|loosened to|switched to|migrated to|no longer|instead|replaces|replaced|"
    r"from\s+\S+(?:\s+\S+)?\s+to)\b",
    re.I,
)


class JudgementRejected(ValueError):
    """The model's answer broke a validation rule; the message is the reason the group fell back."""


@dataclass(frozen=True)
class Stated:
    """One memory of a candidate group, as the model sees it."""

    id: str
    text: str
    stated_at: datetime


def label(i: int) -> str:
    return f"m{i + 1}"


def user_message(members: Sequence[Stated]) -> str:
    lines = [PROMPTS["line"].format(label=label(i), date=f"{m.stated_at:%Y-%m-%d %H:%M}", text=" ".join(m.text.split()))
             for i, m in enumerate(members)]  # fmt: skip
    return PROMPTS["user"].format(count=len(members), memories="\n".join(lines))


def _values(text: str) -> frozenset[str]:
    read = statement(text)
    return read.values if read is not None else frozenset(v.lower() for v in stated_values(text))


def parse_judgement(reply: str, members: Sequence[Stated]) -> list[tuple[str, list[Stated]]]:
    """The facts the model found, each as (its name, its versions oldest first: the last one current), or
    JudgementRejected naming the rule the answer broke."""
    try:
        obj = parse_json_object(reply)
    except DistillationRejected as exc:
        raise JudgementRejected(str(exc)) from None
    facts = obj.get("facts")
    if not isinstance(facts, list) or not all(isinstance(f, dict) for f in facts):
        raise JudgementRejected("invalid JSON: 'facts' is not a list of objects")
    by_label = {label(i): m for i, m in enumerate(members)}
    seen: set[str] = set()
    out: list[tuple[str, list[Stated]]] = []
    for n, fact in enumerate(facts, start=1):
        versions, current = fact.get("versions"), fact.get("current")
        if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions) or len(versions) < 2:
            raise JudgementRejected(f"invalid JSON: fact {n} has no list of two or more version labels")
        for v in versions:
            if v not in by_label:
                raise JudgementRejected(f"fact {n} names {v!r}, not a memory it was given")
            if v in seen:
                raise JudgementRejected(f"{v} is in more than one fact")
            seen.add(v)
        if not isinstance(current, str) or current not in versions:
            raise JudgementRejected(f"fact {n}: current {current!r} is not one of its versions")
        chain = sorted((by_label[v] for v in versions), key=lambda m: m.stated_at)
        for older, newer in zip(chain, chain[1:], strict=False):
            if older.stated_at == newer.stated_at:
                raise JudgementRejected(f"fact {n}: two versions stated at the same moment cannot be ordered")
            if not _values(older.text) or _values(older.text) == _values(newer.text):
                raise JudgementRejected(f"fact {n}: a version pair states the same value (or none)")
        if by_label[current] is not chain[-1]:
            raise JudgementRejected(f"fact {n}: current {current} is not the version stated last")
        name = " ".join(str(fact.get("fact") or "").split())[:80] or " ".join(chain[-1].text.split())[:80]
        out.append((name, chain))
    return out


def _words(key: tuple[str, ...]) -> set[str]:
    return {w for w in key if not w.startswith("<")}


def lookalike(older: str, newer: str) -> str | None:
    """Why the offline rule holds two statements for two facts that the model's word alone may not join; None
    when it has nothing against them (it agrees, or cannot read one of them as a fact)."""
    a, b = fact_key(older), fact_key(newer)
    if a is None or b is None or versions_of(a, b):
        return None
    if a.key == b.key:
        return "look-alikes: the same words with another name and another value"
    only_old, only_new = _words(a.key) - _words(b.key), _words(b.key) - _words(a.key)
    if only_old and only_new:
        return f"look-alikes: {' '.join(sorted(only_old))!r} / {' '.join(sorted(only_new))!r}"
    if (only_old or only_new) and not CHANGE_WORDS.search(newer):
        extra = " ".join(sorted(only_old or only_new))
        return f"look-alikes: {extra!r} on one side only, and the newer does not say a value changed"
    return None


class ClaudeVersionJudge:
    """Asks the model about one group through one AnthropicDistiller (`LLMResource.get_distiller`), so calls
    share the run's rate limiter, retry policy, cost cap and usage ledger. Always the Messages API."""

    def __init__(self, distiller: Any) -> None:
        self.distiller = distiller
        self.name = f"anthropic:{distiller.model}"

    def ask(self, key: str, members: Sequence[Stated]) -> str:
        """The model's reply; AskFailed (from the distiller) when there is none."""
        return str(self.distiller.ask(STAGE, key, SYSTEM_PROMPT, user_message(members), MAX_TOKENS))
