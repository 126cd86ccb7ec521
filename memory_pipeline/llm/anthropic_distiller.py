"""Distillation and atom extraction through the official Anthropic SDK (seed 000 §4.2, §4.5)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from memory_pipeline.abstraction.distill import (
    ATOM_SYSTEM_PROMPT,
    SYSTEM_PROMPT,
    Distillation,
    DistillationRejected,
    Member,
    build_user_message,
    parse_json_object,
)
from memory_pipeline.tokens import estimate_tokens


class AnthropicDistiller:
    """One Messages call per cluster, the system prompt marked for prompt caching. (SDK 2.x's
    `messages.create` has no `temperature` parameter, so none is sent.)"""

    name = "anthropic"

    def __init__(self, client: Any, model: str, max_tokens: int = 1024) -> None:
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        self.name = f"anthropic:{model}"

    def _call(self, system: str, user: str) -> tuple[str, dict[str, int], float]:
        started = time.perf_counter()
        response = self.client.messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            system=[{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
            messages=[{"role": "user", "content": user}],
        )
        latency = (time.perf_counter() - started) * 1000
        text = "".join(getattr(block, "text", "") for block in response.content)
        u = response.usage
        usage = {
            "input_tokens": int(u.input_tokens or 0),
            "output_tokens": int(u.output_tokens or 0),
            "cache_read_input_tokens": int(getattr(u, "cache_read_input_tokens", 0) or 0),
            "cache_creation_input_tokens": int(getattr(u, "cache_creation_input_tokens", 0) or 0),
        }
        return text, usage, latency

    def distill(self, members: Sequence[Member], category: str, date_range: tuple[str, str]) -> Distillation:
        text, usage, latency = self._call(SYSTEM_PROMPT, build_user_message(members, category))
        obj = parse_json_object(text)
        abstraction = obj.get("abstraction")
        if not isinstance(abstraction, str):
            raise DistillationRejected("invalid JSON: 'abstraction' missing or not a string")
        source_tokens = sum(estimate_tokens(m.content) for m in members)
        return Distillation(
            abstraction=abstraction.strip(),
            compression_ratio=round(source_tokens / max(1, estimate_tokens(abstraction)), 3),
            is_causal=bool(obj.get("is_causal", False)),
            input_tokens=usage["input_tokens"],
            output_tokens=usage["output_tokens"],
            llm_latency_ms=round(latency, 1),
            distiller=self.name,
            usage=usage,
        )

    def extract_atom(self, text: str) -> dict[str, str] | None:
        raw, _, _ = self._call(ATOM_SYSTEM_PROMPT, text)
        obj = parse_json_object(raw)
        if obj.get("not_causal"):
            return None
        fields = {k: str(obj.get(k, "")).strip() for k in ("subject", "action", "outcome", "consequences")}
        if not (fields["subject"] and fields["action"] and fields["outcome"]):
            raise DistillationRejected("invalid JSON: atom lacks subject/action/outcome")
        return fields
