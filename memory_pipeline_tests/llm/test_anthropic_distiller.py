"""The real Anthropic SDK client against a local fake transport (no network here)."""

import json

import anthropic
import httpx2 as httpx
import pytest

from memory_pipeline.abstraction.distill import SYSTEM_PROMPT, DistillationRejected, Member
from memory_pipeline.resources import LLMResource


def fake_client(replies: list[str], seen: list[dict]) -> anthropic.Anthropic:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        text = replies[len(seen) - 1]
        return httpx.Response(
            200,
            json={
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 321,
                    "output_tokens": 45,
                    "cache_read_input_tokens": 200,
                    "cache_creation_input_tokens": 0,
                },
            },
        )

    return anthropic.Anthropic(api_key="test-key", http_client=httpx.Client(transport=httpx.MockTransport(handler)))


MEMBERS = [
    Member("m-1", "Whale wallets bought BTC for days before the price rose. " * 3, 1.2),
    Member("m-2", "Large holders accumulated bitcoin; then BTC rallied. " * 3, 0.8),
]


def test_distill_sends_seed_prompt_with_cache_control_and_parses_fenced_json() -> None:
    seen: list[dict] = []
    reply = (
        'Here you go:\n```json\n{"abstraction": "Whale accumulation precedes BTC rallies.", '
        '"compression_ratio": 9.9, "is_causal": true}\n```'
    )
    llm = LLMResource(api_key="test-key", model="claude-haiku-4-5")
    assert llm.uses_anthropic()
    d = llm.get_distiller(client=fake_client([reply], seen)).distill(MEMBERS, "trading", ("2026-10-01", "2026-10-02"))
    body = seen[0]
    assert body["model"] == "claude-haiku-4-5"
    assert body["system"] == [{"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}]
    assert body["messages"][0]["content"].startswith(
        "MEMORIES TO COMPRESS (cluster of 2 related entries, category: trading)"
    )
    assert d.abstraction == "Whale accumulation precedes BTC rallies."
    assert d.is_causal
    assert d.compression_ratio != 9.9  # measured from our token counts, not the model's claim
    assert d.usage == {
        "input_tokens": 321,
        "output_tokens": 45,
        "cache_read_input_tokens": 200,
        "cache_creation_input_tokens": 0,
    }
    assert d.distiller == "anthropic:claude-haiku-4-5"


def test_atom_extraction_and_not_causal() -> None:
    seen: list[dict] = []
    replies = [
        '{"subject": "whale wallet", "action": "accumulates BTC", "outcome": "price rises", '
        '"consequences": "late buyers chase"}',
        '{"not_causal": true}',
        "nonsense",
    ]
    distiller = LLMResource(api_key="k").get_distiller(client=fake_client(replies, seen))
    assert distiller.extract_atom("text")["subject"] == "whale wallet"
    assert distiller.extract_atom("text") is None
    with pytest.raises(DistillationRejected, match="invalid JSON"):
        distiller.extract_atom("text")
    assert "not_causal" in seen[0]["system"][0]["text"]


def test_modes() -> None:
    assert not LLMResource().uses_anthropic()
    assert LLMResource().get_distiller().name == "offline-extractive"
    assert not LLMResource(api_key="k", mode="offline").uses_anthropic()
    with pytest.raises(ValueError, match="needs ANTHROPIC_API_KEY"):
        LLMResource(mode="anthropic").uses_anthropic()
    with pytest.raises(ValueError, match="expected auto, offline or anthropic"):
        LLMResource(mode="cloud").uses_anthropic()
