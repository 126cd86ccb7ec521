"""The weekly gate_tuning asset reads the week's gate log and suggests the threshold the gate's answers imply."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import dagster as dg

from memory_pipeline.context.gate import GateDecision, append_log
from memory_pipeline.context.tuning import suggest_threshold, summarise
from memory_pipeline.defs.context.assets import gate_tuning
from memory_pipeline.resources import MemoryStoreResource


def _d(topic: str, score: float, yes: bool | None, ts: str = "2026-11-03T10:00:00+00:00") -> GateDecision:
    by = "llm" if yes is not None else "table"
    return GateDecision(ts, "h", topic, True, score, "gate", yes, by, bool(yes), "")


def test_suggested_threshold_separates_the_gates_answers() -> None:
    scores = [0.05, 0.08, 0.1, 0.12, 0.14, 0.31, 0.33, 0.4, 0.45, 0.5]
    answers = [False] * 5 + [True] * 5
    assert suggest_threshold(scores, answers) == 0.31
    assert suggest_threshold(scores[:6], answers[:6]) is None  # too few YES to learn from


def test_gate_tuning_asset_summarises_only_its_week(tmp_path: Path) -> None:
    week = [_d("email", s, s >= 0.3) for s in (0.05, 0.1, 0.12, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6)]
    other_week = [dataclasses.replace(d, timestamp="2026-11-20T10:00:00+00:00") for d in week]
    append_log(tmp_path / "reports" / "gate-log.jsonl", [*week, *other_week, _d("deploys", 0.4, None)])
    result = dg.materialize(
        [gate_tuning], partition_key="2026-11-01", resources={"store": MemoryStoreResource(home=str(tmp_path))}
    )
    assert result.success
    meta = result.asset_materializations_for_node("gate_tuning")[0].metadata
    assert meta["decisions"].value == 11
    assert meta["email/decisions"].value == 10 and meta["email/activations"].value == 5
    assert meta["email/yes_rate"].value == 0.5
    assert meta["email/suggested_threshold"].value == 0.3
    assert "deploys/suggested_threshold" not in meta  # nothing to learn from
    assert summarise([]) == []
