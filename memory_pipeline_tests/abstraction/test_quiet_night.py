"""A quiet night — nothing new to consolidate — is a PASS: after a night that compressed, on a store whose
memories form no cluster, and from the CLI on a fresh three-memory workspace (exit 0). A night that had
clusters to try and compressed none stays a FAIL. Real nights on a tiny workspace with the hashing embedder."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from memory_pipeline.abstraction import alerts
from memory_pipeline.cli import main
from memory_pipeline.definitions import defs_with
from memory_pipeline.embedding.spec import HASHING
from memory_pipeline.fleet import report as fleet_report
from memory_pipeline.resources import EmbedderResource
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline_tests.conftest import resources_for

T0 = datetime(2026, 9, 1, 9, 0)
# Three near-identical notes (they cluster under the hashing embedder) and two unrelated ones.
NOTES = [
    ("a1", "The staging database host is db-stage-1 in the Frankfurt region.", 0),
    ("a2", "The staging database host is db-stage-1 in the Frankfurt region, port 5432.", 1),
    ("a3", "The staging database host is db-stage-1 in the Frankfurt region (port 5432).", 2),
    ("b1", "Bought oat milk and coffee beans for the office kitchen.", 3),
    ("c1", "The quarterly tax filing is due on the fifteenth.", 4),
]


def _workspace(tmp_path: Path, notes: list[tuple[str, str, int]]) -> Path:
    home = tmp_path / "ws"
    home.mkdir()
    lines = [{"id": i, "content": t, "created_at": (T0 + timedelta(days=d)).isoformat()} for i, t, d in notes]
    (tmp_path / "notes.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    import_jsonl(MemoryStore(home / "memory.duckdb"), tmp_path / "notes.jsonl")
    return home


def _night(home: Path, **engine: Any) -> tuple[dg.ExecuteInProcessResult, dict[str, Any]]:
    resources = resources_for(home, **engine) | {"embedder": EmbedderResource(model=HASHING)}
    result = defs_with(resources).resolve_job_def("nightly_consolidation").execute_in_process(
        instance=dg.DagsterInstance.ephemeral(), raise_on_error=False
    )
    assert result.success
    report = json.loads((home / "reports" / f"compression-{result.run_id}.json").read_text())
    return result, report


def _health(result: dg.ExecuteInProcessResult) -> bool:
    [check] = [c for c in result.get_asset_check_evaluations() if c.check_name == "report_health"]
    return check.passed


def _fleet_verdict(report: dict[str, Any]) -> dict[str, Any]:
    """The fleet report's numbers for one agent whose only night is this one, registered three days ago."""
    now = datetime.now(UTC)
    night = fleet_report.Night(report["run_id"], now, report["verdict"], report["token_reduction_pct"], 0.0, 1.0,
                               report["verdict_reason"] or "")  # fmt: skip
    row = fleet_report.agent_row("a", [night], now - timedelta(days=3), now)
    return fleet_report.summary([row])


def test_after_a_night_that_compressed_a_quiet_night_is_a_pass(tmp_path: Path) -> None:
    home = _workspace(tmp_path, NOTES)
    first, report = _night(home, similarity_threshold=0.6)
    assert report["verdict"] == "PASS" and report["clusters_compressed"] >= 1, report

    second, quiet = _night(home, similarity_threshold=0.6)
    assert quiet["clusters_compressed"] == 0
    assert quiet["verdict"] == "PASS" and quiet["verdict_reason"].startswith("nothing new to consolidate"), quiet
    assert _health(second)  # green in the report: no band off for a night with nothing to do
    assert alerts.from_report(second.run_id, quiet).priority == "info"  # no action alert
    numbers = _fleet_verdict(quiet)
    assert numbers["agents_pass"] == 1 and numbers["agents_fail"] == 0 and numbers["agents_stale"] == 0


def test_a_night_with_clusters_to_try_that_compresses_none_is_a_fail(tmp_path: Path) -> None:
    home = _workspace(tmp_path, NOTES)
    result, report = _night(home, similarity_threshold=0.6, min_compression_ratio=50.0)  # every cluster refused
    assert report["clusters_found"] >= 1 and report["clusters_compressed"] == 0
    assert report["verdict"] == "FAIL" and "no cluster was compressed" in report["verdict_reason"], report
    assert not _health(result)
    assert alerts.from_report(result.run_id, report).priority == "action"
    assert _fleet_verdict(report)["agents_fail"] == 1


def test_a_fresh_workspace_with_three_memories_runs_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    home = _workspace(tmp_path, NOTES[2:])
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", HASHING)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    assert main(["run"]) == 0
    out = capsys.readouterr().out
    assert "COMPRESSION RUN PASS" in out and "nothing new to consolidate" in out, out


RETRO = [("retro-1", "The sprint retro is on Thursdays at 15:00.", 0),
         ("retro-2", "The sprint retro is on Thursdays at 16:00.", 14),
         ("retro-3", "The sprint retro is on Thursdays at 16:30.", 30),
         ("note-1", "Buy coffee beans for the office kitchen.", 31)]  # fmt: skip


def test_a_night_that_only_tells_a_facts_versions_apart_is_a_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three times of one retro and a note: the night marks the two older times replaced, and its one cluster
    (the three versions) has nothing left to distil. It did its work: PASS, exit 0, no action alert."""
    home = _workspace(tmp_path, RETRO)
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", HASHING)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    assert main(["run", "--as-of", "2026-11-01T03:30:00Z"]) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert "COMPRESSION RUN PASS" in out, out
    (path,) = (home / "reports").glob("compression-*.json")
    report = json.loads(path.read_text())
    assert report["supersessions"] == 2 and report["clusters_compressed"] == 0, report
    assert report["verdict_reason"] == "marked 2 older values of a fact as replaced; no cluster compressed"
    assert alerts.from_report(report["run_id"], report).priority == "info"
