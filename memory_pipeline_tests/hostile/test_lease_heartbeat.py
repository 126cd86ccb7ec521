"""The store lease's heartbeat: a night killed on another host frees the store once its heartbeat stops, not when
its lease expires hours later; a live night on another host is waited for, by name.

The decision is tested as plain functions (`stale_reason`, `heartbeat_gone`, `holder_alive`), the beat as a real
thread, the sensor on a real instance, and the whole story with real processes under two hostnames."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.faults import HOLD_ENV, HOLD_LIMIT_ENV
from memory_pipeline.operator.recovery import PID_TAG, Holder, stale_reason
from memory_pipeline.settings import SettingsError, env_overrides
from memory_pipeline.store import MemoryStore, invariants
from memory_pipeline.store import lease as lease_mod
from memory_pipeline.store.lease import Beat, Lease
from memory_pipeline_tests.hostile.test_run_cases import AS_OF, POOL, base_home, dead_pid  # noqa: F401 - fixture

NOW = datetime(2026, 11, 1, 12)
HB_ENV = "MEMORY_PIPELINE_LEASE_HEARTBEAT_SECONDS"


def naive_utc(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC).replace(tzinfo=None)


# --------------------------------------------------------------------------------------- the decision, pure


@pytest.mark.parametrize(
    ("beat", "reason"),
    [
        (dict(host="host-a", age_s=10), None),  # another host, beating: alive, however old its lease
        (dict(host="host-a", age_s=89), None),
        (dict(host="host-a", age_s=91), "its heartbeat from host host-a stopped at 2026-11-01 11:58:29 UTC, 91 s ago "
                                        "(stale after 6 beats of 15 s)"),
        (dict(host="host-a", age_s=13, every_s=2), "stale after 6 beats of 2 s"),  # the beating host's interval
        (dict(host="host-a", age_s=0, expires_in_h=-1), "its store lease from host host-a expired at"),  # TTL bound
        (dict(host="here", age_s=3600, pid="self"), None),  # this host: the beating process decides, not the age
        (dict(host="here", age_s=0, pid="dead"), "its process (pid"),  # ... at once
        (None, None),  # no heartbeat (an older holder) on another host: trusted until the lease expires, as before
    ],
)
def test_stale_reason_with_a_heartbeat(beat: dict | None, reason: str | None) -> None:
    expires = NOW + timedelta(hours=(beat or {}).get("expires_in_h", 5))
    held = Lease("consolidation", "r", 4242, "host-a", NOW - timedelta(hours=1), expires)
    the_beat = None
    if beat is not None:
        pid = os.getpid() if beat.get("pid") == "self" else dead_pid() if beat.get("pid") == "dead" else 4242
        at = NOW - timedelta(seconds=beat["age_s"])
        the_beat = Beat("r", beat["host"], pid, at, beat.get("every_s", 15.0))
    holder = Holder("r", None, NOW - timedelta(hours=1), None, None, held, the_beat)
    got = stale_reason(holder, this_host="here", now=NOW, ttl=timedelta(hours=6))
    assert (got is None) if reason is None else (got is not None and reason in got), got


def test_the_waiting_line_names_the_heartbeat() -> None:
    held = Lease("consolidation", "r", 4242, "host-a", NOW, NOW + timedelta(hours=5))
    holder = Holder("r", None, NOW, 4242, "host-a", held, Beat("r", "host-a", 4242, NOW - timedelta(seconds=7), 15))
    assert holder.describe(now=NOW) == "run r (pid 4242 on host-a, since 2026-11-01 12:00:00 UTC, heartbeat from " \
                                       "host-a 7 s ago)"


def test_a_night_takes_over_a_lease_whose_heartbeat_stopped_and_not_a_beating_one(tmp_path: Path) -> None:
    """What `exact_duplicates` decides (`holder_alive` with the file the holder beats into) on a real store."""
    store = MemoryStore(tmp_path / "memory.duckdb")
    store.migrate()
    now = datetime.now(UTC).replace(tzinfo=None)
    with store.transaction() as con:
        lease_mod.acquire(con, "night-a", now, timedelta(hours=6))
        con.execute("UPDATE leases SET host = 'host-a', pid = 4242")

    def alive(held: Lease) -> bool:
        return lease_mod.holder_alive(held, lease_mod.read_beat(store.path, held.holder))

    def write(age_s: float) -> None:
        at = (now - timedelta(seconds=age_s)).isoformat()
        path = lease_mod.beat_path(store.path, "night-a")
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps({"holder": "night-a", "host": "host-a", "pid": 4242, "at": at, "every_s": 15}))

    write(age_s=5)
    with store.transaction() as con, pytest.raises(lease_mod.LeaseBusy):
        lease_mod.acquire(con, "night-b", now, timedelta(hours=6), alive)
    write(age_s=95)
    with store.transaction() as con:
        taken = lease_mod.acquire(con, "night-b", now, timedelta(hours=6), alive)
    assert taken.holder == "night-b"
    lease_mod.clear_beats(store.path, keep="night-b")  # what the night does next: the dead holder's beat goes
    assert not lease_mod.beat_path(store.path, "night-a").exists()


# ------------------------------------------------------------------------------------------- the beat itself


@dg.op
def whole_night_probe(context) -> bool:  # unannotated: Dagster reads the annotation, a string here
    from memory_pipeline.defs.abstraction.common import runs_whole_night_here

    return runs_whole_night_here(context)


@dg.op
def next_step(first: bool) -> bool:
    return first


@dg.job
def probe_job() -> None:
    next_step(whole_night_probe())


def test_only_a_process_that_runs_the_whole_run_beats_for_it() -> None:
    """The in-process executor (the CLI's) runs every step here: its heartbeat speaks for the run. The
    multiprocess executor (the UI's default) gives each step a process of its own, gone between steps: none beats."""
    assert probe_job.execute_in_process().output_for_node("whole_night_probe") is True
    with dg.instance_for_test() as instance, dg.execute_job(dg.reconstructable(probe_job), instance=instance) as result:
        assert result.success and result.output_for_node("whole_night_probe") is False


def wait_for(what: str, done: Callable[[], bool], limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while not done():
        assert time.monotonic() < deadline, f"not {what} within {limit_s} s"
        time.sleep(0.02)


def test_the_heartbeat_beats_until_released_and_stops_when_its_file_goes(tmp_path: Path) -> None:
    store_path = tmp_path / "memory.duckdb"
    until = datetime.now(UTC).replace(tzinfo=None) + timedelta(hours=1)
    beat = lease_mod.start_heartbeat(store_path, "night-a", 0.05, until)
    first = lease_mod.read_beat(store_path, "night-a")
    assert first is not None and (first.host, first.pid, first.every_s) == (socket.gethostname(), os.getpid(), 0.05)
    wait_for("a second beat", lambda: (lease_mod.read_beat(store_path, "night-a") or first).at > first.at)
    store = MemoryStore(store_path)
    store.migrate()
    with store.transaction() as con:
        con.execute("INSERT INTO leases VALUES ('consolidation', 'night-a', 1, 'h', ?, ?)", [until, until])
        assert lease_mod.release(con, "night-a")
    assert not beat._thread.is_alive()  # released: the beat stopped with it, and its file is gone
    assert lease_mod.read_beat(store_path, "night-a") is None

    orphan = lease_mod.Heartbeat(store_path, "night-b", 0.05, until).start()
    half = store_path.parent / lease_mod.HEARTBEAT_DIR / ".consolidation.night-b.json.host-a.1.2.tmp"
    half.write_text("{")  # a write killed half-way
    lease_mod.clear_beats(store_path, keep="night-c")  # another night took the lease over
    assert not half.exists()
    wait_for("the taken-over beat to stop", lambda: not orphan._thread.is_alive())
    assert lease_mod.read_beat(store_path, "night-b") is None

    past = lease_mod.Heartbeat(store_path, "night-d", 0.05, datetime.now(UTC).replace(tzinfo=None)).start()
    wait_for("a beat past its lease's expiry to stop", lambda: not past._thread.is_alive())


@pytest.mark.parametrize(("value", "message"), [
    ("0.5", f"{HB_ENV}='0.5': must be ≥ 1"), ("often", f"{HB_ENV}='often': expected float"),
])
def test_the_heartbeat_setting_is_checked(value: str, message: str) -> None:
    assert env_overrides({HB_ENV: "20"})["lease_heartbeat_seconds"] == 20.0
    with pytest.raises(SettingsError, match="^" + message.replace("(", r"\(") + "$"):
        env_overrides({HB_ENV: value})


def test_the_sensor_frees_the_slot_of_a_run_whose_heartbeat_stopped_on_another_host(
    base_home: Path, tmp_path: Path  # noqa: F811 - the fixture
) -> None:
    from memory_pipeline.defs.abstraction.sensors import free_stale_store_slots
    from memory_pipeline.resources import EngineConfig, MemoryStoreResource

    home, dagster_home = tmp_path / "workspace", tmp_path / "dh"
    shutil.copytree(base_home, home)
    dagster_home.mkdir()
    now = datetime.now(UTC).replace(tzinfo=None)
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        instance.event_log_storage.set_concurrency_slots(POOL, 1)
        instance.add_run(dg.DagsterRun(job_name="nightly_consolidation", run_id="gone-elsewhere",
                                       status=dg.DagsterRunStatus.STARTED, tags={PID_TAG: "4242"}))
        assert instance.event_log_storage.claim_concurrency_slot(POOL, "gone-elsewhere", "memory_writer").is_claimed
        with MemoryStore(home / "memory.duckdb").transaction() as con:
            con.execute("INSERT INTO leases VALUES ('consolidation', 'gone-elsewhere', 4242, 'host-a', ?, ?)",
                        [now - timedelta(minutes=10), now + timedelta(hours=5)])
        path = lease_mod.beat_path(home / "memory.duckdb", "gone-elsewhere")
        path.parent.mkdir()
        at = (now - timedelta(seconds=100)).isoformat()
        path.write_text(json.dumps({"holder": "gone-elsewhere", "host": "host-a", "pid": 4242, "at": at,
                                    "every_s": 15}))
        context = dg.build_sensor_context(
            instance=instance, resources={"store": MemoryStoreResource(home=str(home)), "engine": EngineConfig()},
        )
        skip = free_stale_store_slots(context)
        assert isinstance(skip, dg.SkipReason) and skip.skip_message.startswith("freed 1 slot holder(s)")
        assert instance.event_log_storage.get_concurrency_info(POOL).active_run_ids == set()
        (failed,) = instance.all_logs("gone-elsewhere", of_type=dg.DagsterEventType.RUN_FAILURE)
        assert "its heartbeat from host host-a stopped at" in (failed.dagster_event.message or "")


# ------------------------------------------------------------- a night on another host (real processes)


def uts_prefix() -> list[str] | None:
    """`unshare` into a new UTS namespace (a hostname of our own), as root or in a user namespace; None if neither
    works here."""
    for prefix in (["unshare", "--uts"], ["unshare", "--user", "--map-root-user", "--uts"]):
        try:
            ok = subprocess.run([*prefix, "hostname", "probe-host"], capture_output=True, timeout=20).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return prefix
    return None


def cli_on_host(host: str, prefix: list[str], env: dict[str, str], logs: Path, *argv: str) -> subprocess.Popen[bytes]:
    """`memory-pipeline …` in a process whose hostname is `host` (what a container restart on another node sees),
    in a process group of its own; its stdout and stderr go to `logs`/<host>.out|.err (files: a pipe nobody reads
    while we wait could fill and block it)."""
    script = 'hostname "$0" && exec "$@"'
    with (logs / f"{host}.out").open("wb") as out, (logs / f"{host}.err").open("wb") as err:
        return subprocess.Popen(
            [*prefix, "sh", "-c", script, host, sys.executable, "-m", "memory_pipeline.cli", *argv],
            env=env, stdout=out, stderr=err, start_new_session=True,
        )


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the process group of a CLI process we started, whatever the test's outcome."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=CROSS_HOST_WAIT_S)


def wait_until(what: str, done: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path) -> None:
    """Poll `done` (a file's content, a record) until it holds; fail at once if `proc` exits first, or after
    CROSS_HOST_WAIT_S: a bound for a Python + Dagster start on two busy cores, not a target."""
    deadline = time.monotonic() + CROSS_HOST_WAIT_S
    while not done():
        assert proc.poll() is None, f"exited {proc.returncode} before {what}: {log.read_text(errors='replace')[-3000:]}"
        assert time.monotonic() < deadline, f"not {what} in {CROSS_HOST_WAIT_S} s: {log.read_text(errors='replace')}"
        time.sleep(0.2)


CROSS_HOST_WAIT_S = 600  # every wait on a CLI process below: minutes, far above the seconds each step needs


@pytest.mark.slow
def test_a_night_killed_on_another_host_frees_the_store_once_its_heartbeat_stops(
    base_home: Path, tmp_path: Path  # noqa: F811 - the fixture
) -> None:
    """Host A's night parks after writing its pending summaries, alive and beating; host B's night waits for it,
    naming it and its heartbeat; A is SIGKILLed (its heartbeat stops mid-night); B frees A's slot once the heartbeat
    is stale, marks A failed for it, reconciles A's pending rows and runs. A's lease has hours to go throughout."""
    prefix = uts_prefix()
    if prefix is None:
        pytest.skip("no UTS namespace here (needs root or user namespaces) to run under another hostname")
    home, dagster_home, holds = tmp_path / "workspace", tmp_path / "dagster_home", tmp_path / "holds"
    shutil.copytree(base_home, home)
    holds.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "MEMORY_PIPELINE_WEBHOOK_URL")}
    env |= {
        "MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(dagster_home), "PYTHONPATH": os.pathsep.join(sys.path),
        "MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256", "MEMORY_PIPELINE_PROGRESS": "log",
        "MEMORY_PIPELINE_POOL_WAIT_MINUTES": "10",  # B's own bound, far above A's stale window
        HB_ENV: os.environ.get(HB_ENV, "3"),  # a short beat keeps the test short; set it to measure another
    }
    every_s = float(env[HB_ENV])
    night_a = cli_on_host("host-a", prefix, {**env, HOLD_ENV: f"night_phase1:{holds}", HOLD_LIMIT_ENV: "900"},
                          tmp_path, "run", "--as-of", AS_OF)
    night_b = None
    store = MemoryStore(home / "memory.duckdb")
    try:
        wait_until("A parked with its pending summaries", (holds / "night_phase1.reached").exists, night_a,
                   tmp_path / "host-a.err")
        with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
            (run_a,) = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
        with store.connect() as con:
            held = lease_mod.current(con)
            assert invariants.pending_rows(con)
        assert held is not None and held.holder == run_a.run_id and held.host == "host-a"
        first = lease_mod.read_beat(store.path, run_a.run_id)
        assert first is not None and first.host == "host-a" and first.every_s == every_s

        night_b = cli_on_host("host-b", prefix, env, tmp_path, "run", "--as-of", AS_OF)
        err_b = tmp_path / "host-b.err"
        waiting = (f"waiting for the store's `memory_store` slot, held by run {run_a.run_id} (pid "
                   f"{run_a.tags[PID_TAG]} on host-a, since ")
        wait_until("B waiting for A", lambda: waiting in err_b.read_text(errors="replace"), night_b, err_b)
        line = next(x for x in err_b.read_text().splitlines() if waiting in x)
        assert ", heartbeat from host-a " in line, line
        with dg.DagsterInstance.from_config(str(dagster_home)) as instance:  # B left the live holder alone
            assert instance.get_run_by_id(run_a.run_id).status == dg.DagsterRunStatus.STARTED
        def beat_again() -> bool:
            beat = lease_mod.read_beat(store.path, run_a.run_id)
            return beat is not None and beat.at > first.at

        wait_until("A beating again while B waits", beat_again, night_a, tmp_path / "host-a.err")
        assert "freed the memory_store slot" not in err_b.read_text()  # B still waits for the live A
        os.killpg(night_a.pid, signal.SIGKILL)  # the heartbeat stops mid-night
        killed_at = datetime.now(UTC).replace(tzinfo=None)
        night_a.wait(timeout=CROSS_HOST_WAIT_S)
        last = lease_mod.read_beat(store.path, run_a.run_id)
        assert last is not None
        night_b.wait(timeout=CROSS_HOST_WAIT_S)  # bounded: A's stale window (seconds), then the night itself
    finally:
        stop_group(night_a)
        if night_b is not None:
            stop_group(night_b)
    out, err = (tmp_path / "host-b.out").read_text(), (tmp_path / "host-b.err").read_text()
    assert night_b.returncode == 0, err[-3000:]
    assert "Traceback" not in out + err
    assert f"freed the memory_store slot of run {run_a.run_id}: its heartbeat from host host-a stopped at" in err
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        # from the instance's records: A was failed for its stopped heartbeat, not before it was stale, and B's
        # night started only after that
        assert instance.get_run_by_id(run_a.run_id).status == dg.DagsterRunStatus.FAILURE
        (failed,) = instance.all_logs(run_a.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
        assert "its heartbeat from host host-a stopped at" in (failed.dagster_event.message or ""), failed
        assert naive_utc(failed.timestamp) >= last.at + last.stale_after
        (run_b,) = instance.get_run_records(filters=dg.RunsFilter(tags={"memory_pipeline/host": "host-b"}))
        assert run_b.dagster_run.status == dg.DagsterRunStatus.SUCCESS
        assert run_b.start_time is not None and run_b.start_time >= failed.timestamp
        assert instance.event_log_storage.get_concurrency_info(POOL).active_run_ids == set()
    print(f"\nheartbeat {every_s:g} s: SIGKILL → A failed {naive_utc(failed.timestamp) - killed_at}, "
          f"→ B's night started {naive_utc(run_b.start_time) - killed_at}, finished "
          f"{naive_utc(run_b.end_time or 0) - killed_at} (last beat {killed_at - last.at} before the kill)")
    report = json.loads((home / "reports" / f"compression-{run_b.dagster_run.run_id}.json").read_text())
    assert report["pending_removed"] + report.get("pending_activated", 0) > 0  # B reconciled what A left pending
    assert report["clusters_compressed"] == 3
    with store.connect() as con:
        assert invariants.pending_rows(con) == []
        assert lease_mod.current(con) is None
        assert invariants.archived_without_summary(con) == []
        assert invariants.summaries_with_unarchived_sources(con) == []
    assert list((home / lease_mod.HEARTBEAT_DIR).iterdir()) == []  # A's beat went with B's takeover, B's with B
