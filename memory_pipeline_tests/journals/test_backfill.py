import shutil
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.cli import main
from memory_pipeline.journals.cli.reconstruct import RANGE_END_TAG, RANGE_START_TAG, RunOutcome, backfill
from memory_pipeline.settings import REPO_ROOT
from memory_pipeline.store import MemoryStore


def _workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git: bool = False) -> Path:
    """The committed sample transcripts in a fresh workspace, its own DAGSTER_HOME, the hashing embedder."""
    home = tmp_path / "ws"
    shutil.copytree(REPO_ROOT / "data" / "sample" / "raw", home / "raw")
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hashing-bow-256")
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "1" if git else "0")
    (tmp_path / "dagster_home").mkdir()
    shutil.copyfile(REPO_ROOT / "dagster.yaml", tmp_path / "dagster_home" / "dagster.yaml")  # pool limit 1
    return home


def _state(home: Path) -> tuple[dict[str, bytes], list[tuple]]:
    journals = {p.name: p.read_bytes() for p in sorted((home / "knowledge" / "journal").glob("*.md"))}
    with MemoryStore(home / "memory.duckdb").connect() as con:
        memories = con.execute("SELECT id, content, lifecycle, source, session_id FROM memories ORDER BY id").fetchall()
    return journals, memories


@pytest.mark.slow
def test_a_backfill_across_a_week_boundary_with_the_multiprocess_executor_is_lock_free_and_reproducible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _workspace(tmp_path, monkeypatch)
    args = ["reconstruct", "--from", "2026-09-19", "--to", "2026-09-21"]  # Saturday to Monday: two weeks
    assert main(args) == 0
    journals, memories = _state(home)
    assert len(journals) == 3 and memories
    assert (home / "knowledge" / "memory" / "MEMORY.md").exists()
    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs()
        assert len(runs) == 2  # one run over the 3 days, one over the 2 weeks touched (Sunday 13th, Sunday 20th)
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
        [daily] = [r for r in runs if r.job_name == "journal_daily"]
        [weekly] = [r for r in runs if r.job_name == "journal_weekly"]
        assert (daily.tags[RANGE_START_TAG], daily.tags[RANGE_END_TAG]) == ("2026-09-19", "2026-09-21")
        assert (weekly.tags[RANGE_START_TAG], weekly.tags[RANGE_END_TAG]) == ("2026-09-13", "2026-09-20")
        materialized = instance.fetch_materializations(dg.AssetKey("journals"), limit=100).records
        assert sorted(r.partition_key for r in materialized) == [f"2026-09-{d}" for d in range(19, 22)]
        records = instance.get_records_for_run(daily.run_id).records
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
    assert {m[3] for m in memories} == {"extract:decisions@3"}


def test_a_failing_day_splits_the_range_around_it() -> None:
    keys = [f"2026-09-{d}" for d in range(14, 19)]
    launched: list[list[str]] = []

    def launch(seg: list[str]) -> RunOutcome:
        launched.append(seg)
        bad = "2026-09-16"
        if bad in seg:
            return RunOutcome(f"run{len(launched)}", False, bad, f"sessions: {bad} failed (x.md): boom")
        return RunOutcome(f"run{len(launched)}", True)

    lines: list[str] = []
    done, failed, errors, run_ids = backfill(keys, launch, echo=lines.append)
    assert launched == [keys, keys[:2], keys[3:]]
    assert done == keys[:2] + keys[3:] and failed == ["2026-09-16"] and run_ids == ["run1", "run2", "run3"]
    assert errors == {"2026-09-16": "sessions: 2026-09-16 failed (x.md): boom"}
    assert lines[0] == "  2026-09-16: FAILED (run run1): sessions: 2026-09-16 failed (x.md): boom"
    # a failure that names no partition of the run fails the whole range, with no retry loop
    done, failed, errors, _ = backfill(keys, lambda seg: RunOutcome("r", False, None, "no store"), echo=lines.append)
    assert done == [] and failed == keys and set(errors.values()) == {"no store"}
    assert lines[-1] == "  2026-09-14..2026-09-18: FAILED (run r): no store"


@pytest.mark.slow
def test_reconstruct_rejects_a_duplicate_transcript_and_completes_its_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A second transcript with a stored session id is rejected naming both paths and counted as failed
    (exit 1); the genuine session keeps its memories and the duplicate's day goes on without it."""
    home = _workspace(tmp_path, monkeypatch)
    day14 = home / "raw" / "conversations" / "2026" / "09" / "14"
    copied = home / "raw" / "conversations" / "2026" / "09" / "16" / "2330-ses_0b9691b5-copied.md"
    shutil.copyfile(day14 / "1730-ses_0b9691b5-ops-the-tls-certificate-for-status.md", copied)
    args = ["reconstruct", "--from", "2026-09-14", "--to", "2026-09-18", "--in-process", "--no-weekly"]
    assert main(args) == 1
    out, err = capsys.readouterr()
    assert "5 day(s), 0 week(s) rebuilt; 1 failed" in out
    assert (
        "failed: transcript raw/conversations/2026/09/16/2330-ses_0b9691b5-copied.md:2: session_id 'ses_0b9691b5' is "
        "already used by raw/conversations/2026/09/14/1730-ses_0b9691b5-ops-the-tls-certificate-for-status.md"
    ) in err
    journals, memories = _state(home)
    assert sorted(journals) == [f"2026-09-{d}.md" for d in range(14, 19)]
    with MemoryStore(home / "memory.duckdb").connect() as con:
        owner = con.execute("SELECT day::VARCHAR, path FROM sessions WHERE session_id = 'ses_0b9691b5'").fetchall()
    genuine = "raw/conversations/2026/09/14/1730-ses_0b9691b5-ops-the-tls-certificate-for-status.md"
    assert owner == [("2026-09-14", genuine)]
    assert {m[2] for m in memories if m[4] == "ses_0b9691b5"} == {"active"}
    with dg.DagsterInstance.get() as instance:
        assert [r.status for r in instance.get_runs()] == [dg.DagsterRunStatus.SUCCESS]
    # the duplicate removed, the day reconstructs with nothing failed
    copied.unlink()
    assert main(["reconstruct", "--from", "2026-09-16", "--to", "2026-09-16", "--in-process", "--no-weekly"]) == 0
    assert _state(home)[1] == memories
