"""Offline token estimate.

No offline Claude tokenizer exists (tiktoken downloads its BPE files; the Anthropic SDK's count_tokens is
an API call), so we use Anthropic's documented rule of thumb for English text: about 3.5 characters per
token. Every ratio and report number in the project uses this one function, so they agree with each other;
with an API key, the LLM path records the provider's exact usage next to it.
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 3.5


def estimate_tokens(text: str) -> int:
    """Estimated Claude tokens in `text` (0 for empty text)."""
    stripped = text.strip()
    if not stripped:
        return 0
    return max(1, math.ceil(len(stripped) / CHARS_PER_TOKEN))
