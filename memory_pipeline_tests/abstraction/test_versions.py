"""Versions of one fact through a night: the older values marked superseded (never archived for it), the
runaway check stopping a night before anything is marked, a rollback, an operator's undo, and a value stated
again becoming current."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from memory_pipeline.abstraction.versions import Dated, plan, present_first
from memory_pipeline.cli import main
from memory_pipeline.definitions import defs_with
from memory_pipeline.distillation.distill import REPLACED, Member, OfflineDistiller
from memory_pipeline.embedding.spec import HASHING
from memory_pipeline.resources import EmbedderResource
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline.store.remember import remember
from memory_pipeline.store.rollback import rollback
from memory_pipeline.store.spool import build_record
from memory_pipeline.store.validity import FactRow, list_superseded
from memory_pipeline_tests.conftest import resources_for

T0 = datetime(2026, 9, 1, 9, 0)
FACTS = [  # (id, text, days after T0)
    ("r1", "Per-trade risk cap is 2%.", 0),
    ("r2", "Per-trade risk cap is now 1.5%.", 13),
    ("r3", "Per-trade risk cap is now 1 percent.", 49),
    ("d1", "Risk per day is 3%.", 20),  # a look-alike: another fact
    ("s1", "The daily standup is at 09:30.", 5),
    ("s2", "The daily standup moved to 10:15.", 30),
    ("h1", "The staging host is db-stage-1.", 2),
    ("h2", "The production host is db-prod-2.", 40),  # a look-alike
    ("e1", "Closed the TIA long at +$701: took profit into resistance.", 10),  # events, not versions
    ("e2", "Closed the TIA long at +$504: took profit into resistance.", 12),
]


def _workspace(tmp_path: Path, facts: list[tuple[str, str, int]] = FACTS) -> Path:
    home = tmp_path / "ws"
    home.mkdir()
    lines = [{"id": i, "content": t, "created_at": (T0 + timedelta(days=d)).isoformat()} for i, t, d in facts]
    (tmp_path / "facts.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    import_jsonl(MemoryStore(home / "memory.duckdb"), tmp_path / "facts.jsonl")
    return home


def _night(home: Path, instance: dg.DagsterInstance | None = None, **engine: Any) -> dg.ExecuteInProcessResult:
    resources = resources_for(home, **engine) | {"embedder": EmbedderResource(model=HASHING)}
    return defs_with(resources).resolve_job_def("nightly_consolidation").execute_in_process(
        instance=instance or dg.DagsterInstance.ephemeral(), raise_on_error=False
    )


def _validity(home: Path) -> dict[str, tuple[Any, ...]]:
    with MemoryStore(home / "memory.duckdb").connect() as con:
        rows = con.execute("SELECT id, superseded_by, valid_until, lifecycle FROM memories").fetchall()
    return {r[0]: r[1:] for r in rows}


def test_a_night_marks_older_values_superseded_and_a_rollback_takes_them_back(tmp_path: Path) -> None:
    home = _workspace(tmp_path)
    result = _night(home)
    assert result.success
    v = _validity(home)
    assert v["r1"][:2] == ("r2", T0 + timedelta(days=13)) and v["r2"][:2] == ("r3", T0 + timedelta(days=49))
    assert v["s1"][:2] == ("s2", T0 + timedelta(days=30))
    assert all(v[i][0] is None for i in ("r3", "d1", "s2", "h1", "h2", "e1", "e2"))  # current, look-alikes, events
    assert {v[i][2] for i in ("r1", "r2", "s1")} <= {"active", "archived"}  # nothing archived for being superseded
    [mat] = [m for m in result.asset_materializations_for_node("validity_updates")]
    assert mat.metadata["superseded"].value == 3
    [check] = [c for c in result.get_asset_check_evaluations() if c.check_name == "supersessions_bounded"]
    assert check.passed
    assert [r.id for r in list_superseded(MemoryStore(home / "memory.duckdb"))] == ["r1", "s1", "r2"]
    [report] = [m for m in result.asset_materializations_for_node("report")]
    assert report.metadata["supersessions"].value == 3
    saved = json.loads((home / "reports" / f"compression-{result.run_id}.json").read_text())
    assert saved["supersessions"] == 3

    _id, done = rollback(MemoryStore(home / "memory.duckdb"), [result.run_id], dry_run=False)
    assert done.supersessions == 3
    assert all(row[0] is None and row[1] is None for row in _validity(home).values())
    again = _night(home)  # a rollback is not an undo: the next night may supersede them again
    assert again.success and _validity(home)["r1"][0] == "r2"


def test_a_runaway_night_is_stopped_before_anything_is_marked(tmp_path: Path) -> None:
    many = [(f"p{i}", f"The parking spot is number {i}.", i) for i in range(1, 14)]
    home = _workspace(tmp_path, many)
    instance = dg.DagsterInstance.ephemeral()  # the blocked run's lease is released when this instance sees it end
    result = _night(home, instance, max_superseded_share=0.25)
    [check] = [c for c in result.get_asset_check_evaluations() if c.check_name == "supersessions_bounded"]
    assert not check.passed and "12 supersessions" in str(check.description)
    assert "validity_updates" not in {m.asset_key.path[-1] for m in result.get_asset_materialization_events()}
    assert all(row[0] is None for row in _validity(home).values())
    assert _night(home, instance, max_superseded_share=1.0).success and _validity(home)["p1"][0] == "p2"


def test_the_operator_undoes_one_and_no_night_redoes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    home = _workspace(tmp_path)
    assert _night(home).success
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", HASHING)
    assert main(["superseded", "list"]) == 0
    assert "s1\tvalid 2026-09-06 → 2026-10-01" in capsys.readouterr().out
    assert main(["superseded", "undo", "s1", "--by", "tester"]) == 0
    assert _validity(home)["s1"][0] is None
    assert _night(home).success and _validity(home)["s1"][0] is None
    assert main(["superseded", "undo", "s1"]) == 2
    assert "not superseded" in capsys.readouterr().err


def test_a_value_stated_again_is_current_again(tmp_path: Path) -> None:
    home = _workspace(tmp_path)
    assert _night(home).success
    again = remember(home, build_record("The daily standup is at 09:30.", memory_id="s1"))
    assert again.restated and again.stored and not again.created
    v = _validity(home)
    assert v["s1"][0] is None and v["s2"][0] == "s1"
    assert _night(home).success and _validity(home)["s1"][0] is None  # the night agrees: s1 was stated last


def test_plan_follows_the_order_values_were_stated() -> None:
    rows = [FactRow("a", "Internet bill is $80 a month.", T0, None),
            FactRow("b", "Internet bill went up to $95 a month.", T0 + timedelta(days=30), None),
            FactRow("c", "Internet bill is $80 a month.", T0 + timedelta(days=60), None)]  # fmt: skip
    assert [(s.memory_id, s.superseded_by) for s in plan(rows).supersessions] == [("a", "b"), ("b", "c")]
    assert [(s.memory_id, s.superseded_by) for s in plan(rows, {("a", "b")}).supersessions] == [("b", "c")]


def test_a_summary_over_versions_states_the_present_first() -> None:
    members = [
        Dated("r1", "Per-trade risk cap is 2%.", T0, T0 + timedelta(days=13), "r2"),
        Dated("r2", "Per-trade risk cap is now 1.5%.", T0 + timedelta(days=13), T0 + timedelta(days=49), "r3"),
        Dated("r3", "Per-trade risk cap is now 1%.", T0 + timedelta(days=49), None, None),
        Dated("x", "Risk per day is 3%.", T0, None, None),
    ]
    texts = present_first(members)
    assert texts["r3"] == ("Per-trade risk cap is now 1% (since 2026-10-20; was 1.5% 2026-09-14 → 2026-10-20, "
                           "2% 2026-09-01 → 2026-09-14).")  # fmt: skip
    assert texts["r1"] == REPLACED + "Per-trade risk cap is 2%." and texts["r2"].startswith(REPLACED)
    assert texts["x"] == "Risk per day is 3%."
    members = [Member(i, t, 1.0) for i, t in texts.items()]
    night = OfflineDistiller().distill(members, "facts", ("2026-09-01", "2026-10-20"))
    assert night.abstraction.startswith(texts["r3"]) and "[4 memories, " in night.abstraction
    assert "Also" not in night.abstraction  # earlier values stated with their ranges, never as a bare list


def test_a_value_said_to_start_later_supersedes_the_older_from_its_start() -> None:
    rows = [FactRow("old", "Flat rent is £1,150 a month.", datetime(2026, 8, 1, 9), None),
            FactRow("new", "Flat rent is £1,250 a month from January.", datetime(2026, 11, 10, 9), None),
            FactRow("std", "Daily standup is at 9:30.", T0, None),
            FactRow("moved", "Standup moved to 10.", T0 + timedelta(days=13), None)]  # fmt: skip
    made = {s.memory_id: (s.superseded_by, s.valid_until) for s in plan(rows).supersessions}
    assert made == {"old": ("new", datetime(2027, 1, 1)), "std": ("moved", T0 + timedelta(days=13))}


def test_a_summary_dates_a_value_said_to_start_later_from_its_start() -> None:
    said, start = datetime(2026, 11, 10, 9), datetime(2027, 1, 1)
    members = [Dated("old", "Flat rent is £1,150 a month.", datetime(2026, 8, 1), start, "new"),
               Dated("new", "Flat rent is £1,250 a month from January.", said, None, None)]  # fmt: skip
    assert present_first(members)["new"] == ("Flat rent is £1,250 a month from January (since 2027-01-01; was "
                                             "£1,150 2026-08-01 → 2027-01-01).")  # fmt: skip
    outside = [Dated("old", "Flat rent is £1,150 a month.", datetime(2026, 8, 1), start, "elsewhere")]
    assert present_first(outside, now=datetime(2026, 12, 1))["old"].startswith("(holds until 2027-01-01) ")
    assert present_first(outside, now=datetime(2027, 2, 1))["old"].startswith("(no longer holds since 2027-01-01) ")
