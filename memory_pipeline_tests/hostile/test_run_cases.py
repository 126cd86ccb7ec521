"""Hostile cases for `run`, `status` and `rollback`, one table row per case.

Each case starts from a fresh copy of a small store (20 memories, three near-duplicate groups: a run compresses
them with the hashing embedder in seconds), arranges what the case needs (a killed run, a lease, a file where a
folder belongs, a pool slot held in the Dagster instance …), runs the CLI's `main` in-process and asserts the
exit code, the store's rows before and after (equal, or the documented change), and the one line it prints;
never a traceback."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline import cli as cli_module
from memory_pipeline.cli import _dagster_home, main
from memory_pipeline.operator.recovery import PID_TAG as PID
from memory_pipeline.store import MemoryStore
from memory_pipeline.store import lease as lease_mod
from memory_pipeline.store.importers import import_jsonl

MEMORIES = Path(__file__).with_name("run_memories.jsonl")
AS_OF = "2026-11-01T03:30:00Z"
POOL = "memory_store"
SELF = -1  # as a pid: this test process (alive)


@dataclass
class Ctx:
    home: Path
    tmp: Path
    monkeypatch: pytest.MonkeyPatch
    values: dict[str, str] = field(default_factory=dict)  # filled into the expected message

    def dagster_instance(self) -> dg.DagsterInstance:
        return dg.DagsterInstance.from_config(str(_dagster_home(self.home)))


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def rows(home: Path) -> dict[str, int]:
    """What the cases compare: memories by lifecycle, recorded runs, leases."""
    with MemoryStore(home / "memory.duckdb").connect() as con:
        out = {k: 0 for k in ("active", "archived", "pending")}
        out |= dict(con.execute("SELECT lifecycle, count(*) FROM memories GROUP BY 1").fetchall())
        out["runs"] = con.execute("SELECT count(*) FROM consolidation_runs").fetchone()[0]
        out["leases"] = con.execute("SELECT count(*) FROM leases").fetchone()[0]
    return out


# ----------------------------------------------------------------------------------------------- set-ups


def nothing(ctx: Ctx) -> None:
    pass


def killed_run(ctx: Ctx) -> None:
    """A run that recorded its start and was killed before its report (what `exact_duplicates` writes first)."""
    with MemoryStore(ctx.home / "memory.duckdb").transaction() as con:
        con.execute(
            "INSERT INTO consolidation_runs VALUES ('run-killed-1', TIMESTAMP '2026-10-31 03:30:00', NULL, NULL, NULL)"
        )


def no_store(ctx: Ctx) -> None:
    (ctx.home / "memory.duckdb").unlink()


def file_at(rel: str) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        path = ctx.home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("not a folder\n")

    return setup


def folder_at(rel: str) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        (ctx.home / rel).mkdir(parents=True)

    return setup


def dangling_reports(ctx: Ctx) -> None:
    (ctx.home / "reports").symlink_to(ctx.tmp / "gone" / "reports")


def env(name: str, value: str) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        ctx.monkeypatch.setenv(name, value)

    return setup


def lease(holder: str, pid: int | None, host: str | None, expires_in: timedelta) -> Callable[[Ctx], None]:
    """The store's consolidation lease as a run left it (pid None: a pid that is gone, SELF: this live process;
    host None: this host)."""

    def setup(ctx: Ctx) -> None:
        now = datetime.now(UTC).replace(tzinfo=None)
        the_pid = dead_pid() if pid is None else os.getpid() if pid == SELF else pid
        the_host = host or socket.gethostname()
        ctx.values |= {"pid": str(the_pid), "host": the_host}
        with MemoryStore(ctx.home / "memory.duckdb").transaction() as con:
            con.execute(
                "INSERT INTO leases VALUES ('consolidation', ?, ?, ?, ?, ?)",
                [holder, the_pid, the_host, now - timedelta(minutes=5), now + expires_in],
            )

    return setup


def heartbeat(holder: str, host: str, age_s: float, every_s: float) -> Callable[[Ctx], None]:
    """The lease's heartbeat as a night on `host` last wrote it, `age_s` ago, beating every `every_s`."""

    def setup(ctx: Ctx) -> None:
        at = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=age_s)
        path = lease_mod.beat_path(ctx.home / "memory.duckdb", holder)
        path.parent.mkdir(exist_ok=True)
        record = {"holder": holder, "host": host, "pid": 4242, "at": at.isoformat(), "every_s": every_s}
        path.write_text(json.dumps(record))

    return setup


def slot(
    run_id: str, *, pid: int | None, host: str | None, status: dg.DagsterRunStatus = dg.DagsterRunStatus.STARTED
) -> Callable[[Ctx], None]:
    """A run in the Dagster instance holding the store pool's slot, as a run SIGKILLed mid-step leaves it."""

    def setup(ctx: Ctx) -> None:
        the_pid = dead_pid() if pid is None else pid
        the_host = host or socket.gethostname()
        ctx.values |= {"pid": str(the_pid), "host": the_host}
        tags = {"memory_pipeline/pid": str(the_pid), "memory_pipeline/host": the_host}
        with ctx.dagster_instance() as instance:
            instance.add_run(dg.DagsterRun(job_name="nightly_consolidation", run_id=run_id, status=status, tags=tags))
            instance.event_log_storage.set_concurrency_slots(POOL, 1)
            claim = instance.event_log_storage.claim_concurrency_slot(POOL, run_id, "exact_duplicates")
            assert claim.is_claimed

    return setup


def after_the_pre_launch_check(ctx: Ctx) -> None:
    """The holder appears after `_recover_dead_cli_runs` looked: only the PoolWatch inside the run can see it."""
    ctx.monkeypatch.setattr(cli_module, "_recover_dead_cli_runs", lambda *args, **kwargs: None)


def both(*setups: Callable[[Ctx], None]) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        for s in setups:
            s(ctx)

    return setup


# ------------------------------------------------------------------------------------------------- cases

UNCHANGED: dict[str, int] = {}
COMPRESSED = {"active": -12, "archived": 15, "runs": 1}  # 3 clusters of 5 → 3 summaries; the lease is released
SLOW = pytest.mark.slow


@dataclass(frozen=True)
class Case:
    name: str
    setup: Callable[[Ctx], None]
    argv: list[str]
    exit_code: int
    change: dict[str, int]  # rows after − before (keys not listed: unchanged)
    message: str  # a whole output line; "…" matches anything; {home}, {pid}, {host} are filled in
    marks: tuple = ()


CASES = [
    Case("status with no finished run", nothing, ["status"], 0, UNCHANGED, "last run      none finished yet"),
    Case(
        "status with a killed run", killed_run, ["status"], 0, UNCHANGED,
        "unfinished    run-killed-1 started 2026-10-31 03:30 UTC: still running, or killed (the next run reconciles…",
    ),
    Case("status without a store", no_store, ["status"], 2, UNCHANGED, "no memory store in {home}"),
    Case(
        "rollback of an unknown run id", nothing, ["rollback", "--run-id", "does-not-exist"], 2, UNCHANGED,
        "error: no consolidation run 'does-not-exist' in {home}/memory.duckdb: `memory-pipeline status` shows…",
    ),
    Case(
        "rollback dry run of an unknown run id", killed_run, ["rollback", "--run-id", "run-killed-2", "--dry-run"], 2,
        UNCHANGED, "error: no consolidation run 'run-killed-2' in {home}/memory.duckdb…",
    ),
    Case(
        "rollback --since a word", nothing, ["rollback", "--since", "yesterday"], 2, UNCHANGED,
        "error: --since 'yesterday': expected an ISO-8601 timestamp such as 2026-11-01T03:30:00Z…",
    ),
    Case(
        "rollback --since the future", killed_run, ["rollback", "--since", "2999-01-01"], 0, UNCHANGED,
        "nothing to roll back: no consolidation run started at or after 2999-01-01 00:00:00 UTC",
    ),
    Case(
        "run --as-of a word", nothing, ["run", "--as-of", "yesterday"], 2, UNCHANGED,
        "configuration error: --as-of 'yesterday': expected an ISO-8601 timestamp such as 2026-11-01T03:30:00Z (or a "
        "date, 2026-11-01; no offset = UTC)",
    ),
    Case(
        "run --as-of an impossible date", nothing, ["run", "--as-of", "2026-13-45"], 2, UNCHANGED,
        "configuration error: --as-of '2026-13-45': expected an ISO-8601 timestamp…",
    ),
    Case(
        "run --as-of epoch seconds", nothing, ["run", "--as-of", "1700000000"], 2, UNCHANGED,
        "configuration error: --as-of '1700000000': expected an ISO-8601 timestamp…",
    ),
    Case(
        "dry run --as-of a phrase", nothing, ["run", "--dry-run", "--as-of", "last week"], 2, UNCHANGED,
        "configuration error: --as-of 'last week': expected an ISO-8601 timestamp…",
    ),
    Case(
        "reports/ is a file", file_at("reports"), ["run", "--as-of", AS_OF], 2, UNCHANGED,
        "error: {home}/reports is a file, not a directory: move it away (runs write there)",
    ),
    Case(
        "backups/ is a file", file_at("backups"), ["run", "--as-of", AS_OF], 2, UNCHANGED,
        "error: {home}/backups is a file, not a directory: move it away (runs write there)",
    ),
    Case(
        "the LLM usage ledger folder is a file", file_at("reports/llm-usage"), ["run", "--as-of", AS_OF], 2, UNCHANGED,
        "error: {home}/reports/llm-usage is a file, not a directory: move it away (runs write there)",
    ),
    Case(
        "the alerts file is a folder", folder_at("reports/alerts.jsonl"), ["run", "--as-of", AS_OF], 2, UNCHANGED,
        "error: {home}/reports/alerts.jsonl is a directory, not a file: move it away (runs append to it)",
    ),
    Case(
        "reports/ is a dangling symlink", dangling_reports, ["run", "--as-of", AS_OF], 2, UNCHANGED,
        "error: {home}/reports is a dangling symlink (to …/gone/reports): fix or remove it",
    ),
    Case(
        "pool wait setting is not a number", env("MEMORY_PIPELINE_POOL_WAIT_MINUTES", "soon"),
        ["run", "--as-of", AS_OF], 2, UNCHANGED,
        "configuration error: MEMORY_PIPELINE_POOL_WAIT_MINUTES='soon': expected a number of minutes",
    ),
    Case(
        "a live run on another host holds the pool slot: bounded wait",
        both(env("MEMORY_PIPELINE_POOL_WAIT_MINUTES", "0.05"), slot("live-elsewhere", pid=4242, host="host-a")),
        ["run", "--as-of", AS_OF], 1, UNCHANGED,
        # how long it waited is load's business (3 s at least): the line, its holder and the unchanged rows are not
        "error: gave up after … s waiting for the store's `memory_store` slot, held by run live-elsewhere (pid 4242 "
        "on host-a, since …): if that run is dead, mark it failed in the Dagster UI…",
    ),
    Case(
        "a killed run on this host holds the pool slot", slot("dead-here", pid=None, host=None),
        ["run", "--dry-run", "--as-of", AS_OF], 0, UNCHANGED,
        "freed the memory_store slot of run dead-here: its process (pid {pid} on {host}) is gone",
    ),
    Case(
        "a run that run monitoring failed holds the pool slot",
        slot("failed-by-monitoring", pid=4242, host="host-a", status=dg.DagsterRunStatus.FAILURE),
        ["run", "--dry-run", "--as-of", AS_OF], 0, UNCHANGED,
        "freed the memory_store slot of run failed-by-monitoring: the run ended (FAILURE) without freeing its slot",
    ),
    Case(
        "a killed run on another host whose lease expired holds the pool slot",
        both(slot("dead-elsewhere", pid=4242, host="host-a"), lease("dead-elsewhere", 4242, "host-a", -timedelta(1))),
        ["run", "--dry-run", "--as-of", AS_OF], 0, UNCHANGED,
        "freed the memory_store slot of run dead-elsewhere: its store lease from host host-a expired at …",
    ),
    Case(
        "a killed run on another host whose heartbeat stopped holds the pool slot (its lease has hours to run)",
        both(
            slot("beat-stopped", pid=4242, host="host-a"), lease("beat-stopped", 4242, "host-a", timedelta(hours=5)),
            heartbeat("beat-stopped", "host-a", age_s=200, every_s=15),
        ),
        ["run", "--dry-run", "--as-of", AS_OF], 0, UNCHANGED,
        "freed the memory_store slot of run beat-stopped: its heartbeat from host host-a stopped at … UTC, … s ago "
        "(stale after 6 beats of 15 s)",
    ),
    Case(
        "a live run on another host beats its heartbeat: bounded wait, naming its heartbeat",
        both(
            env("MEMORY_PIPELINE_POOL_WAIT_MINUTES", "0.05"), slot("beat-live", pid=4242, host="host-a"),
            lease("beat-live", 4242, "host-a", timedelta(hours=5)),
            heartbeat("beat-live", "host-a", age_s=0, every_s=60),  # fresh for 6 min: longer than any start
        ),
        ["run", "--as-of", AS_OF], 1, UNCHANGED,
        "error: gave up after … s waiting for the store's `memory_store` slot, held by run beat-live (pid 4242 on "
        "host-a, since …, heartbeat from host-a … s ago): if that run is dead…",
    ),
    Case(
        "a live run takes the slot after the pre-launch check: the run still gives up in time",
        both(
            env("MEMORY_PIPELINE_POOL_WAIT_MINUTES", "0.05"), slot("live-late", pid=4242, host="host-a"),
            after_the_pre_launch_check,
        ),
        ["run", "--as-of", AS_OF], 1, UNCHANGED,
        "error: gave up after … s waiting for the store's `memory_store` slot, held by run live-late (pid 4242 on "
        "host-a, since …): if that run is dead…",
        marks=(SLOW,),
    ),
    Case(
        "a killed run holds the slot after the pre-launch check: the run frees it and finishes",
        both(slot("dead-late", pid=None, host=None), after_the_pre_launch_check),
        ["run", "--as-of", AS_OF], 0, COMPRESSED,
        "freed the memory_store slot of run dead-late: its process (pid {pid} on {host}) is gone",
        marks=(SLOW,),
    ),
    Case(
        "a lease held by a dead pid on this host", lease("run-dead-1", None, None, timedelta(hours=5)),
        ["run", "--as-of", AS_OF], 0, {**COMPRESSED, "leases": -1},
        "COMPRESSION RUN PASS: 3 abstractions, … token reduction", marks=(SLOW,),
    ),
    Case(
        "a run while another live process holds the lease", lease("run-live-1", SELF, None, timedelta(hours=5)),
        ["run", "--as-of", AS_OF], 0, UNCHANGED, "consolidation already running, skipping", marks=(SLOW,),
    ),
    Case(
        "--cluster-id unknown", nothing, ["run", "--as-of", AS_OF, "--cluster-id", "c-nope"], 1,
        {"runs": 1, "leases": 1},  # recorded at its start; the failed run's lease is stale and taken over next time
        "error: run … failed before writing its report: step distillations failed: cluster c-nope is not among this "
        "run's 3 clusters",
        marks=(SLOW,),
    ),
]


@pytest.fixture(scope="module")
def base_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("runs") / "workspace"
    home.mkdir()
    assert import_jsonl(MemoryStore(home / "memory.duckdb"), MEMORIES).memories == 20
    return home


def expected_line(template: str, values: dict[str, str]) -> re.Pattern[str]:
    parts = [re.escape(part.format(**values)) for part in template.split("…")]
    return re.compile("^" + ".*".join(parts) + "$", re.MULTILINE)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=c.marks) for c in CASES])
def test_run_case(
    case: Case, base_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "workspace"
    shutil.copytree(base_home, home)
    for name in ("ANTHROPIC_API_KEY", "MEMORY_PIPELINE_WEBHOOK_URL", "MEMORY_PIPELINE_VERBOSE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hashing-bow-256")
    monkeypatch.setenv("MEMORY_PIPELINE_PROGRESS", "log")
    ctx = Ctx(home, tmp_path, monkeypatch, {"home": str(home)})
    before = rows(home)
    case.setup(ctx)
    before_case = rows(home) if (home / "memory.duckdb").exists() else before

    code = main(case.argv)

    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code == case.exit_code, (out + err)[-3000:]
    after = rows(home) if (home / "memory.duckdb").exists() else before_case
    assert {k: after[k] - before_case[k] for k in after if after[k] != before_case[k]} == case.change
    assert expected_line(case.message, ctx.values).search(out + err), (out + err)[-3000:]
    if code != 0:  # the error is the last line on stderr, and it is one line
        assert err.strip().splitlines()[-1] == expected_line(case.message, ctx.values).search(err).group(0)


# --------------------------------------------------------------------------------- the pieces, without Dagster


def test_waiting_logs_whom_it_waits_for_every_30_s_and_gives_up_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_pipeline.operator import recovery

    live = recovery.Holder("run-live", None, datetime(2026, 11, 1, 3, 30), 4242, "host-a", None)

    class Info:
        limit = 1
        claimed_slots = [type("Slot", (), {"run_id": "run-live"})()]

    class Storage:
        def get_concurrency_info(self, pool: str) -> Info:
            return Info()

    instance = type("Instance", (), {"event_log_storage": Storage()})()
    monkeypatch.setattr(recovery, "free_stale", lambda *a, **k: [live])
    clock = [0.0]
    lines: list[tuple[float, str]] = []
    with pytest.raises(recovery.PoolWaitTimeout) as raised:
        recovery.wait_for_pool(
            instance, POOL, None, ttl=timedelta(hours=6), timeout_s=125, log=lambda m: lines.append((clock[0], m)),
            clock=lambda: clock[0], sleep=lambda s: clock.__setitem__(0, clock[0] + s),
        )
    times = [t for t, _ in lines]
    assert times[0] == 0 and all(b - a <= 30 for a, b in zip(times, [*times[1:], 125], strict=True))
    assert all("held by run run-live (pid 4242 on host-a, since 2026-11-01 03:30:00 UTC)" in m for _, m in lines)
    assert str(raised.value).startswith("gave up after 125 s waiting for the store's `memory_store` slot")
    assert raised.value.exit_code == 1


@pytest.mark.parametrize(
    ("holder", "reason"),
    [
        (dict(finished_status="CANCELED"), "the run ended (CANCELED) without freeing its slot"),
        (dict(lease_host="host-a", expires_in=-1), "its store lease from host host-a expired at"),
        (dict(lease_host="host-a", expires_in=+1), None),  # another host: trusted until its lease expires
        (dict(pid=os.getpid(), host="here"), None),
        (dict(pid="dead", host="here"), "its process (pid"),
        (dict(pid=4242, host="host-a", started_hours_ago=7), "longer ago than the lease TTL"),
        (dict(pid=4242, host="host-a", started_hours_ago=1), None),
        (dict(lease_host="here", expires_in=+1), None),  # a daemon-launched run (no pid tag) holding the lease
    ],
)
def test_stale_reason(holder: dict, reason: str | None) -> None:
    from memory_pipeline.operator.recovery import Holder, stale_reason
    from memory_pipeline.store.lease import Lease

    now = datetime(2026, 11, 1, 12)
    held = None
    if "lease_host" in holder:
        held = Lease("consolidation", "r", 1, holder["lease_host"], now, now + timedelta(hours=holder["expires_in"]))
    pid = dead_pid() if holder.get("pid") == "dead" else holder.get("pid")
    h = Holder(
        "r", holder.get("finished_status"), now - timedelta(hours=holder.get("started_hours_ago", 0)), pid,
        holder.get("host"), held,
    )
    got = stale_reason(h, this_host="here", now=now, ttl=timedelta(hours=6))
    assert (got is None) if reason is None else (got is not None and reason in got), got


def test_default_workspace_does_not_follow_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_pipeline.settings import PACKAGE_ROOT, default_home, workspace_home

    monkeypatch.delenv("MEMORY_PIPELINE_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert workspace_home() == (PACKAGE_ROOT / "data" / "workspace").resolve()  # this checkout's, from anywhere
    installed = tmp_path / "site-packages"  # an installed package: no pyproject.toml beside it
    assert default_home({"HOME": "/home/u"}, installed) == Path("/home/u/.local/share/memory-pipeline/workspace")
    assert default_home({"XDG_DATA_HOME": "/xdg"}, installed) == Path("/xdg/memory-pipeline/workspace")


def test_the_sensor_frees_a_killed_runs_slot_for_runs_the_ui_launches(base_home: Path, tmp_path: Path) -> None:
    from memory_pipeline.defs.abstraction.sensors import free_stale_store_slots
    from memory_pipeline.resources import EngineConfig, MemoryStoreResource

    dagster_home = tmp_path / "dh"
    dagster_home.mkdir()
    shutil.copyfile(Path(cli_module.__file__).resolve().parent.parent / "dagster.yaml", dagster_home / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        for run_id, pid in (("killed", dead_pid()), ("running", os.getpid())):
            tags = {PID: str(pid), "memory_pipeline/host": socket.gethostname()}
            instance.add_run(dg.DagsterRun(job_name="nightly_consolidation", run_id=run_id, tags=tags,
                                           status=dg.DagsterRunStatus.STARTED))
            instance.event_log_storage.set_concurrency_slots(POOL, 2)
            assert instance.event_log_storage.claim_concurrency_slot(POOL, run_id, "exact_duplicates").is_claimed
        context = dg.build_sensor_context(
            instance=instance,
            resources={"store": MemoryStoreResource(home=str(base_home)), "engine": EngineConfig()},
        )
        skip = free_stale_store_slots(context)
        assert isinstance(skip, dg.SkipReason) and skip.skip_message.startswith("freed 1 slot holder(s)")
        assert instance.event_log_storage.get_concurrency_info(POOL).active_run_ids == {"running"}
        assert instance.get_run_by_id("killed").status == dg.DagsterRunStatus.FAILURE
        assert instance.get_run_by_id("running").status == dg.DagsterRunStatus.STARTED


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"run_id": "does-not-exist", "dry_run": False}, "no consolidation run 'does-not-exist' in "),
        ({"since": "yesterday"}, "RollbackConfig: field 'since': not an ISO-8601 timestamp: 'yesterday'"),
    ],
)
def test_the_rollback_job_names_what_is_wrong(base_home: Path, tmp_path: Path, config: dict, message: str) -> None:
    from memory_pipeline_tests.conftest import run_job

    home = tmp_path / "workspace"
    shutil.copytree(base_home, home)
    before = rows(home)
    result = run_job(home, "rollback_consolidation", {"ops": {"rollback_runs": {"config": config}}})
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failure.step_failure_data.user_failure_data.description.startswith(message)
    assert rows(home) == before
