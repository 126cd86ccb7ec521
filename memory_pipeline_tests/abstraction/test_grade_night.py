"""Distinct facts are not a pattern: a night over hundreds of look-alike but distinct facts ("worker wN times
out after X seconds") — which single linkage chains into one component — caps its clusters and refuses every
summary that cannot say what its members said: nothing is archived, even with the retention probes off, and the
night's grade says why (never "retention 1.000 ok")."""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path

import dagster as dg

from memory_pipeline.cli import main
from memory_pipeline.definitions import defs_with
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline_tests.conftest import SAMPLE_NOW, resources_for

FACTS = 600


def _workspace(tmp_path: Path) -> Path:
    rng = random.Random(7)
    home = tmp_path / "ws"
    home.mkdir()
    lines = [{"id": f"w{i}", "content": f"Worker w{i} times out after {rng.randint(10, 59)} seconds.",
              "created_at": (SAMPLE_NOW - timedelta(days=3 + i % 20, minutes=i)).isoformat()}
             for i in range(FACTS)]  # fmt: skip
    (tmp_path / "facts.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    import_jsonl(MemoryStore(home / "memory.duckdb"), tmp_path / "facts.jsonl")
    return home


def test_a_night_of_distinct_facts_archives_nothing_and_its_grade_says_why(tmp_path: Path, monkeypatch,
                                                                                capsys) -> None:  # fmt: skip
    home = _workspace(tmp_path)
    resources = resources_for(home, similarity_threshold=0.7)  # the shipped MiniLM default; probes off
    result = defs_with(resources).resolve_job_def("nightly_consolidation").execute_in_process(
        instance=dg.DagsterInstance.ephemeral(), raise_on_error=False
    )
    assert result.success  # every distillation refused: nothing to archive, so nothing to stop
    [grade] = [c for c in result.get_asset_check_evaluations() if c.check_name == "abstraction_grade"]
    assert grade.passed and grade.metadata["mostly_refused"].value is True
    assert grade.metadata["distillations"].value == grade.metadata["refused"].value >= 5
    with MemoryStore(home / "memory.duckdb").connect() as con:
        sizes = [n for (n,) in con.execute("SELECT member_count FROM compression_log").fetchall()]
        lifecycle = dict(con.execute("SELECT lifecycle, count(*) FROM memories GROUP BY 1").fetchall())
    assert sizes and max(sizes) <= 40  # single linkage chains them all; the cap splits the chain
    assert lifecycle == {"active": FACTS}  # nothing archived, no summary written
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "most distillations refused" in out and "its clusters hold unlike memories" in out
    assert "retention 1.000" not in out.replace("retention     ", "retention ")
