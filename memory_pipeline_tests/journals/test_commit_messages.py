"""Commit messages per seed 001 §3.2: a deterministic template, or the `llm` resource's summary line."""

import json

import httpx2 as httpx
import pytest

from memory_pipeline.journals.commit_messages import (
    KnowledgeChange,
    clean_summary,
    commit_types,
    compose,
    llm_ask,
    template,
)
from memory_pipeline.resources import LLMResource


def test_the_seed_types_and_a_deterministic_template_for_each() -> None:
    assert list(commit_types()) == ["conversation", "memory", "identity", "maintenance", "explore", "extract"]
    for kind in commit_types():
        change = KnowledgeChange(kind, "two journals rebuilt", files=("knowledge/journal/2026-09-15.md",),
                                 sessions=("s1", "s2"), detail="Why: a new extractor.")  # fmt: skip
        message = template(change)
        assert message == (
            f"{kind}: two journals rebuilt\n\nWhy: a new extractor.\n\nFiles:\n- knowledge/journal/2026-09-15.md"
            "\n\nSessions: s1, s2\n"
        )
        assert compose(change) == compose(change) and compose(change).written_by == "template"
    assert template(KnowledgeChange("extract", "journal 2026-11-17")) == "extract: journal 2026-11-17\n"


def test_the_template_lists_at_most_twenty_files_and_puts_trailers_last() -> None:
    files = tuple(f"knowledge/journal/2026-09-{d:02d}.md" for d in range(1, 26))
    message = template(KnowledgeChange("maintenance", "archive", files=files, trailers=(("Range", "a..b"),)))
    assert message.count("\n- knowledge/") == 20 and "- … and 5 more" in message
    assert message.endswith("\n\nRange: a..b\n")


@pytest.mark.parametrize("bad", [{"type": "chore", "summary": "x"}, {"type": "memory", "summary": " "},
                                 {"type": "memory", "summary": "a\nb"}])  # fmt: skip
def test_a_bad_type_or_summary_is_refused(bad: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        KnowledgeChange(**bad)


def _messages_api(replies: list[object], calls: list[dict]) -> httpx.MockTransport:
    """Answers like the Messages API: each request gets the next reply (a text, or an HTTP status to fail with)."""

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        calls.append(body)
        reply = replies.pop(0)
        if isinstance(reply, int):
            return httpx.Response(reply, json={"type": "error", "error": {"type": "api_error", "message": "boom"}})
        return httpx.Response(200, json={
            "id": f"msg_{len(calls)}", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": reply}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 80, "output_tokens": 9},
        })  # fmt: skip

    return httpx.MockTransport(handler)


CHANGE = KnowledgeChange("extract", "decisions@1 over 2026-09-15..2026-09-16", files=("knowledge/journal/x.md",),
                         trailers=(("Extractors", "decisions@1"),), diff_stat=" x.md | 3 +-")  # fmt: skip


def test_with_a_key_the_llm_resource_writes_the_summary_through_the_sdk() -> None:
    calls: list[dict] = []
    llm = LLMResource(api_key="sk-ant-test", mode="anthropic")
    ask = llm_ask(llm, http_client=httpx.Client(transport=_messages_api(['"extract: Decisions-only journals"'],
                                                                        calls)))  # fmt: skip
    assert ask is not None
    composed = compose(CHANGE, ask)
    assert composed.written_by == "llm"
    assert composed.message == (
        "extract: Decisions-only journals\n\nFiles:\n- knowledge/journal/x.md\n\nExtractors: decisions@1\n"
    )
    [call] = calls
    assert call["model"] == llm.model and call["max_tokens"] == 60 and call["temperature"] == 0
    prompt = call["messages"][0]["content"]
    assert "Type: extract (algorithmic extraction/re-extraction)" in prompt and "x.md | 3 +-" in prompt


def test_a_transport_error_or_an_empty_reply_falls_back_to_the_template() -> None:
    calls: list[dict] = []
    llm = LLMResource(api_key="sk-ant-test", mode="anthropic")
    ask = llm_ask(llm, http_client=httpx.Client(transport=_messages_api([500, "  \n"], calls)))
    assert ask is not None
    failed = compose(CHANGE, ask)
    assert failed.message == template(CHANGE) and failed.written_by.startswith("template (llm failed: ")
    empty = compose(CHANGE, ask)
    assert empty.message == template(CHANGE) and empty.written_by == "template (llm reply empty)"
    assert len(calls) == 2


def test_offline_there_is_no_model_and_replies_are_cleaned() -> None:
    assert llm_ask(LLMResource(mode="offline")) is None
    assert llm_ask(LLMResource()) is None  # auto without a key
    assert clean_summary("`memory: Redis is the broker`\nmore", "memory") == "Redis is the broker"
    assert clean_summary("x" * 100, "memory") == "x" * 71 + "…"
    assert clean_summary("\n\n", "memory") is None
