"""Distillation and atom extraction through the official Anthropic SDK (seed 000 §4.2, §4.5).

Every request carries the seed's system prompt marked for prompt caching and temperature 0. (SDK 2.12's
`messages.create` has no `temperature` parameter, so it travels in `extra_body`; in a batch it is a plain
parameter.) Around each call: the run's cost cap, the run-wide rate limiter, retries with backoff, and one
ledger record with the call's usage and cost. `batch=True` sends the same requests through the Message
Batches API at half the price.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from memory_pipeline.distillation.distill import (
    ATOM_SYSTEM_PROMPT,
    SYSTEM_PROMPT,
    Distillation,
    DistillationRejected,
    Member,
    build_user_message,
    parse_json_object,
)
from memory_pipeline.llm.batch import BatchRunner, custom_id_for, message_text
from memory_pipeline.llm.ledger import CallRecord, Ledger
from memory_pipeline.llm.pricing import PriceTable, Usage, prompt_tokens_bound
from memory_pipeline.llm.ratelimit import TokenBucket
from memory_pipeline.llm.retry import LLMCallFailed, RetryPolicy
from memory_pipeline.llm.secrets import redact
from memory_pipeline.statements.facts import fact_rejection
from memory_pipeline.tokens import estimate_tokens

CACHE_CONTROL = {"type": "ephemeral"}


class CostCapReached(Exception):
    """The next call could cross the run's cost cap; the message is the reason the work is deferred."""


class AskFailed(Exception):
    """A plain prompt (`AnthropicDistiller.ask`) got no usable reply: the cap, the call, or a reply cut short.
    The message says which; callers fall back offline. `attempted`: a request was sent (not the cap)."""

    def __init__(self, message: str, attempted: bool = True) -> None:
        super().__init__(message)
        self.attempted = attempted


@dataclass(frozen=True)
class DistillRequest:
    key: str  # the cluster id
    members: Sequence[Member]
    category: str
    date_range: tuple[str, str]


class CostGuard:
    """Spent (recorded) + reserved (committed but not yet recorded) + the next call's worst case ≤ cap."""

    def __init__(self, cap_usd: float | None, spent_usd: float = 0.0) -> None:
        self.cap_usd = cap_usd
        self.spent_usd = spent_usd
        self.reserved_usd = 0.0

    def fits(self, amount: float) -> bool:
        return self.cap_usd is None or self.spent_usd + self.reserved_usd + amount <= self.cap_usd + 1e-12

    def check(self, amount: float) -> None:
        if not self.fits(amount):
            raise CostCapReached(f"cost cap ${self.cap_usd:g} reached")

    def add(self, cost: float) -> None:
        self.spent_usd += cost

    def reserve(self, amount: float) -> None:
        self.reserved_usd += amount


def message_params(model: str, system: str, user: str, max_tokens: int, temperature: float) -> dict[str, Any]:
    """One Messages request, exactly as sent (directly or inside a batch)."""
    return {
        "model": model,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "system": [{"type": "text", "text": system, "cache_control": dict(CACHE_CONTROL)}],
        "messages": [{"role": "user", "content": user}],
    }


def parse_atom(text: str) -> dict[str, str] | None:
    obj = parse_json_object(text)
    if obj.get("not_causal"):
        return None
    fields = {k: str(obj.get(k, "") or "").strip() for k in ("subject", "action", "outcome", "consequences")}
    if not (fields["subject"] and fields["action"] and fields["outcome"]):
        raise DistillationRejected("invalid JSON: atom lacks subject/action/outcome")
    return fields


class AnthropicDistiller:
    def __init__(
        self,
        client: Any,
        model: str,
        max_tokens: int = 1024,
        *,
        atom_max_tokens: int = 256,
        temperature: float = 0.0,
        min_compression_ratio: float = 1.5,
        batch: bool = False,
        prices: PriceTable | None = None,
        ledger: Ledger | None = None,
        limiter: TokenBucket | None = None,
        retry: RetryPolicy | None = None,
        max_cost_usd: float | None = None,
        batch_poll_interval_s: float = 30.0,
        batch_max_wait_s: float = 5 * 3600.0,
        batch_resume_window_s: float = 30 * 3600.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        log: Callable[[str], object] | None = None,
        secrets: Sequence[str | None] = (),
    ) -> None:
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        self.atom_max_tokens = atom_max_tokens
        self.min_compression_ratio = min_compression_ratio
        self.temperature = temperature
        self.batch = batch
        self.clock = clock
        self.name = f"anthropic{'-batch' if batch else ''}:{model}"
        self.prices = prices or PriceTable()
        self.ledger = ledger or Ledger("adhoc")
        self.secrets = tuple(s for s in secrets if s)
        self.limiter = limiter or TokenBucket(10, 10, 0.1, clock=clock, sleep=sleep)
        self.retry = retry or RetryPolicy(sleep=sleep, clock=clock)
        self.retry.secrets = self.secrets
        self.guard = CostGuard(max_cost_usd, self.ledger.spent_usd())
        self._calls_before = {c.id for c in self.ledger.calls()}
        self._log = log or (lambda _msg: None)
        self.runner = BatchRunner(
            client,
            self.ledger,
            self.retry,
            self.prices,
            model,
            poll_interval_s=batch_poll_interval_s,
            max_wait_s=batch_max_wait_s,
            resume_window_s=batch_resume_window_s,
            sleep=sleep,
            clock=clock,
            log=self.log,
            secrets=self.secrets,
        )

    def step_stats(self) -> dict[str, Any]:
        """This distiller's calls (not the earlier steps'), for the step's metadata."""
        from memory_pipeline.llm.ledger import summarise

        summary = summarise([c for c in self.ledger.calls() if c.id not in self._calls_before])
        return {
            "llm_calls": summary.calls,
            "llm_failed_calls": summary.failed_calls,
            "llm_cost_usd": round(summary.cost(self.prices), 6),
            "rate_limit_wait_s": round(self.limiter.waited_s, 3),
            "retry_wait_s": round(sum(self.retry.waits), 3),
            "batches_submitted": ", ".join(self.runner.submitted) or "none",
            "batches_resumed": ", ".join(self.runner.resumed) or "none",
        }

    def log(self, message: str) -> None:
        self._log(redact(message, self.secrets))

    # ------------------------------------------------------------------ cost bounds

    def distill_max_tokens(self, members: Sequence[Member]) -> int:
        """`max_tokens` for one distillation: an abstraction longer than sources / COMPRESSION_MAX_RATIO is
        rejected by the floor anyway, so the reply is capped there (with a margin for our token estimate
        and room for the JSON around it). It bounds the cost the cap reserves, and what a runaway costs."""
        source = sum(estimate_tokens(m.content) for m in members)
        return max(64, min(self.max_tokens, math.ceil(1.25 * source / self.min_compression_ratio) + 64))

    def _distill_bound(self, user: str, max_tokens: int | None = None) -> float:
        """The distillation's worst case plus the atom extraction it may lead to (whose input is at most
        the distillation's output): reserving both keeps the atoms step inside the cap too."""
        out = max_tokens or self.max_tokens
        distill = self.prices.worst_case(prompt_tokens_bound(SYSTEM_PROMPT, user), out, self.batch)
        return distill + self._atom_bound_for_tokens(out)

    def _atom_bound_for_tokens(self, text_tokens: float) -> float:
        tokens = prompt_tokens_bound(ATOM_SYSTEM_PROMPT) + 1.25 * text_tokens
        return self.prices.worst_case(tokens, self.atom_max_tokens, self.batch)

    def _atom_bound(self, text: str) -> float:
        return self._atom_bound_for_tokens(estimate_tokens(text))

    # ------------------------------------------------------------------ one Messages call

    def ask(self, stage: str, key: str, system: str, user: str, max_tokens: int) -> str:
        """One plain prompt under the run's cost cap, rate limit, retries and usage ledger (the journals'
        extractors, compaction, the monthly review); AskFailed says why there is no usable reply."""
        bound = self.prices.worst_case(prompt_tokens_bound(system, user), max_tokens)
        try:
            self.guard.check(bound)
        except CostCapReached as exc:
            raise AskFailed(f"{exc} (spent ${self.guard.spent_usd:.4f}, next call up to ${bound:.4f})",
                            attempted=False) from None
        try:
            text, _usage, _latency, stop = self._call(stage, key, system, user, max_tokens)
        except Exception as exc:  # noqa: BLE001 - LLMCallFailed and SDK errors: the caller falls back
            raise AskFailed(f"LLM call failed: {exc}") from None
        if stop == "max_tokens":
            raise AskFailed(f"reply cut at max_tokens={max_tokens}")
        return text

    def _call(
        self, stage: str, key: str, system: str, user: str, max_tokens: int
    ) -> tuple[str, Usage, float, str | None]:
        params = message_params(self.model, system, user, max_tokens, self.temperature)
        temperature = params.pop("temperature")
        started = time.perf_counter()

        def on_retry(attempt: int, delay: float, what: str) -> None:
            self.log(f"LLM: {stage} {key}: attempt {attempt} failed ({what}); retrying in {delay:.2f} s")

        try:
            response, attempts = self.retry.call(
                lambda: self.client.messages.create(**params, extra_body={"temperature": temperature}),
                before_attempt=self.limiter.acquire,
                on_retry=on_retry,
            )
        except LLMCallFailed as exc:
            self.ledger.record(
                CallRecord(
                    run_id=self.ledger.run_id,
                    stage=stage,
                    key=key,
                    model=self.model,
                    api="messages",
                    status="error",
                    attempts=exc.attempts,
                    latency_ms=round((time.perf_counter() - started) * 1000, 1),
                    error=str(exc),
                    epoch=self.clock(),
                )
            )
            raise
        latency = (time.perf_counter() - started) * 1000
        usage = Usage.from_api(response.usage)
        cost = self.prices.cost(usage)
        self.guard.add(cost)
        self.ledger.record(
            CallRecord(
                run_id=self.ledger.run_id,
                stage=stage,
                key=key,
                model=self.model,
                api="messages",
                status="ok",
                attempts=attempts,
                usage=usage,
                cost_usd=cost,
                latency_ms=round(latency, 1),
                request_id=getattr(response, "_request_id", None),
                epoch=self.clock(),
            )
        )
        return message_text(response), usage, latency, getattr(response, "stop_reason", None)

    # ------------------------------------------------------------------ parsing

    def _distillation(
        self, text: str, usage: Usage, latency: float, members: Sequence[Member], stop_reason: str | None = None
    ) -> Distillation:
        if stop_reason == "max_tokens":
            limit = self.distill_max_tokens(members)
            raise DistillationRejected(f"reply cut at max_tokens={limit}: longer than the compression floor allows")
        obj = parse_json_object(text)
        abstraction = obj.get("abstraction")
        if not isinstance(abstraction, str):
            raise DistillationRejected("invalid JSON: 'abstraction' missing or not a string")
        reason = fact_rejection([m.content for m in members], abstraction)
        if reason:  # the same check the offline distiller meets: a number, name or negation dropped
            raise DistillationRejected(reason)
        source_tokens = sum(estimate_tokens(m.content) for m in members)
        return Distillation(
            abstraction=abstraction.strip(),
            compression_ratio=round(source_tokens / max(1, estimate_tokens(abstraction)), 3),
            is_causal=obj.get("is_causal") is True,
            input_tokens=usage.total_input_tokens,
            output_tokens=usage.output_tokens,
            llm_latency_ms=round(latency, 1),
            distiller=self.name,
            usage=usage.as_dict(),
        )

    # ------------------------------------------------------------------ distillation

    def distill(self, members: Sequence[Member], category: str, date_range: tuple[str, str]) -> Distillation:
        result = next(self.distill_many([DistillRequest("cluster", members, category, date_range)]))
        if isinstance(result, BaseException):
            raise result
        return result

    def distill_many(self, requests: Sequence[DistillRequest]) -> Iterator[Distillation | BaseException]:
        """One result per request, in order: a Distillation, or the exception that stopped it —
        DistillationRejected (the model answered badly), LLMCallFailed (the API failed for good) or
        CostCapReached (not attempted: the cap was reached, this and every later cluster wait)."""
        if self.batch:
            yield from self._distill_batch(requests)
            return
        capped: CostCapReached | None = None
        for req in requests:
            if capped is not None:
                yield capped
                continue
            user = build_user_message(req.members, req.category)
            max_tokens = self.distill_max_tokens(req.members)
            bound = self._distill_bound(user, max_tokens)
            try:
                self.guard.check(bound)
            except CostCapReached as exc:
                capped = exc
                self.log(
                    f"LLM: {exc} (spent ${self.guard.spent_usd:.4f}, next cluster could cost up to ${bound:.4f}); "
                    "the remaining clusters wait for the next night"
                )
                yield exc
                continue
            try:
                text, usage, latency, stop = self._call("distill", req.key, SYSTEM_PROMPT, user, max_tokens)
                result = self._distillation(text, usage, latency, req.members, stop)
            except Exception as exc:  # noqa: BLE001 - handed to the caller, cluster by cluster
                yield exc
                continue
            if result.is_causal:
                self.guard.reserve(self._atom_bound(result.abstraction))
            yield result

    def _distill_batch(self, requests: Sequence[DistillRequest]) -> Iterator[Distillation | BaseException]:
        items = []
        for r in requests:
            user, max_tokens = build_user_message(r.members, r.category), self.distill_max_tokens(r.members)
            items.append((SYSTEM_PROMPT, user, max_tokens, self._distill_bound(user, max_tokens)))
        outcomes = self._batch("distill", items)
        for req, outcome in zip(requests, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                yield outcome
                continue
            text, usage, stop = outcome
            try:
                yield self._distillation(text, usage, 0.0, req.members, stop)
            except DistillationRejected as exc:
                yield exc

    # ------------------------------------------------------------------ atoms

    def extract_atom(self, text: str) -> dict[str, str] | None:
        result = self.extract_atoms([text])[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def extract_atoms(self, texts: Sequence[str]) -> list[dict[str, str] | None | BaseException]:
        """{subject, action, outcome, consequences}, None for `{"not_causal": true}`, or the exception."""
        out: list[dict[str, str] | None | BaseException] = []
        if self.batch:
            items = [(ATOM_SYSTEM_PROMPT, t, self.atom_max_tokens, self._atom_bound(t)) for t in texts]
            for outcome in self._batch("enrich", items):
                if isinstance(outcome, BaseException):
                    out.append(outcome)
                    continue
                try:
                    out.append(parse_atom(outcome[0]))
                except DistillationRejected as exc:
                    out.append(exc)
            return out
        for i, text in enumerate(texts):
            try:
                self.guard.check(self._atom_bound(text))
                raw, _, _, _ = self._call("enrich", f"atom-{i + 1}", ATOM_SYSTEM_PROMPT, text, self.atom_max_tokens)
                out.append(parse_atom(raw))
            except Exception as exc:  # noqa: BLE001 - non-fatal per seed §10; the caller records it
                out.append(exc)
        return out

    # ------------------------------------------------------------------ batch plumbing

    def _batch(
        self, stage: str, items: Sequence[tuple[str, str, int, float]]
    ) -> list[tuple[str, Usage, str | None] | BaseException]:
        """(system, user, max_tokens, worst-case cost) per item → (text, usage, stop) or an exception. Requests
        already held by a recent batch are not sent again; new ones are admitted in order while the cap
        allows, and the rest are CostCapReached."""
        params = [message_params(self.model, s, u, m, self.temperature) for s, u, m, _ in items]
        ids = [custom_id_for(stage, p) for p in params]
        known = self.runner.known(stage, ids)
        admitted: dict[str, dict[str, Any]] = {}
        capped: CostCapReached | None = None
        for (_, _, _, bound), cid, p in zip(items, ids, params, strict=True):
            if cid in admitted:
                continue
            if cid in known:
                if known[cid].status == "submitted":
                    self.guard.reserve(bound)  # paid by an earlier run, recorded when this run collects it
                admitted[cid] = p
            elif capped is None and self.guard.fits(bound):
                self.guard.reserve(bound)
                admitted[cid] = p
            elif capped is None:
                capped = CostCapReached(f"cost cap ${self.guard.cap_usd:g} reached")
                self.log(f"LLM: {capped}; {stage} requests from here on wait for the next night")
        results: dict[str, dict[str, Any]] = {}
        failure: BaseException | None = None
        if admitted:
            try:
                results = self.runner.run(stage, admitted)
            except LLMCallFailed as exc:
                failure = exc
        out: list[tuple[str, Usage, str | None] | BaseException] = []
        for cid in ids:
            if cid not in admitted:
                out.append(capped or CostCapReached("cost cap reached"))
            elif failure is not None:
                out.append(failure)
            elif results.get(cid, {}).get("type") == "succeeded":
                found = results[cid]
                out.append((found["text"], Usage.from_api(found["usage"]), found.get("stop_reason")))
            else:
                out.append(LLMCallFailed(f"batch request {results.get(cid, {}).get('error', 'missing')}"))
        return out
