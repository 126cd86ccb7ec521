"""A journal is rebuilt whenever its day's transcripts changed since it was built, however the last attempt ended:
an import killed while rebuilding, an import with --no-journals, a sensor tick that failed after writing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.journals.freshness import FINGERPRINT, LEGACY, day_fingerprint, stale_days, transcript_days
from memory_pipeline_tests.journals.test_transcript_import import CC_MAIN, CODEX

CODEX_DAY, CC_DAY = date(2026, 10, 15), date(2026, 10, 14)
WAIT_S = 600  # a journal run in a fresh process: seconds normally, minutes on a loaded machine


def test_a_day_is_stale_when_never_built_or_built_from_other_transcripts(tmp_path: Path) -> None:
    folder = tmp_path / "2026" / "10" / "14"
    folder.mkdir(parents=True)
    (folder / "0912-cc_a-x.md").write_text("one", encoding="utf-8")
    (tmp_path / "2026" / "10" / "15").mkdir()  # an empty day folder: nothing to journal
    now = transcript_days(tmp_path)
    assert list(now) == [CC_DAY]
    assert stale_days(now, {}) == [CC_DAY]  # never built
    assert stale_days(now, {CC_DAY: now[CC_DAY]}) == []
    assert stale_days(now, {CC_DAY: LEGACY}) == []  # built before fingerprints were recorded
    before = now[CC_DAY]
    (folder / "0930-cc_b-y.md").write_text("two", encoding="utf-8")
    assert day_fingerprint(folder) != before and stale_days(transcript_days(tmp_path), {CC_DAY: before}) == [CC_DAY]
    grown = day_fingerprint(folder)
    st = (folder / "0912-cc_a-x.md").stat()
    os.utime(folder / "0912-cc_a-x.md", ns=(st.st_atime_ns, st.st_mtime_ns + 1000))  # rewritten, same size
    assert day_fingerprint(folder) != grown


def test_a_sensor_tick_that_failed_after_writing_is_followed_by_one_that_requests_the_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_pipeline.defs.journals import agent_transcripts
    from memory_pipeline.resources import MemoryStoreResource

    home, watched = tmp_path / "ws", tmp_path / "sessions"
    watched.mkdir()
    shutil.copyfile(CODEX, watched / CODEX.name)
    an_hour_ago = time.time() - 3600
    os.utime(watched / CODEX.name, (an_hour_ago, an_hour_ago))
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    monkeypatch.setenv("MEMORY_PIPELINE_TRANSCRIPT_SOURCES", str(watched))
    resources = {"store": MemoryStoreResource(home=str(home))}
    instance = dg.DagsterInstance.ephemeral()

    def tick(cursor: str | None) -> dg.SensorResult:
        with dg.build_sensor_context(instance=instance, resources=resources, cursor=cursor) as context:
            result = agent_transcripts.agent_transcripts_sensor(context)
        assert isinstance(result, dg.SensorResult)
        return result

    def broken(*_args: object) -> object:
        raise OSError("disk full")

    monkeypatch.setattr(agent_transcripts, "commit_imported", broken)
    with pytest.raises(OSError, match="disk full"):  # the transcript is written, the tick fails: no cursor saved
        tick(None)
    assert len(list((home / "raw").rglob("*.md"))) == 1
    monkeypatch.undo()
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    monkeypatch.setenv("MEMORY_PIPELINE_TRANSCRIPT_SOURCES", str(watched))
    good = tick(None)  # finds the file again; its session is unchanged, but the day's journal was never built
    [request] = good.run_requests or []
    assert request.partition_key == CODEX_DAY.isoformat()
    assert tick(good.cursor).run_requests == []  # requested once for these transcripts, not every minute
    # the run built the journal from these transcripts (what the journals step records): nothing more to request
    fp = transcript_days(home / "raw" / "conversations")[CODEX_DAY]
    instance.report_runless_asset_event(
        dg.AssetMaterialization("journals", partition=CODEX_DAY.isoformat(), metadata={FINGERPRINT: fp})
    )
    assert tick(None).run_requests == []  # even from an empty cursor: Dagster's records say the journal is current


def _import(args: list[str], env: dict[str, str], crash: str | None = None) -> subprocess.CompletedProcess[str]:
    run_env = {**env, **({"MEMORY_PIPELINE_CRASH_AT": crash} if crash else {})}
    cmd = [sys.executable, "-m", "memory_pipeline.cli", "transcripts", "import", *args]
    return subprocess.run(cmd, env=run_env, capture_output=True, text=True, timeout=WAIT_S, check=False)


@pytest.mark.slow  # three imports in fresh processes, two of them running the journal job (~1 min)
def test_an_import_killed_while_rebuilding_journals_or_run_without_them_is_rebuilt_by_the_next_one(
    tmp_path: Path,
) -> None:
    home = tmp_path / "ws"
    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(tmp_path / "dagster_home"),
           "MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256", "MEMORY_PIPELINE_JOURNAL_GIT": "0"}  # fmt: skip
    killed = _import([str(CODEX), "--in-process"], env, crash="journals_step")
    assert killed.returncode == -9, killed.stderr  # SIGKILLed at the journal step, its transcript written
    journal = home / "knowledge" / "journal" / f"{CODEX_DAY}.md"
    assert not journal.exists()
    again = _import([str(CODEX), "--in-process"], env)
    assert again.returncode == 0, again.stderr
    assert "1 unchanged; nothing written" in again.stdout
    assert f"rebuilding the journals of {CODEX_DAY} (1 day(s) whose journal is older than its transcripts)" in (
        again.stdout
    )
    text = journal.read_text(encoding="utf-8")  # the session is in the journal now
    assert "cx_0199e0d24c1b7a30b5e42f8d9c6a1e57" in text and "Keep money in Decimal" in text
    # the SessionEnd hook path: an import with --no-journals, then a later call rebuilds that day
    src = tmp_path / "src"
    src.mkdir()
    shutil.copyfile(CC_MAIN, src / CC_MAIN.name)
    hook = _import([str(src), "--no-journals"], env)
    assert hook.returncode == 0 and f"reconstruct --from {CC_DAY} --to {CC_DAY}" in hook.stdout
    later = _import([str(CODEX), "--in-process"], env)  # nothing new in what it imports
    assert later.returncode == 0, later.stderr
    assert f"rebuilding the journals of {CC_DAY} (1 day(s) whose journal is older" in later.stdout
    assert "cc_3f2a9c1e7b4d4e8a9c2f5d6e7f8a9b0c" in (home / "knowledge" / "journal" / f"{CC_DAY}.md").read_text(
        encoding="utf-8"
    )
    done = _import([str(CODEX), "--in-process"], env)  # everything current: no run
    assert done.returncode == 0 and "rebuilding" not in done.stdout and "rolling up" not in done.stdout
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        daily = [r for r in instance.get_runs() if r.job_name == "journal_daily"]
        assert len(daily) == 3  # killed, the rebuild after it, the rebuild after --no-journals


@pytest.mark.slow  # two imports in fresh processes running the journal jobs (~40 s)
def test_an_import_killed_while_rolling_up_memory_md_has_the_week_rolled_up_by_the_next_one(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(tmp_path / "dagster_home"),
           "MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256", "MEMORY_PIPELINE_JOURNAL_GIT": "0"}  # fmt: skip
    killed = _import([str(CODEX), "--in-process"], env, crash="memory_md_step")
    assert killed.returncode == -9, killed.stderr  # the day's journal rebuilt, the week's roll-up not
    assert "Keep money in Decimal" in (home / "knowledge" / "journal" / f"{CODEX_DAY}.md").read_text(encoding="utf-8")
    memory_md = home / "knowledge" / "memory" / "MEMORY.md"
    assert not memory_md.exists()
    again = _import([str(CODEX), "--in-process"], env)
    assert again.returncode == 0, again.stderr
    assert "rebuilding" not in again.stdout  # the journal is current
    assert "rolling up MEMORY.md for the week(s) of 2026-10-11 (older than their journals)" in again.stdout
    assert "Keep money in Decimal" in memory_md.read_text(encoding="utf-8")
