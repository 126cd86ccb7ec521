"""The LLM resource: Claude through the official SDK when a key is set, else the offline distiller."""

from typing import Any

import dagster as dg

from memory_pipeline.abstraction.distill import OfflineDistiller

DEFAULT_MODEL = "claude-haiku-4-5"


class LLMResource(dg.ConfigurableResource):
    """`mode`: auto (Anthropic if `api_key` is set), offline, or anthropic. The report names what ran."""

    api_key: str | None = None
    mode: str = "auto"
    model: str = DEFAULT_MODEL
    max_tokens: int = 1024
    timeout_s: float = 60.0
    max_retries: int = 2
    price_input_per_mtok: float = 1.0
    price_output_per_mtok: float = 5.0

    def uses_anthropic(self) -> bool:
        if self.mode not in ("auto", "offline", "anthropic"):
            raise ValueError(f"LLMResource.mode: expected auto, offline or anthropic, got {self.mode!r}")
        if self.mode == "anthropic" and not self.api_key:
            raise ValueError("LLMResource.mode=anthropic needs ANTHROPIC_API_KEY")
        return self.mode == "anthropic" or (self.mode == "auto" and bool(self.api_key))

    def get_distiller(self, client: Any = None) -> Any:
        if not self.uses_anthropic():
            return OfflineDistiller()
        from memory_pipeline.llm.anthropic_distiller import AnthropicDistiller

        if client is None:
            import anthropic

            client = anthropic.Anthropic(api_key=self.api_key, timeout=self.timeout_s, max_retries=self.max_retries)
        return AnthropicDistiller(client, self.model, self.max_tokens)

    def cost_usd(self, input_tokens: int, output_tokens: int) -> float:
        return round(
            input_tokens * self.price_input_per_mtok / 1e6 + output_tokens * self.price_output_per_mtok / 1e6, 6
        )
