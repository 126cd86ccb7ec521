"""Token usage and what it costs: a configurable price table (USD per million tokens).

Defaults are Claude Haiku 4.5's list prices: input $1, output $5, 5-minute cache write $1.25 (1.25×),
cache read $0.10 (0.1×); the Message Batches API halves every one of them (the discounts stack).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memory_pipeline.tokens import estimate_tokens

USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


@dataclass(frozen=True)
class Usage:
    """One call's usage as the API reports it. `input_tokens` excludes the cached prefix: the tokens a call
    reads are input + cache_read + cache_creation."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    @classmethod
    def from_api(cls, usage: object) -> Usage:
        """From the SDK's `Usage` model or a plain dict; absent or null fields count as 0."""

        def get(name: str) -> int:
            value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
            return int(value or 0)

        return cls(*(get(name) for name in USAGE_FIELDS))

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in USAGE_FIELDS}

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(getattr(self, n) + getattr(other, n) for n in USAGE_FIELDS))


@dataclass(frozen=True)
class PriceTable:
    """USD per million tokens; `batch_factor` multiplies every price for Message Batches requests."""

    input_per_mtok: float = 1.0
    output_per_mtok: float = 5.0
    cache_write_per_mtok: float = 1.25
    cache_read_per_mtok: float = 0.10
    batch_factor: float = 0.5

    def cost(self, usage: Usage, batch: bool = False) -> float:
        """Exact cost of recorded usage (not rounded: sums of rounded numbers drift)."""
        dollars = (
            usage.input_tokens * self.input_per_mtok
            + usage.output_tokens * self.output_per_mtok
            + usage.cache_creation_input_tokens * self.cache_write_per_mtok
            + usage.cache_read_input_tokens * self.cache_read_per_mtok
        ) / 1e6
        return dollars * (self.batch_factor if batch else 1.0)

    def worst_case(self, input_tokens: float, max_output_tokens: int, batch: bool = False) -> float:
        """An upper bound on one call's cost before it is made: every input token at the dearest input
        price (a cache write) and every allowed output token."""
        dearest_input = max(self.input_per_mtok, self.cache_write_per_mtok)
        dollars = (input_tokens * dearest_input + max_output_tokens * self.output_per_mtok) / 1e6
        return dollars * (self.batch_factor if batch else 1.0)


def prompt_tokens_bound(*texts: str, margin: float = 1.25, overhead: int = 16) -> float:
    """Input tokens of a prompt, from our estimate with a margin for its error (3.5 chars/token is a rule
    of thumb, not Claude's tokenizer) and a few tokens of message framing."""
    return sum(estimate_tokens(t) for t in texts) * margin + overhead


@dataclass(frozen=True)
class NightEstimate:
    clusters: int
    avg_cluster_size: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    batch_cost_usd: float


def estimate_night(
    clusters: int,
    avg_cluster_size: int,
    prices: PriceTable,
    *,
    system_tokens: int,
    atom_system_tokens: int,
    member_tokens: int = 45,
    causal_fraction: float = 0.5,
    abstraction_fraction: float = 0.3,
) -> NightEstimate:
    """What a night costs: one distillation per cluster (system prompt + N members in, an abstraction of
    ~30% of the input out, as JSON) and one atom extraction per causal abstraction."""
    members_in = avg_cluster_size * (member_tokens + 6) + 30  # "[i] importance=x | " and the frame lines
    abstraction = max(20, int(abstraction_fraction * avg_cluster_size * member_tokens))
    distill_in, distill_out = system_tokens + members_in, abstraction + 20
    atoms = round(clusters * causal_fraction)
    atom_in, atom_out = atom_system_tokens + abstraction, 60
    usage = Usage(clusters * distill_in + atoms * atom_in, clusters * distill_out + atoms * atom_out)
    return NightEstimate(
        clusters=clusters,
        avg_cluster_size=avg_cluster_size,
        calls=clusters + atoms,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost_usd=prices.cost(usage),
        batch_cost_usd=prices.cost(usage, batch=True),
    )
