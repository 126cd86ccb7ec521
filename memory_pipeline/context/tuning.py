"""Gate tuning (seed 001 §5.5): per topic, what the watchers and the gate decided, and a suggested threshold.

The suggestion is the Tier-2 threshold that best reproduces the gate's own YES/NO (balanced accuracy over
the observed scores); with fewer than `MIN_ANSWERS` answers of each kind there is nothing to learn from,
and the topic keeps its threshold.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from memory_pipeline.context.gate import GateDecision

MIN_ANSWERS = 5


@dataclass(frozen=True)
class TopicTuning:
    topic: str
    decisions: int
    activations: int
    gate_calls: int
    yes_rate: float | None
    no_rate: float | None
    tier2_p10: float
    tier2_p50: float
    tier2_p90: float
    suggested_threshold: float | None


def suggest_threshold(scores: list[float], answers: list[bool]) -> float | None:
    """The cut on Tier-2 that best separates the gate's YES from its NO (balanced accuracy; ties: lower)."""
    yes = sum(answers)
    no = len(answers) - yes
    if yes < MIN_ANSWERS or no < MIN_ANSWERS:
        return None
    s = np.asarray(scores)
    a = np.asarray(answers)
    best, best_t = -1.0, None
    for t in sorted(set(scores)):
        pred = s >= t
        acc = 0.5 * (pred[a].mean() + (~pred[~a]).mean())
        if acc > best:
            best, best_t = acc, t
    return None if best_t is None else round(float(best_t), 4)


def summarise(decisions: Iterable[GateDecision]) -> list[TopicTuning]:
    per: dict[str, list[GateDecision]] = defaultdict(list)
    for d in decisions:
        per[d.topic].append(d)
    out = []
    for topic in sorted(per):
        ds = per[topic]
        asked = [d for d in ds if d.gate_result is not None and d.decided_by in ("llm", "cache", "offline")]
        scores = np.asarray([d.tier2_score for d in ds])
        yes = sum(1 for d in asked if d.gate_result)
        llm = [d for d in asked if d.decided_by in ("llm", "cache")]
        out.append(TopicTuning(
            topic=topic,
            decisions=len(ds),
            activations=sum(d.activated for d in ds),
            gate_calls=len(asked),
            yes_rate=round(yes / len(asked), 4) if asked else None,
            no_rate=round(1 - yes / len(asked), 4) if asked else None,
            tier2_p10=round(float(np.percentile(scores, 10)), 4),
            tier2_p50=round(float(np.percentile(scores, 50)), 4),
            tier2_p90=round(float(np.percentile(scores, 90)), 4),
            suggested_threshold=suggest_threshold([d.tier2_score for d in llm], [bool(d.gate_result) for d in llm]),
        ))
    return out
