"""The retention-probes benchmark's table, on hand-made grid points: each probe variant pooled over the
conversations and ranked against the answer-support ratio; a constant column reads as undefined, not as a number."""

from __future__ import annotations

from typing import Any

from benchmarks import retention_probes as rp


def point(conv: str, t: float, archived: int, support: tuple[int, int], kept: dict[str, tuple[int, int]]) -> Any:
    return {"conversation": conv, "threshold": t, "linkage": "single", "before": {1000: 100, 2000: 100},
            "after": {1000: support[0], 2000: support[1]}, "active_before": 400, "archived": archived,
            "variants": {n: {"probes": 50, "kept_before": b, "kept_after": a}
                         for n, (b, a) in kept.items()}}  # fmt: skip


POINTS = [
    # the shipped probe keeps everything; the no-archive probe falls as support does; both conversations pooled
    point("conv-26", 0.60, 300, (80, 85), {"shipped": (40, 40), "C no archive": (40, 20)}),
    point("conv-41", 0.60, 100, (90, 95), {"shipped": (10, 10), "C no archive": (10, 4)}),
    point("conv-26", 0.70, 200, (90, 92), {"shipped": (40, 40), "C no archive": (40, 30)}),
    point("conv-41", 0.70, 50, (95, 96), {"shipped": (10, 10), "C no archive": (10, 8)}),
    point("conv-26", 0.80, 40, (99, 99), {"shipped": (40, 40), "C no archive": (40, 39)}),
    point("conv-41", 0.80, 10, (100, 100), {"shipped": (10, 10), "C no archive": (10, 10)}),
]


def test_pooled_sums_the_conversations_per_grid_point() -> None:
    rows = rp.pooled(POINTS)
    assert [r["threshold"] for r in rows] == [0.60, 0.70, 0.80]
    assert rows[0]["C no archive"] == 24 / 50 and rows[0]["shipped"] == 1.0
    assert rows[0]["archived_share"] == 400 / 800 and rows[0]["ratio_1000"] == 170 / 200


def test_the_report_gives_each_variants_rho_at_both_budgets() -> None:
    text = rp.report(POINTS)
    assert "| shipped | undefined (a constant column) | undefined (a constant column) | missed |" in text
    assert "| C no archive | 1.000 | 1.000 | met |" in text
    assert rp.rho([1.0, 1.0], [0.5, 0.6]) is None
