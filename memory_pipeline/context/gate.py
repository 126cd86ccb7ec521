"""Tier 3, the gated activation (seed 001 §5): bypass rules, the one-token LLM gate, and its decision log.

Which candidates need the gate is the seed's §5.4 table (`gate_bypass.json`), applied exactly. The gate
itself is a yes/no call through the official SDK (max_tokens 1, temperature 0), cached on (message hash,
topic). Without a key the gate decides from the table and the Tier-2 score alone, and says so in the log.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from memory_pipeline.context.topics import Topic

log = logging.getLogger(__name__)

# Seed 001 §5.3, verbatim.
GATE_PROMPT = """Given this message and topic, should the topic activate?

Message: {message}

Topic: {topic_name}
Description: {topic_description}

Answer with exactly one word: YES or NO."""

Ask = Callable[[str], str]  # prompt → the model's reply text


@cache
def bypass_rows() -> tuple[dict[str, Any], ...]:
    data = json.loads(resources.files("memory_pipeline.context").joinpath("gate_bypass.json").read_text())
    return tuple(data["rows"])


def bypass_rule(priority: str, tier2_score: float) -> str:
    """`activate`, `gate` or `drop` for a gated topic whose Tier 1 matched (seed 001 §5.4)."""
    for row in bypass_rows():
        if row["priority"] != priority:
            continue
        at_least, below = row.get("tier2_at_least"), row.get("tier2_below")
        if (at_least is None or tier2_score >= at_least) and (below is None or tier2_score < below):
            return str(row["decision"])
    raise ValueError(f"no activation-table row for priority {priority!r}")


def message_hash(message: str) -> str:
    return hashlib.sha256(message[:500].encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class GateDecision:
    """One row of the gate log (seed 001 §5.5)."""

    timestamp: str
    message_hash: str
    topic: str
    tier1_matched: bool
    tier2_score: float
    rule: str  # activate | gate | drop | manual | below_threshold
    gate_result: bool | None  # the gate's YES/NO where it was asked (LLM or offline), else None
    decided_by: str  # table | llm | cache | offline
    activated: bool
    reason: str


class Gate:
    """Decides activation per candidate topic; `ask` is the LLM (None: offline)."""

    def __init__(self, ask: Ask | None = None, model: str = "") -> None:
        self.ask = ask
        self.model = model
        self.cache: dict[tuple[str, str], bool] = {}
        self.llm_calls = 0

    def _llm(self, message: str, topic: Topic) -> tuple[bool, str] | None:
        key = (message_hash(message), topic.name)
        if key in self.cache:
            return self.cache[key], "cache"
        assert self.ask is not None
        prompt = GATE_PROMPT.format(
            message=message[:500], topic_name=topic.name, topic_description=topic.description[:200]
        )
        try:
            self.llm_calls += 1
            reply = self.ask(prompt)
        except Exception as exc:  # the gate never breaks a turn: fall back to the offline rule, and say so
            log.warning("gate LLM call failed for topic %s (%s); deciding offline", topic.name, exc)
            return None
        result = reply.strip().upper().startswith("YES")
        self.cache[key] = result
        return result, "llm"

    def decide(self, message: str, topic: Topic, tier1: bool, tier2: float) -> GateDecision:
        now = datetime.now(UTC).isoformat(timespec="seconds")

        def out(rule: str, result: bool | None, by: str, activated: bool, reason: str) -> GateDecision:
            return GateDecision(now, message_hash(message), topic.name, tier1, round(tier2, 4), rule, result, by,
                                activated, reason)

        if topic.activation == "manual":
            return out("manual", None, "table", False, "activation: manual (user only)")
        if not tier1:
            if tier2 < topic.similarity_threshold:
                return out("below_threshold", None, "table", False,
                           f"no Tier-1 match and Tier-2 {tier2:.2f} < {topic.similarity_threshold:.2f}")
            rule = "activate" if topic.activation == "auto" else "gate"
        else:
            rule = "activate" if topic.activation == "auto" else bypass_rule(topic.priority, tier2)
        if rule == "activate":
            why = "activation: auto" if topic.activation == "auto" else f"priority {topic.priority}, Tier-2 {tier2:.2f}"
            return out(rule, None, "table", True, why)
        if rule == "drop":
            return out(rule, None, "table", False, f"priority {topic.priority} with Tier-2 {tier2:.2f} is dropped")
        asked = self._llm(message, topic) if self.ask is not None else None
        if asked is not None:
            result, by = asked
            return out(rule, result, by, result, f"gate ({self.model or 'LLM'}) said {'YES' if result else 'NO'}")
        if tier1:  # offline, a trigger the user wrote is the best evidence there is (precision 1.00 on the
            # labelled set of benchmarks/topic_messages.json, where Tier-2 alone at the threshold had 0.75)
            return out(rule, True, "offline", True, "offline gate (no LLM): a trigger matched")
        passed = tier2 >= topic.similarity_threshold
        return out(rule, passed, "offline", passed,
                   f"offline gate (no LLM): Tier-2 {tier2:.2f} {'≥' if passed else '<'} "
                   f"{topic.similarity_threshold:.2f}")


def anthropic_ask(client: Any, model: str) -> Ask:
    """The gate's call through the official SDK: one output token, temperature 0 (seed 001 §5.2). SDK 2.x's
    `messages.create` has no `temperature` parameter, so it travels in `extra_body` (as the distiller's)."""

    def ask(prompt: str) -> str:
        reply = client.messages.create(
            model=model, max_tokens=1, messages=[{"role": "user", "content": prompt}], extra_body={"temperature": 0}
        )
        return "".join(getattr(block, "text", "") for block in reply.content)

    return ask


def append_log(path: Path, decisions: Iterable[GateDecision]) -> None:
    """Append decisions as JSON lines in one write (a reader skips a torn last line)."""
    lines = "".join(json.dumps(asdict(d), sort_keys=True) + "\n" for d in decisions)
    if not lines:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(lines)


def read_log(path: Path) -> list[GateDecision]:
    """Every well-formed decision in the log; a torn or foreign line is skipped."""
    out: list[GateDecision] = []
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            out.append(GateDecision(**json.loads(line)))
        except (json.JSONDecodeError, TypeError):
            continue
    return out
