"""Which similarity threshold and linkage a night clusters with, and why.

A cosine threshold only means something on one model's similarity scale: seed 000's 0.82 was set for
text-embedding-3-small. `defaults.json` holds a default per embedder: `seed_calibrated` models (and any model
it does not list) get the seed's values; a listed model has its own, with the rule that chose it. An explicit
setting always wins. Plain Python, no Dagster.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LINKAGES = ("single", "complete", "average")
THRESHOLD_VAR = "COMPRESSION_SIMILARITY_THRESHOLD"
LINKAGE_VAR = "COMPRESSION_LINKAGE"


@dataclass(frozen=True)
class ClusteringChoice:
    """The threshold and linkage a night uses, and one sentence saying where they came from."""

    threshold: float
    linkage: str
    reason: str


@functools.cache
def _table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(__file__).with_name("defaults.json").read_text(encoding="utf-8"))
    return data


def model_default(model: str) -> ClusteringChoice:
    """The default for `model` alone (no explicit setting)."""
    table = _table()
    seed = table["seed"]
    entry = table["models"].get(model)
    if entry is None or entry.get("seed_calibrated"):
        why = f"calibrated default for {model}" if entry else f"general default for {model} (no default of its own)"
        return ClusteringChoice(float(seed["threshold"]), str(seed["linkage"]), f"{why}: {seed['why']}")
    rule = str(entry.get("rule", "")).strip()  # `chosen_by` and `source` are for maintainers, not the report
    return ClusteringChoice(float(entry["threshold"]), str(entry["linkage"]), f"{model} default: {rule}")


def resolve(model: str, threshold: float | None = None, linkage: str | None = None) -> ClusteringChoice:
    """The explicit values where given, else `model`'s default; the reason names what was set."""
    default = model_default(model)
    if linkage is not None and linkage not in LINKAGES:
        raise ValueError(f"{LINKAGE_VAR}={linkage!r}: expected one of {', '.join(LINKAGES)}")
    if threshold is None and linkage is None:
        return default
    chosen_t = default.threshold if threshold is None else float(threshold)
    chosen_l = default.linkage if linkage is None else linkage
    set_parts = [f"threshold {chosen_t:g}"] * (threshold is not None) + [f"linkage {chosen_l}"] * (linkage is not None)
    reason = f"{' and '.join(set_parts)} set explicitly ({THRESHOLD_VAR} / {LINKAGE_VAR} or run config)"
    if threshold is None or linkage is None:
        reason += f"; the rest from the {default.reason}"
    return ClusteringChoice(chosen_t, chosen_l, reason)


def describe(choice: ClusteringChoice) -> str:
    return f"threshold {choice.threshold:g}, linkage {choice.linkage}: {choice.reason}"
