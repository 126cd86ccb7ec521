import shutil
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.cli import main
from memory_pipeline.definitions import REPO_ROOT
from memory_pipeline.store import MemoryStore


def _workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "ws"
    shutil.copytree(REPO_ROOT / "data" / "sample" / "raw", home / "raw")
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hashing-bow-256")
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    (tmp_path / "dagster_home").mkdir()
    shutil.copyfile(REPO_ROOT / "dagster.yaml", tmp_path / "dagster_home" / "dagster.yaml")  # pool limit 1
    return home


def _state(home: Path) -> tuple[dict[str, bytes], list[tuple]]:
    journals = {p.name: p.read_bytes() for p in sorted((home / "knowledge" / "journal").glob("*.md"))}
    with MemoryStore(home / "memory.duckdb").connect() as con:
        memories = con.execute("SELECT id, content, lifecycle, source, session_id FROM memories ORDER BY id").fetchall()
    return journals, memories


@pytest.mark.slow
def test_a_week_backfill_with_the_multiprocess_executor_is_lock_free_and_reproducible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _workspace(tmp_path, monkeypatch)
    args = ["reconstruct", "--from", "2026-09-14", "--to", "2026-09-20"]
    assert main(args) == 0
    journals, memories = _state(home)
    assert len(journals) == 7 and memories
    assert (home / "knowledge" / "memory" / "MEMORY.md").exists()
    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs()
        assert len(runs) == 9  # 7 days + 2 weeks touched (Sunday 13th, Sunday 20th)
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
        daily = [r for r in runs if r.job_name == "journal_daily"]
        records = instance.get_records_for_run(daily[0].run_id).records
        assert any(r.event_log_entry.dagster_event and r.event_log_entry.dagster_event.event_type_value
                   == "STEP_WORKER_STARTED" for r in records)  # steps ran in their own processes
        for run in runs:
            logs = " ".join(r.event_log_entry.message or "" for r in instance.get_records_for_run(run.run_id).records)
            assert "Could not set lock" not in logs
    # reconstruction with nothing changed: byte-identical journals, the same memory set
    assert main([*args, "--in-process"]) == 0
    assert _state(home) == (journals, memories)


def test_reconstruct_rejects_an_unknown_extractor_and_a_reversed_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    _workspace(tmp_path, monkeypatch)
    assert main(["reconstruct", "--from", "2026-09-14", "--to", "2026-09-14", "--extractor", "vibes"]) == 2
    assert "unknown extractor(s) vibes" in capsys.readouterr().err
    assert main(["reconstruct", "--from", "2026-09-15", "--to", "2026-09-14", "--in-process"]) == 2


def test_reconstruct_one_day_one_extractor_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _workspace(tmp_path, monkeypatch)
    assert main(["reconstruct", "--from", "2026-09-15", "--to", "2026-09-15", "--extractor", "decisions",
                 "--in-process", "--no-weekly"]) == 0
    journals, memories = _state(home)
    assert list(journals) == ["2026-09-15.md"]
    assert {m[3] for m in memories} == {"extract:decisions@1"}
