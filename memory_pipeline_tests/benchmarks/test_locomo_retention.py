"""The retention benchmark: aggregation on hand-made runs, and `--smoke` end to end (real importer, real
embedder, real nightly_consolidation job)."""

import csv
from pathlib import Path

import pytest

from benchmarks import locomo_retention as lr

FIXTURE = Path(__file__).with_name("locomo_fixture.json")
LOCOMO = lr.DEFAULT_DATA


def _run(conversation: str, threshold: float, tokens_after: int, after_support: list[bool]) -> dict:
    before = [
        {"category": c, "recall@5": True, "recall@10": True, "support@5": True, "support@10": True} for c in (1, 4)
    ]
    before.append({"category": 5, "recall@5": None, "recall@10": None, "support@5": None, "support@10": True})
    after = [
        {"category": c, "recall@5": True, "recall@10": True, "support@5": s, "support@10": s}
        for c, s in zip((1, 4), after_support, strict=True)
    ]
    after.append({"category": 5, "recall@5": None, "recall@10": None, "support@5": None, "support@10": False})
    return {
        "conversation": conversation,
        "threshold": threshold,
        "tokens_before": 1000,
        "tokens_after": tokens_after,
        "clusters_found": 2,
        "clusters_compressed": 2,
        "memories_archived": 7,
        "distiller": "offline-extractive",
        "before": before,
        "after": after,
    }


def test_aggregate_pools_conversations_and_finds_the_crossing() -> None:
    runs = [
        _run("a", 0.80, 600, [True, False]),
        _run("b", 0.80, 700, [True, True]),
        _run("a", 0.82, 900, [True, True]),
        _run("b", 0.82, 900, [True, True]),
    ]
    curve, detail = lr.aggregate(runs)
    low, default = curve
    assert low["reduction_pct"] == pytest.approx(35.0) and default["reduction_pct"] == pytest.approx(10.0)
    assert low["c1-4_support@10_before"] == 1.0 and low["c1-4_support@10_after"] == 0.75
    assert low["c1-4_support@10_ratio"] == 0.75 and low["c1-4_recall@10_ratio"] == 1.0
    assert low["c5_support@10_after"] == 0.0 and low["c5_recall@10_n"] == 0  # category 5 kept apart
    assert low["memories_archived"] == 14
    assert lr.crossing(curve)["threshold"] == 0.80
    row = next(d for d in detail if d["conversation"] == "a" and d["categories"] == "4" and d["threshold"] == 0.80)
    assert row["support@10_after"] == 0.0 and row["support@10_n"] == 1
    text = lr.summary_markdown(curve, detail, _meta())
    assert "support@10 after ÷ before = 1.000 (≥ 0.95: met)" in text
    assert "Reduction reaches 30 % at threshold 0.80 (35.0 %)" in text


def _meta() -> dict:
    return {
        "data": "x.json",
        "conversations": ["a", "b"],
        "turns": 10,
        "questions": 6,
        "embedder": "e",
        "distiller": "offline-extractive",
        "seconds": 1.0,
        "prepare_seconds": 0.5,
        "curve_csv": "c.csv",
        "detail_csv": "d.csv",
        "png": "p.png",
    }


def _check_outputs(result: dict, out: Path) -> dict:
    assert (out / "locomo_retention.png").stat().st_size > 10_000
    with (out / "locomo_retention_curve.csv").open() as fh:
        [row] = list(csv.DictReader(fh))
    assert row["threshold"] == "0.8200" and row["distiller"] == "offline-extractive"
    assert int(row["tokens_after"]) <= int(row["tokens_before"])
    with (out / "locomo_retention_detail.csv").open() as fh:
        scopes = {(r["conversation"], r["categories"]) for r in csv.DictReader(fh)}
    assert {("all", s) for s in lr.SCOPES} <= scopes
    return result["curve"][0]


def test_smoke_on_the_fixture(tmp_path: Path) -> None:
    out = tmp_path / "results"
    result = lr.main(["--smoke", "--data", str(FIXTURE), "--out", str(out), "--work", str(tmp_path / "work")])
    assert result["meta"]["conversations"] == ["conv-t1"]  # --smoke: the first conversation only
    row = _check_outputs(result, out)
    # the three identical "Thanks, Tomas! Talk soon, bye!" turns: the nightly job archives two as duplicates
    assert row["tokens_after"] < row["tokens_before"]
    assert row["c1-4_support@10_before"] is not None
    assert not (tmp_path / "work" / "conv-t1").exists()  # scratch stores are removed


@pytest.mark.slow  # ~20 s on a quiet machine, over a minute on a loaded one
@pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo data not at {LOCOMO}")
def test_smoke_on_one_locomo_conversation_keeps_the_answers(tmp_path: Path) -> None:
    out = tmp_path / "results"
    result = lr.main(["--smoke", "--conversations", "conv-26", "--out", str(out), "--work", str(tmp_path / "w")])
    row = _check_outputs(result, out)
    # a conversation's turns are distinct statements: the verified night refuses a summary that drops them, so
    # clusters are found and few or none compressed, and what is archived is what its summaries say
    assert row["clusters_found"] > 0 and row["clusters_compressed"] <= row["clusters_found"]
    assert row["reduction_pct"] >= 0
    # the benchmark's target, on this conversation: answer support@10 after ≥ 0.95 × before (categories 1–4)
    assert row["c1-4_support@10_ratio"] >= lr.TARGET_RATIO


def test_the_plot_without_matplotlib_is_one_line_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert lr.plot([], tmp_path / "curve.png", "title") is None
    assert not (tmp_path / "curve.png").exists()
    assert capsys.readouterr().out.count("pip install matplotlib") == 1
