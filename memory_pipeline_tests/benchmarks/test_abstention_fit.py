"""The combined gate's fit: labels, held-out scoring by conversation and by set, the bars the rule chooses, and the
rows cache."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sklearn")

from benchmarks.abstention import Asked  # noqa: E402
from benchmarks.abstention_fit import bars, held_out, label, load_rows, save_rows  # noqa: E402
from memory_pipeline.search.confidence import Signal  # noqa: E402


def _row(conv: str, group: str, never: bool, cosine: float, found: bool = True) -> Asked:
    hit = Signal(cosine - 0.2, 0.3, cosine, cosine * 0.8, frozenset({"maya"}), "observation", 3.0)
    return Asked(group, f"{conv} {group} {cosine}", never, found and not never, {"maya": 0.01}, [(hit.specific,
                 hit.words)], [(hit.bm25, hit.cosine)], [], ["Maya swims"], {}, [hit], conv)  # fmt: skip


def _rows() -> list[Asked]:
    rows = []
    for c in ("conv-a", "conv-b", "conv-c"):
        rows += [_row(c, "locomo", False, 0.55 + 0.01 * i) for i in range(20)]
        rows += [_row(c, "probe", True, 0.20 + 0.01 * i) for i in range(10)]
    rows += [_row("everyday", "everyday", False, 0.6), _row("everyday", "everyday", True, 0.25)]
    return rows + [_row("everyday", "heldout", True, 0.22)]


def test_labels_gate_only_rows_with_hits_and_known_answers() -> None:
    assert label(_row("c", "locomo", False, 0.5)) == 1
    assert label(_row("c", "probe", True, 0.5)) == 0
    assert label(_row("c", "locomo", False, 0.5, found=False)) is None  # evidence not among the hits: no row
    empty = _row("c", "probe", True, 0.5)
    empty.hits = []
    assert label(empty) is None


def test_every_row_is_scored_by_a_model_that_never_saw_it_and_the_bars_follow_the_rule() -> None:
    rows = _rows()
    p = held_out(rows)
    assert {id(a) for a in rows if a.group != "heldout"} == set(p)  # the held-out set is never in a fit
    answerable = [p[id(a)] for a in rows if a.group == "locomo"]
    never = [p[id(a)] for a in rows if a.group == "probe"]
    assert min(answerable) > max(never)  # separable by cosine: held out, still separated
    lo, hi = bars(p, rows)
    assert lo <= hi and sum(v < lo for v in answerable) / len(answerable) <= 0.005
    assert sum(v < hi for v in answerable) / len(answerable) <= 0.05


def test_rows_cache_round_trips(tmp_path: Path) -> None:
    rows = _rows()
    save_rows(rows, tmp_path / "rows.json")
    back = load_rows(tmp_path / "rows.json")
    assert [(a.text, a.signals, a.hits, a.conv) for a in back] == [(a.text, a.signals, a.hits, a.conv) for a in rows]
