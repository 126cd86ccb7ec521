"""The Claude path of the monthly distillation's review of project and people files: the prompt in
monthly_prompts.json (seed 001 §8.5's pruning prompt applied to one file; the seed names `_review_projects` and
`_review_people` without writing a prompt) through the shared `llm` resource's AnthropicDistiller — its rate
limiter, retries, cost cap and usage ledger, as `llm_extractors.LLMSessionExtractor` uses it.

The model only proposes. Its answer is the file's new body; it is used only if it is not empty, not cut at
max_tokens, keeps the file's headings in the same order, is not longer than the file, and states no value the file
does not (the night's verifier, `verification.faithfulness`). Anything else — an API
error, the cost cap, a file longer than `max_file_chars` — raises `ReviewFailed` and that file gets the offline
merge, reason in the report. Lines the answer drops or rewords go to the archive like the offline merge's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from memory_pipeline.journals.monthly import ReviewFailed
from memory_pipeline.verification import faithfulness

PROMPTS: dict[str, Any] = json.loads(Path(__file__).with_name("monthly_prompts.json").read_text(encoding="utf-8"))
SYSTEM_PROMPT: str = PROMPTS["system"]
MAX_TOKENS: int = PROMPTS["max_tokens"]
MAX_FILE_CHARS: int = PROMPTS["max_file_chars"]
STAGE = "monthly_review"


def review_prompt(path: str, kind: str, body: str) -> str:
    content = body.strip("\n")
    return PROMPTS["review"].format(path=path, kind=PROMPTS["kinds"].get(kind, kind), lines=len(content.split("\n")),
                                    content=content)  # fmt: skip


def headings(text: str) -> list[str]:
    return [ln.strip() for ln in text.split("\n") if ln.startswith("#")]


def accept(body: str, reply: str) -> str:
    """The reply as the file's new body, or ReviewFailed naming the check it broke."""
    text = re.sub(r"^```(?:markdown|md)?\n|\n?```\s*$", "", reply.strip()).strip("\n")
    if not text.strip():
        raise ReviewFailed("empty reply")
    if headings(text) != headings(body):
        raise ReviewFailed(f"headings changed: {headings(body)} → {headings(text)}")
    old = body.strip("\n")
    if len(text.split("\n")) > len(old.split("\n")):
        raise ReviewFailed(f"reply has {len(text.split(chr(10)))} lines, the file {len(old.split(chr(10)))}")
    lines = [ln for ln in old.split("\n") if ln.strip() and not ln.startswith("#")]
    for line in text.split("\n"):  # the night's verifier, line by line: no value the file did not state
        unfaithful = faithfulness.check(lines, line) if line.strip() and not line.startswith("#") else []
        if unfaithful:
            raise ReviewFailed(f"not faithful to the file: {unfaithful[0]}")
    lead = body[: len(body) - len(body.lstrip("\n"))]
    return lead + text + "\n" if body.endswith("\n") else lead + text


class ClaudeReviewer:
    """One AnthropicDistiller (`LLMResource.get_distiller`): calls share the run's rate limiter, retry policy,
    cost cap and usage ledger. Always the Messages API."""

    def __init__(self, distiller: Any) -> None:
        self.distiller = distiller
        self.name = f"anthropic:{distiller.model}"
        self.calls = 0

    def review(self, path: str, kind: str, body: str) -> str:
        from memory_pipeline.llm.anthropic_distiller import AskFailed

        if len(body) > MAX_FILE_CHARS:
            raise ReviewFailed(f"{len(body)} characters, more than the review's {MAX_FILE_CHARS}")
        try:
            text = str(self.distiller.ask(STAGE, path, SYSTEM_PROMPT, review_prompt(path, kind, body), MAX_TOKENS))
        except AskFailed as exc:  # the file is merged offline
            self.calls += exc.attempted
            raise ReviewFailed(str(exc)) from None
        self.calls += 1
        return accept(body, text)
