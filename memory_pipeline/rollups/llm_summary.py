"""LLM summarisation of Cores and Spheres through the shared `llm` resource's client (seed 002 method 1).

The model writes only the narrative (summary, events' names and emotions, themes, arc; for a Sphere the
beliefs, patterns and phase). Counts, averages, salience and milestones stay measured by `compress`. A failed
call or an unusable reply keeps the offline document and says why in `meta.llm_error` — a Core is never lost
because the API had a bad night.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Sequence
from typing import Any

from memory_pipeline.distillation.distill import DistillationRejected, parse_json_object
from memory_pipeline.llm.batch import message_text
from memory_pipeline.llm.ledger import CallRecord, Ledger
from memory_pipeline.llm.pricing import PriceTable, Usage
from memory_pipeline.llm.retry import LLMCallFailed, RetryPolicy
from memory_pipeline.llm.secrets import redact
from memory_pipeline.rollups.repository import SessionRow
from memory_pipeline.verification import faithfulness

CORE_SYSTEM_PROMPT = """You compress eight conversation sessions of an AI agent's episodic memory into one Core.
Write what happened across them, not a list of sessions. Use only facts present in the sessions.
Reply with one JSON object and nothing else:
{"summary": "<= 120 words",
 "key_events": [{"session_id": "<id from the input>", "event": "<snake_case, <= 4 words>", "emotion": "<one word>"}],
 "recurring_themes": ["<one or two words>", "... at most 6"],
 "emotional_arc": {"start_state": "<one word>", "peak_emotion": "<one word>", "end_state": "<one word>"}}"""

SPHERE_SYSTEM_PROMPT = """You abstract eight Core memories (each of eight sessions) of an AI agent into one Sphere:
long-term knowledge: beliefs, behavioural patterns and how the relationship evolved. Use only what the Cores say.
Reply with one JSON object and nothing else:
{"summary": "<= 120 words",
 "core_beliefs": ["<a principle drawn from the experiences>", "... at most 5"],
 "behavioral_patterns": [{"pattern": "<snake_case>", "frequency": "high|medium|low", "context": "<when it shows>"}],
 "relationship_phase": "<one word, e.g. forming, deepening, steady, cooling>"}"""

SESSION_CHARS = 1500  # per session in the prompt: 8 × 1,500 chars ≈ 3k tokens in


class LLMSummariser:
    """One Messages call per Core or Sphere with our retries and the run's usage ledger."""

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        retry: RetryPolicy | None = None,
        ledger: Ledger | None = None,
        prices: PriceTable | None = None,
        secrets: Sequence[str | None] = (),
    ) -> None:
        self.client, self.model, self.max_tokens, self.temperature = client, model, max_tokens, temperature
        self.secrets = tuple(s for s in secrets if s)
        self.retry = retry or RetryPolicy()
        self.retry.secrets = self.secrets
        self.ledger = ledger or Ledger("adhoc")
        self.prices = prices or PriceTable()
        self.name = f"anthropic:{model}"

    def _ask(self, stage: str, key: str, system: str, user: str) -> dict[str, Any]:
        params = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": [{"type": "text", "text": system}],
            "messages": [{"role": "user", "content": user}],
        }
        started = time.perf_counter()
        try:
            response, attempts = self.retry.call(
                lambda: self.client.messages.create(**params, extra_body={"temperature": self.temperature})
            )
        except LLMCallFailed as exc:
            self.ledger.record(
                CallRecord(
                    self.ledger.run_id, stage, key, self.model, "messages", "error", exc.attempts, error=str(exc)
                )
            )
            raise
        usage = Usage.from_api(response.usage)
        cost = self.prices.cost(usage)
        self.ledger.record(
            CallRecord(
                self.ledger.run_id,
                stage,
                key,
                self.model,
                "messages",
                "ok",
                attempts,
                usage=usage,
                cost_usd=cost,
                latency_ms=round((time.perf_counter() - started) * 1000, 1),
            )
        )
        if getattr(response, "stop_reason", None) == "max_tokens":
            raise DistillationRejected(f"reply cut at max_tokens={self.max_tokens}")
        return parse_json_object(message_text(response))

    def _fallback(self, doc: dict[str, Any], exc: BaseException) -> dict[str, Any]:
        out = copy.deepcopy(doc)
        out["meta"]["llm_error"] = redact(f"{type(exc).__name__}: {exc}", self.secrets)[:300]
        return out

    def core(self, doc: dict[str, Any], rows: Sequence[SessionRow]) -> dict[str, Any]:
        user = "\n\n".join(
            f"## session_id={r.session_id} started={r.started_at:%Y-%m-%d %H:%M} title={r.title}\n"
            + r.text[:SESSION_CHARS]
            for r in rows
        )
        try:
            reply = self._ask("rollup_core", doc["core_id"], CORE_SYSTEM_PROMPT, user)
            out = self._merge_core(doc, reply)
            _faithful(out["compressed_narrative"]["summary"], [r.text for r in rows])
            return out
        except (LLMCallFailed, DistillationRejected, KeyError, TypeError, ValueError) as exc:
            return self._fallback(doc, exc)

    def _merge_core(self, doc: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(doc)
        narrative = out["compressed_narrative"]
        if not isinstance(reply.get("summary"), str) or not reply["summary"].strip():
            raise DistillationRejected("invalid JSON: 'summary' missing or empty")
        narrative["summary"] = reply["summary"].strip()
        by_session = {
            e.get("session_id"): e for e in reply.get("key_events") or [] if isinstance(e, dict) and e.get("session_id")
        }
        for event in narrative["key_events"]:  # ri stays measured; the model names the event and its emotion
            named = by_session.get(event["session_id"])
            if named:
                event["event"] = str(named.get("event") or event["event"])
                event["emotion"] = str(named.get("emotion") or event["emotion"]).lower()
        themes = [str(t) for t in reply.get("recurring_themes") or [] if str(t).strip()]
        if themes:
            narrative["recurring_themes"] = themes[:6]
        arc = reply.get("emotional_arc")
        if isinstance(arc, dict) and all(isinstance(arc.get(k), str) for k in narrative["emotional_arc"]):
            narrative["emotional_arc"] = {k: arc[k].lower() for k in narrative["emotional_arc"]}
        out["meta"]["compression_method"] = (
            f"llm_summarization ({self.name})+statistical_aggregation+selective_retention"
        )
        out["meta"]["summariser"] = self.name
        return out

    def sphere(self, doc: dict[str, Any], cores: Sequence[dict[str, Any]]) -> dict[str, Any]:
        user = "\n\n".join(
            f"## {c['core_id']} ({c['timestamp_start']} → {c['timestamp_end']})\n"
            + json.dumps(
                {
                    "summary": c["compressed_narrative"]["summary"][:SESSION_CHARS],
                    "themes": c["compressed_narrative"]["recurring_themes"],
                    "arc": c["compressed_narrative"]["emotional_arc"],
                    "anchors": [a["phrase"] for a in c["salience_anchors"]],
                },
                ensure_ascii=False,
            )
            for c in cores
        )
        try:
            reply = self._ask("rollup_sphere", doc["sphere_id"], SPHERE_SYSTEM_PROMPT, user)
            out = copy.deepcopy(doc)
            knowledge = out["abstracted_knowledge"]
            if not isinstance(reply.get("summary"), str) or not reply["summary"].strip():
                raise DistillationRejected("invalid JSON: 'summary' missing or empty")
            knowledge["summary"] = reply["summary"].strip()
            _faithful(knowledge["summary"], [c["compressed_narrative"]["summary"] for c in cores])
            beliefs = [str(b) for b in reply.get("core_beliefs") or [] if str(b).strip()]
            if beliefs:
                knowledge["core_beliefs"] = beliefs[:5]
            patterns = [p for p in reply.get("behavioral_patterns") or [] if isinstance(p, dict)]
            if patterns:
                knowledge["behavioral_patterns"] = patterns
            if isinstance(reply.get("relationship_phase"), str) and reply["relationship_phase"].strip():
                knowledge["relationship_evolution"]["phase"] = reply["relationship_phase"].strip().lower()
            out["meta"]["compression_method"] = f"multi_core_synthesis: llm_summarization ({self.name})"
            out["meta"]["summariser"] = self.name
            return out
        except (LLMCallFailed, DistillationRejected, KeyError, TypeError, ValueError) as exc:
            return self._fallback(doc, exc)


def _faithful(summary: str, sources: Sequence[str]) -> None:
    """The night's verifier on what the model wrote: a value, name or range no source states together refuses the
    reply, and the offline summary (sentences picked from the sources, never written) stays. Coverage is not asked
    of a 120-word narrative of many sessions; the statements stay in the sessions and the Core's anchors."""
    reason = faithfulness.rejection_of(faithfulness.check(sources, summary))
    if reason:
        raise DistillationRejected(reason)

