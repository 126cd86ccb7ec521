"""The LLM resource: Claude through the official SDK when a key is set, else the offline distiller."""

from collections.abc import Callable
from typing import Any

import dagster as dg
from pydantic import Field

from memory_pipeline.distillation.distill import OfflineDistiller
from memory_pipeline.llm.pricing import PriceTable

DEFAULT_MODEL = "claude-haiku-4-5"
MODES = ("auto", "offline", "anthropic", "batch")


class LLMResource(dg.ConfigurableResource):
    """`mode`: auto (Anthropic if `api_key` is set, else offline), offline, anthropic (Messages API) or batch
    (Message Batches API, half price). The report and the run's tags name what ran. Rate limit and cost cap
    come from the engine settings (COMPRESSION_RATE_LIMIT_PER_MIN, COMPRESSION_MAX_COST_USD)."""

    api_key: str | None = Field(default=None, repr=False, description="ANTHROPIC_API_KEY, via dg.EnvVar")
    mode: str = "auto"
    model: str = DEFAULT_MODEL
    base_url: str | None = Field(default=None, description="API base URL (default: the SDK's, or ANTHROPIC_BASE_URL)")
    max_tokens: int = 1024
    atom_max_tokens: int = 256
    temperature: float = 0.0
    timeout_s: float = 60.0
    # Retries (ours, not the SDK's: see memory_pipeline/llm/retry.py)
    max_retries: int = 4
    retry_base_delay_s: float = 0.5
    retry_max_delay_s: float = 8.0
    max_retry_after_s: float = 60.0
    # Rate limiter: COMPRESSION_RATE_LIMIT_PER_MIN per minute, bursts of `burst` (0 = the per-minute rate)
    burst: int = 0
    min_interval_s: float = 0.1
    # Price table, USD per million tokens (Claude Haiku 4.5 list prices); batch requests pay `batch_price_factor`×
    price_input_per_mtok: float = 1.0
    price_output_per_mtok: float = 5.0
    price_cache_write_per_mtok: float = 1.25
    price_cache_read_per_mtok: float = 0.10
    batch_price_factor: float = 0.5
    # Message Batches
    batch_poll_interval_s: float = 30.0
    batch_max_wait_s: float = 5 * 3600.0  # below the store lease's 6 h TTL; the next run resumes a slower batch
    batch_resume_hours: float = 30.0

    def _check_mode(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"LLMResource.mode: expected auto, offline, anthropic or batch, got {self.mode!r}")
        if self.mode in ("anthropic", "batch") and not self.api_key:
            raise ValueError(f"LLMResource.mode={self.mode} needs ANTHROPIC_API_KEY")

    def uses_anthropic(self) -> bool:
        self._check_mode()
        return self.mode in ("anthropic", "batch") or (self.mode == "auto" and bool(self.api_key))

    def uses_batch(self) -> bool:
        return self.uses_anthropic() and self.mode == "batch"

    def distiller_name(self) -> str:
        if not self.uses_anthropic():
            return OfflineDistiller.name
        return f"anthropic{'-batch' if self.uses_batch() else ''}:{self.model}"

    def run_tags(self) -> dict[str, str]:
        api = "offline" if not self.uses_anthropic() else "batch" if self.uses_batch() else "messages"
        return {"memory_pipeline/distiller": self.distiller_name(), "memory_pipeline/llm_api": api}

    def prices(self) -> PriceTable:
        return PriceTable(
            input_per_mtok=self.price_input_per_mtok,
            output_per_mtok=self.price_output_per_mtok,
            cache_write_per_mtok=self.price_cache_write_per_mtok,
            cache_read_per_mtok=self.price_cache_read_per_mtok,
            batch_factor=self.batch_price_factor,
        )

    def make_client(self, http_client: Any = None) -> Any:
        """The official SDK client with its own retries off: ours take a rate-limit token per attempt."""
        import anthropic

        from memory_pipeline.llm.secrets import guard_sdk_loggers

        guard_sdk_loggers(self.api_key)
        kwargs: dict[str, Any] = {"api_key": self.api_key, "timeout": self.timeout_s, "max_retries": 0}
        if self.base_url:
            kwargs["base_url"] = self.base_url
        if http_client is not None:
            kwargs["http_client"] = http_client
        return anthropic.Anthropic(**kwargs)

    def get_distiller(
        self,
        client: Any = None,
        *,
        reports_dir: Any = None,
        run_id: str = "adhoc",
        rate_limit_per_min: float = 10,
        max_cost_usd: float | None = None,
        min_compression_ratio: float = 1.5,
        max_abstraction_tokens: int = 2000,
        log: Callable[[str], object] | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
        random: Callable[[], float] | None = None,
        ledger: Any = None,
    ) -> Any:
        """The distiller for a run. With `reports_dir`, usage and batch state persist under it (the run's
        ledger); `rate_limit_per_min` and `max_cost_usd` apply to the whole run, across steps."""
        if not self.uses_anthropic():
            # the offline distiller aims inside the validation limits the run will apply
            return OfflineDistiller(max_tokens=max_abstraction_tokens, min_ratio=min_compression_ratio)
        import random as random_module
        import time

        from memory_pipeline.llm.anthropic_distiller import AnthropicDistiller
        from memory_pipeline.llm.ledger import FileLedger, Ledger
        from memory_pipeline.llm.ratelimit import TokenBucket
        from memory_pipeline.llm.retry import RetryPolicy

        sleep = sleep or time.sleep
        clock = clock or time.time
        if ledger is None:
            ledger = FileLedger(reports_dir, run_id) if reports_dir is not None else Ledger(run_id)
        limiter = TokenBucket(
            rate_limit_per_min,
            self.burst or max(1, int(rate_limit_per_min)),
            self.min_interval_s,
            clock=clock,
            sleep=sleep,
        ).replay(ledger.call_times())
        retry = RetryPolicy(
            max_retries=self.max_retries,
            base_delay_s=self.retry_base_delay_s,
            max_delay_s=self.retry_max_delay_s,
            max_retry_after_s=self.max_retry_after_s,
            sleep=sleep,
            random=random or random_module.random,
            clock=clock,
        )
        return AnthropicDistiller(
            client if client is not None else self.make_client(),
            self.model,
            self.max_tokens,
            atom_max_tokens=self.atom_max_tokens,
            temperature=self.temperature,
            min_compression_ratio=min_compression_ratio,
            batch=self.uses_batch(),
            prices=self.prices(),
            ledger=ledger,
            limiter=limiter,
            retry=retry,
            max_cost_usd=max_cost_usd,
            batch_poll_interval_s=self.batch_poll_interval_s,
            batch_max_wait_s=self.batch_max_wait_s,
            batch_resume_window_s=self.batch_resume_hours * 3600.0,
            sleep=sleep,
            clock=clock,
            log=log,
            secrets=(self.api_key,),
        )

    def usage_summary(self, reports_dir: Any, run_id: str) -> Any:
        """The run's recorded LLM usage (every step's calls), from its ledger."""
        from memory_pipeline.llm.ledger import FileLedger

        return FileLedger(reports_dir, run_id).summary()

    def report_fields(self, usage: Any, *, clusters_deferred: int, max_cost_usd: float) -> dict[str, Any]:
        """The report's `llm` section: what ran, the usage breakdown, the price table, the cap."""
        total = usage.total
        return {
            "distiller": self.distiller_name(),
            "api": self.run_tags()["memory_pipeline/llm_api"],
            "model": self.model if self.uses_anthropic() else None,
            "calls": usage.calls,
            "failed_calls": usage.failed_calls,
            "batch_calls": usage.batch_calls,
            "input_tokens": total.input_tokens,
            "cache_read_input_tokens": total.cache_read_input_tokens,
            "cache_creation_input_tokens": total.cache_creation_input_tokens,
            "output_tokens": total.output_tokens,
            "cost_usd": round(usage.cost(self.prices()), 6),
            "prices_per_mtok": {
                "input": self.price_input_per_mtok,
                "output": self.price_output_per_mtok,
                "cache_write": self.price_cache_write_per_mtok,
                "cache_read": self.price_cache_read_per_mtok,
                "batch_factor": self.batch_price_factor,
            },
            "max_cost_usd": max_cost_usd,
            "clusters_deferred": clusters_deferred,
        }

    def cost_usd(self, input_tokens: int, output_tokens: int) -> float:
        """Messages-API cost of plain (uncached) tokens at this price table."""
        from memory_pipeline.llm.pricing import Usage

        return round(self.prices().cost(Usage(input_tokens, output_tokens)), 6)
