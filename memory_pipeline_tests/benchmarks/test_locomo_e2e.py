"""The end-to-end LoCoMo harness: scores come from what each read path returned, within budget;
the rule of benchmarks/locomo_rule.md picks the point it says."""

from pathlib import Path
from typing import Any

import pytest

from benchmarks import locomo_e2e as e2e
from memory_pipeline.evaluation.locomo import load_locomo

FIXTURE = Path(__file__).with_name("locomo_fixture.json")


def _row(kind: str, conv: str, t: float, link: str, ratio: float, reduction: float) -> dict[str, Any]:
    return {"input": kind, "conversation": conv, "threshold": t, "linkage": link, "categories": "1-4",
            "method": "context", "budget": e2e.RULE_BUDGET, "support_ratio": ratio, "reduction_pct": reduction}


def test_the_rule_picks_the_largest_qualifying_reduction_and_breaks_ties_as_written() -> None:
    rows = []
    grid = {  # (t, linkage): (pooled ratio, worst conversation, memories ratio, reduction)
        (0.70, "single"): (0.90, 0.85, 0.99, 45.0),  # largest cut, but loses support: out
        (0.74, "single"): (0.99, 0.96, 0.99, 33.0),
        (0.74, "complete"): (0.99, 0.97, 0.99, 32.5),  # within 1 point of 33.0 and complete: preferred
        (0.78, "average"): (1.00, 0.94, 1.00, 20.0),  # one conversation below 0.95: out
        (0.70, "complete"): (0.99, 0.99, 0.90, 40.0),  # extracted memories below 0.98: out
    }
    for (t, link), (pooled, worst, mems, cut) in grid.items():
        rows += [_row("turns", "all", t, link, pooled, cut), _row("turns", "c1", t, link, worst, cut),
                 _row("turns", "c2", t, link, 1.0, cut), _row("memories", "all", t, link, mems, cut)]
    chosen, why = e2e.choose(rows)
    assert chosen == {"threshold": 0.74, "linkage": "complete", "reduction_pct": 32.5}
    assert "complete linkage" in why and "×0.970" in why
    nothing, why = e2e.choose([r for r in rows if r["threshold"] == 0.70 and r["linkage"] == "single"])
    assert nothing is None and "keeps the seed's 0.82" in why


def test_packing_never_exceeds_the_budget() -> None:
    texts = [(f"m{i}", "word " * (20 * (i % 7 + 1))) for i in range(50)]
    for budget in (50, 120, 512):
        ids, kept, used = e2e._pack(texts, budget)
        assert used <= budget and len(ids) == len(kept) and ids
        assert len(ids) < 50  # the budget binds


@pytest.mark.slow  # embeds the fixture with MiniLM and builds a search index (~20 s)
def test_scores_come_from_what_the_read_path_returned(tmp_path: Path) -> None:
    conv = load_locomo(FIXTURE, ["conv-t1"])[0]
    base = e2e.prepare_turns(conv, tmp_path)
    from memory_pipeline.resources.embedder import EmbedderResource

    rows = e2e.score_state(base.home, conv, e2e._cached_encoder(EmbedderResource().encode), turns=True)
    assert {r["method"] for r in rows} == set(e2e.METHODS) and {r["budget"] for r in rows} == set(e2e.BUDGETS)
    assert all(r["tokens"] <= r["budget"] for r in rows)
    dog = next(q for q in conv.questions if q.question == "What is the name of Tomas's dog?")
    at = {(r["method"], r["budget"]): r for r in rows if r["question"] == dog.index}
    # the whole 12-turn conversation fits in 2,000 tokens: every path returns the evidence turn
    assert at[("context", 2000)]["support"] is True and at[("context", 2000)]["recall"] is True
    assert at[("cosine", 2000)]["support"] is True
    # a budget too small for any memory section returns nothing, and nothing supports the answer
    tiny = e2e._pack([("x", "Biscuit " * 200)], 50)
    assert tiny == ([], [], 0)


def test_without_matplotlib_the_results_are_written_and_one_line_says_how_to_get_the_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plot comes last: a run without the dev extra keeps hours of work and says what to install."""
    import json
    import sys

    from benchmarks import common

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    monkeypatch.setattr(common, "RUNS", tmp_path / "runs")
    rows = [{"question": 0, "category": 1, "method": m, "budget": b, "support": True, "recall": True, "tokens": 10}
            for m in e2e.METHODS for b in e2e.BUDGETS]  # fmt: skip
    point = {"input": "turns", "conversation": "c1", "threshold": 0.82, "linkage": "single", "tokens_before": 100,
             "tokens_after": 70, "before": rows, "after": rows}  # fmt: skip
    points = tmp_path / "run.points.json"
    points.write_text(json.dumps([point]))
    out = tmp_path / "curve.csv"
    e2e.main(["--points", str(points), "--out", str(out), "--thresholds", "0.82", "--linkages", "single"])
    printed = capsys.readouterr().out
    assert out.is_file() and "0.82" in out.read_text()
    assert [p.name for p in (tmp_path / "runs").iterdir()] and not out.with_suffix(".png").exists()
    said = [line for line in printed.splitlines() if "plot not drawn" in line or "pip install" in line]
    assert len(said) == 1 and "pip install matplotlib" in said[0], printed
