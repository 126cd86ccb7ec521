"""What the abstraction assets need from the LLM layer, for any distiller (offline or Anthropic).

Non-attempts. The 7-day fingerprint TTL must only count real attempts, so `clusters` (and with it the dry
run's listing) ignores its own TTL skips and two more kinds of skip, whose clusters are the night's work
again:

- `deferred to the next night: cost cap $0.25 reached` — the cluster was never sent (the cap would have
  been crossed);
- `LLM error: …` — the API failed for good (seed 000 §10: "auto-retry at next nightly run").

A validation rejection (`compression_ratio=1.2 below floor`, `leaked memory id …`, `invalid JSON: …`) is
an attempt: the model answered, and the TTL applies.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from memory_pipeline.distillation.distill import Distillation
from memory_pipeline.llm.anthropic_distiller import CostCapReached, DistillRequest
from memory_pipeline.similarity.clustering import RECENT_SKIP_REASON

DEFERRED_PREFIX = "deferred to the next night: "
LLM_ERROR_PREFIX = "LLM error: "
TTL_PREFIX = RECENT_SKIP_REASON.split("{")[0]
NON_ATTEMPT_PREFIXES = (TTL_PREFIX, DEFERRED_PREFIX, LLM_ERROR_PREFIX)

__all__ = [
    "DEFERRED_PREFIX",
    "LLM_ERROR_PREFIX",
    "NON_ATTEMPT_PREFIXES",
    "CostCapReached",
    "DistillRequest",
    "deferred_reason",
    "distill_all",
    "extract_all",
    "is_deferred",
    "verdict_with_deferrals",
]


def deferred_reason(exc: BaseException) -> str:
    return f"{DEFERRED_PREFIX}{exc}"


def is_deferred(reason: str | None) -> bool:
    return bool(reason) and str(reason).startswith(DEFERRED_PREFIX)


def distill_all(distiller: Any, requests: Sequence[DistillRequest]) -> Iterator[Distillation | BaseException]:
    """One result per request, in order; a distiller without `distill_many` is called cluster by cluster."""
    many = getattr(distiller, "distill_many", None)
    if many is not None:
        yield from many(requests)
        return
    for r in requests:
        try:
            yield distiller.distill(r.members, r.category, r.date_range)
        except Exception as exc:  # noqa: BLE001 - the asset turns it into a skip reason
            yield exc


def extract_all(distiller: Any, texts: Sequence[str]) -> list[dict[str, str] | None | BaseException]:
    many = getattr(distiller, "extract_atoms", None)
    if many is not None:
        return list(many(texts))
    out: list[dict[str, str] | None | BaseException] = []
    for text in texts:
        try:
            out.append(distiller.extract_atom(text))
        except Exception as exc:  # noqa: BLE001 - non-fatal, recorded by the asset
            out.append(exc)
    return out


def verdict_with_deferrals(verdict: str, reason: str | None, deferred: int, cap_usd: float) -> tuple[str, str | None]:
    """Seed 000 §4.6 verdict, and PARTIAL when the cost cap left clusters for the next night."""
    if not deferred:
        return verdict, reason
    note = f"cost cap ${cap_usd:g} reached: {deferred} cluster(s) left for the next night"
    if verdict == "PASS":
        return "PARTIAL", note
    return verdict, f"{reason}; {note}" if reason else note


def step_metadata(distiller: Any) -> dict[str, Any]:
    """Numbers for the step's materialisation: this step's calls, cost and waits (nothing for offline)."""
    stats = getattr(distiller, "step_stats", None)
    return stats() if stats is not None else {}
