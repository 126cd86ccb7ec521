"""Knowledge-retention probes: what a probe masks, the figures and their worst clusters, and real nights on a tiny
workspace with the hashing embedder — a night below the floor stops before the archive (nothing archived, no
summary left pending, the run row BLOCKED), a rerun with the floor lowered archives as a night does, and the
figures `run`, `status` and the check's metadata show agree."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from memory_pipeline.abstraction import alerts, candidate, retention
from memory_pipeline.cli import main
from memory_pipeline.definitions import defs_with
from memory_pipeline.embedding.spec import HASHING
from memory_pipeline.resources import EmbedderResource
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline_tests.conftest import resources_for

IDF = {"oat": 5.0, "kitchen": 4.0, "coffee": 3.0, "milk": 2.0, "beans": 2.5, "office": 1.0, "bought": 0.5}

# (memory, what its probe masks, how): the values and names first; the rarest terms when it has none
TABLE = [
    ("Closed the TIA long at +$701: took profit into resistance.", ["TIA", "$701"], "values"),
    ("The daily standup moved to 10:15 on the second floor.", ["10:15"], "values"),
    ("The staging host is db-stage-1 behind the load balancer.", ["db-stage-1"], "values"),
    ("Per-trade risk cap is now 1.5% of the account.", ["1.5%"], "values"),
    ("Had lunch with Priya Raman on 3 March 2026 about the budget.", ["Priya Raman", "3 March 2026"], "values"),
    ("The invoice total came to 1,200 USD for the quarter.", ["1,200 USD"], "values"),
    ("Bought oat milk and coffee beans for the office kitchen.", ["oat", "kitchen"], "rarest"),
]


@pytest.mark.parametrize(("text", "answers", "by"), TABLE)
def test_a_probe_masks_values_and_names_else_the_rarest_terms(text: str, answers: list[str], by: str) -> None:
    probe = retention.build_probe("m1", "c1", text, lambda w: IDF.get(w, 0.0))
    assert probe is not None
    assert list(probe.answers) == answers and probe.by == by
    for answer in answers:
        assert answer.lower() not in probe.question.lower()
    assert retention.missing(probe.answers, text) == []  # the memory itself answers its probe
    assert retention.missing(probe.answers, probe.question) == answers


RARE_IDF = IDF | {"resistance": 6.0, "profit": 5.0, "closed": 4.0, "long": 3.5, "took": 1.0, "into": 0.5,
                  "budget": 5.0, "lunch": 4.0, "had": 1.0, "about": 0.3, "with": 0.2, "the": 0.1}

# (memory, what its question-like probe asks: its four rarest words once the answers are masked, in its order)
QUESTION_LIKE = [
    ("Closed the TIA long at +$701: took profit into resistance.", "closed long profit resistance"),
    ("Had lunch with Priya Raman on 3 March 2026 about the budget.", "had lunch about budget"),
    ("Bought oat milk and coffee beans for the office kitchen.", "milk coffee beans office"),
]


@pytest.mark.parametrize(("text", "question"), QUESTION_LIKE)
def test_a_question_like_probe_asks_only_the_rarest_words_left(text: str, question: str) -> None:
    idf = lambda w: RARE_IDF.get(w, 0.0)  # noqa: E731
    whole = retention.build_probe("m1", "c1", text, idf)
    rare = retention.build_probe("m1", "c1", text, idf, query="rare")
    assert whole is not None and rare is not None
    assert rare.question == question
    assert rare.answers == whole.answers and rare.by == whole.by  # the same answers masked, only the query differs
    assert retention.missing(rare.answers, rare.question) == list(rare.answers)
    assert len(whole.question.split()) > len(rare.question.split())


def test_a_question_like_probe_leaves_out_what_makes_no_probe_and_an_unknown_query_is_refused() -> None:
    assert retention.build_probe("m1", "c1", "TIA at $701.", lambda w: 1.0, query="rare") is None
    with pytest.raises(ValueError, match="probe query must be one of text, rare"):
        retention.build_probe("m1", "c1", "Closed the TIA long at +$701.", lambda w: 1.0, query="words")


def test_a_memory_that_is_all_answer_makes_no_probe() -> None:
    assert retention.build_probe("m1", "c1", "TIA at $701.", lambda w: 1.0) is None


def test_retention_counts_probes_kept_before_and_names_the_worst_cluster() -> None:
    def outcome(mid: str, cluster: str, before: list[str], after: list[str]) -> retention.Outcome:
        return retention.Outcome(retention.Probe(mid, cluster, f"question of {mid}", ("41", "ms"), "values"),
                                 before, after)  # fmt: skip

    outcomes = [
        outcome("a", "cl-1", [], ["41"]),
        outcome("b", "cl-1", [], ["41", "ms"]),
        outcome("c", "cl-2", [], ["41"]),
        outcome("d", "cl-3", [], []),
        outcome("e", "cl-3", ["41"], []),  # newly answered: gained, not counted against the night
    ]
    r = retention.tally("run-1", outcomes, 0.97, 1000, 9)
    assert (r.probes, r.kept_before, r.kept_after, r.gained) == (5, 4, 1, 1)
    assert r.retention == 0.25 and not r.passed
    assert [w.cluster_id for w in r.worst] == ["cl-1", "cl-2"]
    assert r.worst[0].probes_lost == 2 and r.worst[0].tokens_lost == ["41"]
    assert "cl-1: 2 probe(s) lost" in r.worst_text() and "lost 41" in r.worst_text()
    assert retention.from_dict(json.loads(json.dumps(r.to_dict()))) == r


T0 = datetime(2026, 9, 1, 9, 0)
NOTES = [  # two clusters under the hashing embedder at 0.6, and two notes alone
    ("a1", "The staging database host is db-stage-1 in the Frankfurt region.", 0),
    ("a2", "The staging database host is db-stage-1 in the Frankfurt region, port 5432.", 1),
    ("a3", "The staging database host is db-stage-1 in the Frankfurt region (port 5432).", 2),
    ("l1", "Checkout service p95 latency measured at 41 ms after the cache change.", 5),
    ("l2", "Checkout service p95 latency measured at 57 ms after the cache change.", 6),
    ("l3", "Checkout service p95 latency measured at 63 ms after the cache change.", 7),
    ("b1", "Bought oat milk and coffee beans for the office kitchen.", 3),
    ("c1", "The quarterly tax filing is due on the fifteenth.", 4),
]


def _workspace(tmp_path: Path) -> Path:
    home = tmp_path / "ws"
    home.mkdir()
    lines = [{"id": i, "content": t, "created_at": (T0 + timedelta(days=d)).isoformat()} for i, t, d in NOTES]
    (tmp_path / "notes.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    import_jsonl(MemoryStore(home / "memory.duckdb"), tmp_path / "notes.jsonl")
    return home


def _night(home: Path, instance: dg.DagsterInstance, **engine: Any) -> dg.ExecuteInProcessResult:
    resources = resources_for(home, **{"similarity_threshold": 0.6, "retention_probes": 300, **engine}) | {
        "embedder": EmbedderResource(model=HASHING)
    }
    return defs_with(resources).resolve_job_def("nightly_consolidation").execute_in_process(
        instance=instance, raise_on_error=False
    )


def _check(result: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
    [check] = [c for c in result.get_asset_check_evaluations() if c.check_name == "knowledge_retention"]
    return check


def _rows(home: Path, sql: str) -> list[tuple[Any, ...]]:
    with MemoryStore(home / "memory.duckdb").connect() as con:
        return con.execute(sql).fetchall()


def test_a_night_below_the_floor_archives_nothing_and_a_rerun_with_the_floor_lowered_does(tmp_path: Path) -> None:
    home = _workspace(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    blocked = _night(home, instance, retention_floor=1.01)  # no night reaches it: the floor blocks every night
    check = _check(blocked)
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    assert not blocked.success
    assert not [e for e in blocked.all_events if e.asset_key == dg.AssetKey("archive_updates")
                and e.event_type_value == "ASSET_MATERIALIZATION"]  # fmt: skip
    assert _rows(home, "SELECT count(*) FROM memories WHERE lifecycle <> 'active'") == [(0,)]  # nothing archived
    assert _rows(home, "SELECT count(*) FROM memories WHERE kind = 'summary'") == [(0,)]  # none left pending
    assert _rows(home, f"SELECT verdict FROM consolidation_runs WHERE run_id = '{blocked.run_id}'") == [("BLOCKED",)]
    assert _rows(home, "SELECT count(*) FROM leases") == [(0,)]
    figures = retention.load(home / "reports", blocked.run_id)
    assert figures is not None and figures.blocked and figures.probes == 6 and figures.archived == 6
    assert check.metadata["retention"].value == figures.retention and check.metadata["floor"].value == 1.01
    assert check.description is not None and "below the floor 1.01" in check.description
    alert = alerts.from_check(blocked.run_id, "compressed_memories", "knowledge_retention", False, "ERROR",
                              {k: getattr(v, "value", v) for k, v in check.metadata.items()})  # fmt: skip
    assert alert is not None and alert.priority == "action" and "worst" in alert.details

    rerun = _night(home, instance)  # the default floor
    assert rerun.success and _check(rerun).passed
    archived = {r[0] for r in _rows(home, "SELECT id FROM memories WHERE lifecycle = 'archived'")}
    assert archived == {"a1", "a2", "a3", "l1", "l2", "l3"}
    assert _rows(home, "SELECT count(*) FROM memories WHERE lifecycle = 'pending'") == [(0,)]
    assert _rows(home, "SELECT count(*) FROM memories WHERE kind = 'summary' AND lifecycle = 'active'") == [(2,)]


def test_run_status_and_the_check_agree_on_a_passing_night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    home = _workspace(tmp_path)
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", HASHING)
    monkeypatch.setenv("COMPRESSION_SIMILARITY_THRESHOLD", "0.6")
    monkeypatch.setenv("MEMORY_PIPELINE_RETENTION_PROBES", "300")  # the shipped default (the suite turns them off)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    assert main(["run"]) == 0
    out = capsys.readouterr().out
    [line] = [x for x in out.splitlines() if x.startswith("knowledge kept:")]
    [path] = (home / "reports").glob("retention-*.json")
    figures = retention.from_dict(json.loads(path.read_text()))
    assert line == figures.line() and figures.passed and figures.kept_before > 0
    assert f"retention {figures.retention:.3f}" in line
    assert _rows(home, "SELECT count(*) FROM memories WHERE lifecycle = 'archived'") == [(6,)]  # archived as today

    assert main(["status"]) == 0
    status = capsys.readouterr().out
    assert f"{figures.retention:.3f} ok ({figures.kept_after} of {figures.kept_before} probes kept" in status

    with dg.DagsterInstance.get() as instance:  # the instance `run` used (DAGSTER_HOME)
        [record] = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(dg.AssetKey("compressed_memories"), "knowledge_retention"), limit=1
        )
    assert record.event is not None and record.event.dagster_event is not None
    metadata = record.event.dagster_event.asset_check_evaluation_data.metadata
    assert metadata["retention"].value == figures.retention
    assert (metadata["kept_before"].value, metadata["kept_after"].value) == (figures.kept_before, figures.kept_after)


def test_the_fleet_report_shows_each_agents_last_retention(tmp_path: Path) -> None:
    from datetime import UTC

    from memory_pipeline.fleet import report as fleet_report

    reports = tmp_path / "reports"
    r = retention.tally("run-9", [retention.Outcome(retention.Probe("a", "cl", "q", ("1",), "values"), [], [])],
                        0.97, 1000, 1)  # fmt: skip
    retention.save(reports, r)
    (reports / "compression-run-9.json").write_text(json.dumps({"verdict": "PASS"}))
    now = datetime.now(UTC)
    night = fleet_report.night_from_report(reports / "compression-run-9.json", "run-9", now, {"verdict": "PASS"})
    row = fleet_report.agent_row("agent-a", [night], now - timedelta(days=1), now)
    assert night.retention == 1.0 and row.retention == 1.0
    assert "| agent-a | PASS | 0 | 1.000 |" in fleet_report.markdown([row])


def test_the_time_bound_ends_the_asking_and_the_sample_is_seeded() -> None:
    import time

    probes = [retention.Probe(f"m{i}", "cl", f"question {i}", ("1",), "values") for i in range(5)]
    asked: list[str] = []

    def ask(q: str) -> str:
        asked.append(q)
        return "1"

    assert retention.measure(probes, ask, ask, deadline=time.monotonic() - 1, at_least=0) == [] and asked == []
    assert len(retention.measure(probes, ask, ask, deadline=time.monotonic() + 60)) == 5
    ids = [f"m{i:03d}" for i in range(500)]
    first = retention.sample(ids, 300, 0)
    assert first == retention.sample(list(reversed(ids)), 300, 0) and len(set(first)) == 300
    assert first[:50] != sorted(first)[:50]  # a random order: any first part is a random sample


@pytest.mark.parametrize(
    ("cap", "share", "so_far", "expected"),
    [
        (60.0, 0.1, 300.0, 30.0),  # a long night: a tenth of it
        (60.0, 0.1, 1200.0, 60.0),  # the cap holds
        (60.0, 0.0, 300.0, 60.0),  # no share bound
        (0.0, 0.1, 20.0, 2.0),  # no cap
        (60.0, 0.1, None, 60.0),  # the night's start unknown
        (0.0, 0.0, 20.0, 0.0),  # no bound at all
    ],
)
def test_the_probes_time_bound(cap: float, share: float, so_far: float | None, expected: float) -> None:
    assert candidate.probe_seconds(cap, share, so_far) == pytest.approx(expected)


def test_a_probe_is_not_started_when_it_would_end_past_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each question takes 1 s of a fake clock, so a probe (both states) takes 2 s: with the deadline 7 s away the
    fourth probe would end at 8 s, so three are asked and the bound is kept."""
    clock = [100.0]
    monkeypatch.setattr(retention.time, "monotonic", lambda: clock[0])
    probes = [retention.Probe(f"m{i}", "c", f"question {i}", ("41",), "values") for i in range(10)]

    def ask(q: str) -> str:
        clock[0] += 1.0
        return "41"

    out = retention.measure(probes, ask, ask, deadline=107.0, at_least=0)
    assert len(out) == 3 and clock[0] == 106.0


def test_a_passed_deadline_still_asks_the_first_probes() -> None:
    probes = [retention.Probe(f"m{i}", "c", f"question {i}", ("41",), "values") for i in range(30)]
    asked: list[str] = []

    def ask(q: str) -> str:
        asked.append(q)
        return "41"

    out = retention.measure(probes, ask, ask, deadline=0.0, at_least=5)  # a deadline long passed
    assert len(out) == 5 and len(asked) == 10 and all(o.kept_before and o.kept_after for o in out)
