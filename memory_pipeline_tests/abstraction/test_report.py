from memory_pipeline.abstraction.report import (
    CompressionError,
    CompressionRunReport,
    alert_priority,
    decide_verdict,
    health_bands,
    reduction_pct,
    report_from_dict,
)
from memory_pipeline.tokens import estimate_tokens


def make_report(**overrides: object) -> CompressionRunReport:
    base = dict(
        run_id="r",
        started_at="s",
        finished_at="f",
        duration_ms=1000,
        memories_scanned=100,
        clusters_found=10,
        clusters_skipped=1,
        clusters_compressed=9,
        memories_archived=40,
        abstractions_created=9,
        atoms_created=2,
        atoms_enriched=0,
        tokens_before=1000,
        tokens_after=700,
        token_reduction_pct=30.0,
        avg_compression_ratio=3.0,
        max_compression_ratio=5.0,
        min_compression_ratio=1.6,
        total_llm_calls=0,
        total_llm_input_tokens=0,
        total_llm_output_tokens=0,
        estimated_cost_usd=0.0,
    )
    base.update(overrides)
    return CompressionRunReport(**base)  # type: ignore[arg-type]


def test_verdict_rules() -> None:
    assert decide_verdict(3, 0) == ("PASS", None)
    assert decide_verdict(3, 2)[0] == "PARTIAL"
    assert decide_verdict(0, 0)[0] == "FAIL"
    assert decide_verdict(5, 0, fatal="store locked") == ("FAIL", "store locked")
    # clusters to try and none compressed: the job stopped working
    assert decide_verdict(0, 0, tried=4, found=4, scanned=20) == ("FAIL", "no cluster was compressed (no useful "
                                                                  "work done)")  # fmt: skip
    # a quiet night: nothing to try
    quiet = [decide_verdict(0, 0, tried=0, found=f, scanned=s) for f, s in ((0, 0), (0, 3), (2, 9))]
    assert {v for v, _ in quiet} == {"PASS"} and all(str(r).startswith("nothing new to consolidate") for _, r in quiet)
    assert [str(r).split(": ")[1][:8] for _, r in quiet] == ["no memor", "the 3 el", "the 2 cl"]
    assert decide_verdict(0, 0, tried=0, found=0, scanned=2, duplicates=2)[1] == (
        "nothing new to consolidate: the 2 eligible memories form no cluster; 2 exact duplicate(s) archived")
    assert decide_verdict(0, 1, tried=0)[0] == "FAIL"  # quiet but errored
    # a fact's versions told apart, nothing to distil: work done
    assert decide_verdict(0, 0, tried=1, found=1, scanned=4, superseded=2) == (
        "PASS", "marked 2 older values of a fact as replaced; no cluster compressed")
    assert decide_verdict(0, 1, tried=1, superseded=2)[0] == "FAIL"  # but not when it had errors
    assert decide_verdict(0, 0, "compaction paused", tried=0) == ("FAIL", "compaction paused")


def test_a_quiet_night_is_in_every_good_band() -> None:
    quiet = make_report(clusters_found=3, clusters_skipped=3, clusters_recently_processed=3, clusters_compressed=0,
                        tokens_after=1000, token_reduction_pct=0.0, avg_compression_ratio=0.0)  # fmt: skip
    assert {b.band for b in health_bands(quiet)} == {"good"}
    assert {b.field for b in health_bands(quiet)} == {"errors", "estimated_cost_usd"}


def test_reduction_pct() -> None:
    assert reduction_pct(1000, 700) == 30.0
    assert reduction_pct(0, 0) == 0.0
    assert reduction_pct(100, 120) == -20.0


def test_health_bands() -> None:
    good = {b.field: b.band for b in health_bands(make_report())}
    assert set(good.values()) == {"good"}
    bad = {
        b.field: b.band
        for b in health_bands(
            make_report(token_reduction_pct=-1.0, clusters_skipped=6, estimated_cost_usd=0.3, avg_compression_ratio=2.0)
        )
    }
    assert bad == {
        "token_reduction_pct": "bad",
        "skip_rate": "bad",
        "estimated_cost_usd": "bad",
        "avg_compression_ratio": "warning",
        "errors": "good",
    }


def test_alert_priority() -> None:
    assert alert_priority(make_report(verdict="PASS")) == "info"
    assert alert_priority(make_report(verdict="FAIL")) == "action"
    assert alert_priority(make_report(verdict="PASS", duration_ms=31 * 60_000)) == "action"
    err = CompressionError("c", "enrich", "boom", "t")
    assert alert_priority(make_report(verdict="PARTIAL", errors=[err])) == "action"


def test_report_round_trips_through_json_dict() -> None:
    r = make_report(errors=[CompressionError("c", "distill", "x", "t")])
    assert report_from_dict(r.to_dict() | {"memory_count": 5}) == r


def test_token_estimate() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("   ") == 0
    assert estimate_tokens("hi") == 1
    assert estimate_tokens("a" * 35) == 10
