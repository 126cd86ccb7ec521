"""The fleet code location: agents as dynamic partitions, per-agent nights that touch only their own
workspace, the fleet's nightly cost cap, the fleet report with its 48-hour rule, the schedule and the sensor."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from memory_pipeline.errors import UserError
from memory_pipeline.fleet import budget, registry
from memory_pipeline.fleet import report as fleet_report
from memory_pipeline.resources.llm import LLMResource
from memory_pipeline_tests.fleet.budget_child import reserve_in_child
from memory_pipeline_tests.llm.fake_api import TEST_KEY, FakeAnthropicAPI

NIGHT_AS_OF = "2026-11-01T03:30:00+00:00"  # benchmarks.nightly.AS_OF: the generated stores' clock


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fleet = tmp_path / "fleet"
    monkeypatch.setenv(registry.FLEET_ROOT_ENV, str(fleet))
    monkeypatch.setenv("MEMORY_PIPELINE_FLEET_AS_OF", NIGHT_AS_OF)
    monkeypatch.setenv("MEMORY_PIPELINE_LLM", "offline")
    monkeypatch.delenv(budget.FLEET_CAP_ENV, raising=False)
    monkeypatch.delenv("MEMORY_PIPELINE_CELERY_BROKER", raising=False)
    return fleet


def _agent_with_memories(root: Path, agent: str, seed: int, n: int = 160) -> Path:
    from benchmarks.nightly import build_store

    return registry.add_agent(root, agent, datetime.now(UTC), fill=lambda tmp: build_store(tmp, n, seed=seed))


def _digest(home: Path) -> dict[str, str]:
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(home.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------ registry


def test_agents_add_list_remove_keeps_the_workspace(root: Path) -> None:
    now = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
    home = _agent_with_memories(root, "ada", seed=1)
    registry.add_agent(root, "bob", now)
    (registry.agents_dir(root) / ".adding-eve-123").mkdir()  # an interrupted add: not an agent
    assert registry.list_agents(root) == ["ada", "bob"]
    before = _digest(home)
    target = registry.remove_agent(root, "ada", now)
    assert registry.list_agents(root) == ["bob"]
    assert target == root / "archive" / "ada@20261102T120000Z" and _digest(target) == before  # nothing lost
    with pytest.raises(UserError, match="already exists"):
        registry.add_agent(root, "bob", now)
    with pytest.raises(UserError, match="not registered"):
        registry.remove_agent(root, "ada", now)
    for bad in ("", "../x", "Ada", "a/b", "-x", "x" * 64):
        with pytest.raises(UserError, match="agent id"):
            registry.add_agent(root, bad, now)
    assert not (root / "x").exists() and sorted(p.name for p in registry.agents_dir(root).iterdir()) == [
        ".adding-eve-123", "bob"]


def test_agents_cli_one_line_errors(root: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_pipeline.cli import main

    monkeypatch.setenv("DAGSTER_HOME", str(root / "no-instance"))
    assert main(["agents", "add", "ada"]) == 0
    out = capsys.readouterr().out
    assert "added ada" in out and "agents_registry sensor" in out  # no instance yet: the sensor will catch up
    assert main(["agents", "list"]) == 0 and capsys.readouterr().out.startswith("ada\t")
    assert main(["agents", "add", "../evil"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "agent id '../evil'" in err and "Traceback" not in err
    assert main(["agents", "remove", "zed"]) == 2 and "not registered" in capsys.readouterr().err
    monkeypatch.delenv(registry.FLEET_ROOT_ENV)
    assert main(["agents", "list"]) == 2 and registry.FLEET_ROOT_ENV in capsys.readouterr().err


def test_agents_add_with_import_fills_the_store_before_the_agent_exists(root: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`agents add ID --import FILE`: the memories are in the store when the folder appears (a night the
    schedule starts at once finds them); a rejected file adds no agent and leaves no temp folder."""
    from memory_pipeline.cli import main
    from memory_pipeline_tests.fleet.readme_helpers import write_memories

    monkeypatch.setenv("DAGSTER_HOME", str(root / "no-instance"))
    seen: list[int] = []
    real_rename = os.rename

    def rename(src: str | Path, dst: str | Path) -> None:  # what the store holds the moment the agent appears
        if Path(dst).parent == registry.agents_dir(root):
            with duckdb.connect(str(Path(src) / "memory.duckdb"), read_only=True) as con:
                seen.append(con.execute("SELECT count(*) FROM memories").fetchall()[0][0])
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    data = write_memories(tmp_path / "ada.jsonl", 12, seed=3, prefix="ada-a")
    assert main(["agents", "add", "ada", "--import", str(data)]) == 0
    out = capsys.readouterr().out
    assert "added ada" in out and "imported 12 memories" in out
    assert seen == [12] and registry.list_agents(root) == ["ada"]

    bad = tmp_path / "bad.jsonl"
    bad.write_text(data.read_text().splitlines()[0] + "\n{not json\n")
    assert main(["agents", "add", "bob", "--import", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.jsonl" in err and "Traceback" not in err
    assert registry.list_agents(root) == ["ada"]
    assert [p.name for p in registry.agents_dir(root).iterdir()] == ["ada"]  # no half-built bob


def test_agents_cli_keeps_the_instance_partitions_in_step(root: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_pipeline.cli import main

    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    assert main(["agents", "add", "ada"]) == 0 and main(["agents", "add", "bob"]) == 0
    assert main(["agents", "remove", "ada"]) == 0
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_dynamic_partitions("agents") == ["bob"]


# ------------------------------------------------------------------ budget


def test_fleet_cap_reservations_never_overcommit_and_count_real_spend(tmp_path: Path) -> None:
    spent: dict[str, float] = {}
    lookup = lambda agent, run: spent.get(run)  # noqa: E731
    r = tmp_path
    first = budget.reserve(r, "2026-11-01", "run-a", "a", 0.25, 0.5, lookup)
    assert budget.reserve(r, "2026-11-01", "run-a", "a", 0.25, 0.5, lookup) == first  # every step, one answer
    second = budget.reserve(r, "2026-11-01", "run-b", "b", 0.25, 0.5, lookup)
    third = budget.reserve(r, "2026-11-01", "run-c", "c", 0.25, 0.5, lookup)
    assert (first.allowance_usd, second.allowance_usd, third.allowance_usd) == (0.25, 0.25, 0.0)
    assert third.limited_by_fleet and not first.limited_by_fleet
    spent["run-a"] = 0.05  # a finished: counted at what it spent, not what it held
    fourth = budget.reserve(r, "2026-11-01", "run-d", "d", 0.25, 0.5, lookup)
    assert fourth.allowance_usd == pytest.approx(0.2)
    assert budget.reserve(r, "2026-11-02", "run-e", "e", 0.25, 0.5, lookup).allowance_usd == 0.25  # new night
    assert budget.reserve(r, "2026-11-02", "run-f", "f", 0.25, None, lookup).fleet_left_usd is None


def test_concurrent_nights_in_many_processes_stay_under_the_fleet_cap(tmp_path: Path) -> None:
    r = tmp_path
    # ProcessPoolExecutor, not Pool: leaving `with Pool(...)` terminates it, and under load its worker handler can
    # start a replacement worker the terminate never sees, which the join then waits for forever
    with ProcessPoolExecutor(4, mp_context=multiprocessing.get_context("spawn")) as pool:
        allowances = list(pool.map(reserve_in_child, [(str(r), i) for i in range(24)]))
        assert sum(allowances) == pytest.approx(1.0)  # 10 nights got 0.1, the rest nothing; never more
        assert sorted(allowances, reverse=True)[:10] == [0.1] * 10
        assert len(json.loads(budget.ledger_path(r, "n").read_text())) == 24


def test_fleet_cap_setting_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_pipeline.settings import SettingsError

    assert budget.fleet_cap({}) is None and budget.fleet_cap({budget.FLEET_CAP_ENV: "2.5"}) == 2.5
    for bad in ("lots", "-1", "nan"):
        with pytest.raises(SettingsError, match=budget.FLEET_CAP_ENV):
            budget.fleet_cap({budget.FLEET_CAP_ENV: bad})


# ------------------------------------------------------------------ the location, end to end


def _instance_with(agents: list[str]) -> dg.DagsterInstance:
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("agents", agents)
    return instance


def _night(defs: dg.Definitions, instance: dg.DagsterInstance, agent: str) -> dg.ExecuteInProcessResult:
    job = defs.resolve_job_def("agent_night")
    return job.execute_in_process(instance=instance, partition_key=agent, raise_on_error=False,
                                  tags={"memory_pipeline/agent": agent, "memory_pipeline/night": "2026-11-01"})


def test_each_agents_night_touches_only_its_own_workspace_and_the_fleet_report_sees_both(root: Path) -> None:
    from memory_pipeline.fleet.definitions import location

    a = _agent_with_memories(root, "ada", seed=3)
    b = _agent_with_memories(root, "bob", seed=4)
    b_before = _digest(b)
    defs = location()
    instance = _instance_with(["ada", "bob"])
    before = dg.evaluate_automation_conditions(defs=defs, instance=instance)  # the automation sensor's cursor
    first = _night(defs, instance, "ada")
    assert first.success
    assert _digest(b) == b_before  # agent B's workspace is byte-identical after agent A's night
    report = json.loads((a / "reports" / f"compression-{first.run_id}.json").read_text())
    assert report["verdict"] == "PASS" and report["clusters_compressed"] > 0
    # Dagster keeps each agent's search index current: ada's night makes ada's index (only) stale
    evaluated = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=before.cursor)
    assert set(evaluated.get_requested_partitions(dg.AssetKey("search_index"))) == {"ada"}
    second = _night(defs, instance, "bob")
    assert second.success
    import duckdb

    for home, seed in ((a, 3), (b, 4)):
        con = duckdb.connect(str(home / "memory.duckdb"), read_only=True)
        sources = [json.loads(r[0])["source_ids"] for r in con.execute(
            "SELECT compressed_from FROM memories WHERE compressed_from IS NOT NULL").fetchall()]
        ids = [r[0] for r in con.execute("SELECT id FROM memories WHERE compressed_from IS NULL").fetchall()]
        con.close()
        assert sources and all(s.startswith(f"bench-{seed:02d}-") for group in sources for s in group)
        assert all(i.startswith(f"bench-{seed:02d}-") for i in ids)
    # the instance records each agent's materialisations under its own partition
    mats = instance.fetch_materializations(dg.AssetRecordsFilter(
        asset_key=dg.AssetKey("report"), asset_partitions=["bob"]), limit=5).records
    assert [m.run_id for m in mats] == [second.run_id]

    index = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, partition_key="ada", asset_selection=[dg.AssetKey("search_index")])
    assert index.success and (a / "index" / "CURRENT").is_file() and not (b / "index").exists()

    result = dg.materialize([defs.get_assets_def("fleet_report")], instance=instance,
                            resources={"fleet_notifier": defs.resources["fleet_notifier"]})
    mat = result.asset_materializations_for_node("fleet_report")[0]
    assert mat.metadata["agents"].value == 2 and mat.metadata["agents_pass"].value == 2
    (check,) = result.get_asset_check_evaluations()
    assert check.passed
    written = json.loads(Path(str(mat.metadata["report_path"].value)).read_text())
    assert [row["agent"] for row in written["agents"]] == ["ada", "bob"]
    assert all(row["last_success"] and not row["stale"] for row in written["agents"])


def test_a_night_for_an_unknown_agent_fails_with_one_line(root: Path) -> None:
    from memory_pipeline.fleet.definitions import location

    registry.add_agent(root, "ada", datetime.now(UTC))
    instance = _instance_with(["ada", "ghost"])
    result = _night(location(), instance, "ghost")
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "RESOURCE_INIT_FAILURE")
    assert "agent 'ghost' is not registered" in str(failure.event_specific_data)  # before any step ran
    assert not result.get_step_success_events()


def test_the_fleet_cap_defers_an_agents_clusters_and_the_report_says_why(root: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_pipeline.fleet.definitions import location

    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    monkeypatch.setenv(budget.FLEET_CAP_ENV, "0.26")  # bob's whole night costs ~$0.0104
    monkeypatch.setenv("COMPRESSION_MAX_COST_USD", "0.25")
    monkeypatch.setenv("COMPRESSION_RATE_LIMIT_PER_MIN", "100000")
    _agent_with_memories(root, "ada", seed=5)
    b = _agent_with_memories(root, "bob", seed=6)
    instance = _instance_with(["ada", "bob"])
    fake = FakeAnthropicAPI()
    with fake.serve() as base_url:
        llm = LLMResource(api_key=dg.EnvVar("ANTHROPIC_API_KEY"), mode="anthropic", base_url=base_url,
                          timeout_s=2.0, min_interval_s=0.0, retry_base_delay_s=0.001)
        defs = location({"llm": llm})
        # ada's night is still running (reserved, no report yet): bob may spend what the fleet has left
        held = budget.reserve(root, "2026-11-01", "ada-still-running", "ada", 0.25, 0.26, lambda a, r: None)
        assert held.allowance_usd == 0.25
        result = _night(defs, instance, "bob")
    assert result.success
    report = json.loads((b / "reports" / f"compression-{result.run_id}.json").read_text())
    assert report["llm"]["max_cost_usd"] == pytest.approx(0.01)  # min(0.25, 0.26 - 0.25)
    assert report["estimated_cost_usd"] <= 0.01 + 1e-9
    assert report["llm"]["clusters_deferred"] > 0 and "cost cap $0.01 reached" in report["verdict_reason"]
    rows = fleet_report.agent_row(
        "bob",
        [fleet_report.night_from_report(b / "reports" / f"compression-{result.run_id}.json", result.run_id,
                                        datetime.now(UTC), {"verdict": report["verdict"]})],
        datetime.now(UTC), datetime.now(UTC), budget.recent_reservations(root))
    assert "fleet cap $0.26 for the night reached (allowance $0.01 of the agent's $0.25)" in rows.deferred


def test_the_48_hour_rule_and_the_alert(root: Path) -> None:
    from memory_pipeline.fleet.definitions import location

    now = datetime.now(UTC)
    registry.add_agent(root, "new", now)  # joined just now: not stale yet
    old = registry.add_agent(root, "old", now)
    past = (now - timedelta(hours=49)).timestamp()
    os.utime(old / registry.MARKER, (past, past))  # joined 49 h ago and never had a night
    defs = location()
    result = dg.materialize([defs.get_assets_def("fleet_report")], instance=_instance_with(["new", "old"]),
                            resources={"fleet_notifier": defs.resources["fleet_notifier"]})
    (check,) = result.get_asset_check_evaluations()
    assert not check.passed and check.metadata["stale_agents"].value == "old"
    alerts = [json.loads(line) for line in (root / "reports" / "alerts.jsonl").read_text().splitlines()]
    assert alerts[-1]["details"]["agents"] == ["old"] and "48 h" in alerts[-1]["subject"]

    # the rule itself: counted from the last successful night, a FAIL night does not reset it
    def night(hours_ago: float, verdict: str) -> fleet_report.Night:
        return fleet_report.Night("r", now - timedelta(hours=hours_ago), verdict, 10.0, 0.0, 1.0)

    assert fleet_report.agent_row("x", [night(50, "PASS"), night(1, "FAIL")], now - timedelta(days=9), now).stale
    assert not fleet_report.agent_row("x", [night(47, "PARTIAL"), night(1, "FAIL")], now - timedelta(days=9),
                                      now).stale


def test_nights_in_flight_show_with_their_age_and_a_hung_one_is_overdue(root: Path) -> None:
    from memory_pipeline.fleet.definitions import AGENT_TAG, location

    now = datetime.now(UTC)
    hung = fleet_report.Running("a" * 36, "STARTED", now - timedelta(hours=3))
    row = fleet_report.agent_row("ada", [], now - timedelta(hours=4), now, running=[hung])
    assert row.in_flight == "aaaaaaaa STARTED for 180 min" and row.overdue
    fresh = fleet_report.agent_row("ada", [], now, now, running=[fleet_report.Running("b" * 36, "QUEUED", now)])
    assert fresh.in_flight.endswith("QUEUED for 0 min") and not fresh.overdue

    registry.add_agent(root, "ada", now)
    defs = location()
    instance = _instance_with(["ada"])
    instance.add_run(dg.DagsterRun(job_name="agent_night", run_id="c" * 36, status=dg.DagsterRunStatus.STARTED,
                                   tags={AGENT_TAG: "ada"}))  # fmt: skip
    result = dg.materialize([defs.get_assets_def("fleet_report")], instance=instance,
                            resources={"fleet_notifier": defs.resources["fleet_notifier"]})
    (mat,) = result.asset_materializations_for_node("fleet_report")
    assert mat.metadata["agents_in_flight"].value == 1 and mat.metadata["agents_overdue"].value == 0
    assert "cccccccc STARTED for 0 min" in mat.metadata["agents_table"].value


# ------------------------------------------------------------------ schedule and sensor


def test_the_schedule_requests_one_night_per_agent_and_never_a_second(root: Path) -> None:

    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("agents", ["ada", "bob", "cy"])
        _schedule_twice(instance)


def _schedule_twice(instance: dg.DagsterInstance) -> None:
    from memory_pipeline.fleet.definitions import PERIOD_TAG, fleet_journal_days, fleet_journal_months, fleet_nights

    when = datetime(2026, 11, 3, 3, 30, tzinfo=UTC)
    requests = fleet_nights(dg.build_schedule_context(instance=instance, scheduled_execution_time=when))
    assert [(r.partition_key, r.tags["memory_pipeline/agent"], r.tags["memory_pipeline/night"]) for r in requests] == [
        ("ada", "ada", "2026-11-03"), ("bob", "bob", "2026-11-03"), ("cy", "cy", "2026-11-03")]
    instance.create_run_for_job(  # ada's night was launched
        job_def=_launched("agent_night"), tags={"memory_pipeline/agent": "ada", PERIOD_TAG: "2026-11-03"})
    again = fleet_nights(dg.build_schedule_context(instance=instance, scheduled_execution_time=when))
    assert [r.partition_key for r in again] == ["bob", "cy"]
    # the journals: each agent's day that just closed, as an agent × day key; ada's night does not count here
    days = fleet_journal_days(dg.build_schedule_context(instance=instance, scheduled_execution_time=when))
    assert [r.partition_key for r in days] == [
        dg.MultiPartitionKey({"agent": a, "day": "2026-11-02"}) for a in ("ada", "bob", "cy")]
    first = datetime(2026, 11, 1, 4, 0, tzinfo=UTC)
    months = fleet_journal_months(dg.build_schedule_context(instance=instance, scheduled_execution_time=first))
    assert [r.partition_key for r in months][0] == dg.MultiPartitionKey({"agent": "ada", "month": "2026-10-01"})


def _launched(name: str) -> dg.JobDefinition:
    @dg.op
    def noop() -> None: ...

    @dg.job(name=name)
    def stand_in() -> None:
        noop()

    return stand_in


def test_the_registry_sensor_brings_the_partitions_in_step_with_the_folders(root: Path) -> None:
    from memory_pipeline.fleet.definitions import agents_registry

    registry.add_agent(root, "ada", datetime.now(UTC))
    registry.add_agent(root, "bob", datetime.now(UTC))
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("agents", ["bob", "gone"])
        result = agents_registry(dg.build_sensor_context(instance=instance))
    requests = {type(r).__name__: sorted(r.partition_keys) for r in result.dynamic_partitions_requests}
    assert requests == {"AddDynamicPartitionsRequest": ["ada"], "DeleteDynamicPartitionsRequest": ["gone"]}


def _transcripts(home: Path, seed: int) -> None:
    from datetime import date

    from memory_pipeline.journals.sample_transcripts import generate_sessions

    for rel, text in generate_sessions(seed, start=date(2026, 9, 14), days=7):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text, encoding="utf-8")


def test_journals_run_per_agent_and_day_and_compaction_per_agent_and_week(root: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_pipeline.fleet.definitions import location

    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    ada = registry.add_agent(root, "ada", datetime.now(UTC))
    bob = registry.add_agent(root, "bob", datetime.now(UTC))
    _transcripts(ada, seed=1)
    _transcripts(bob, seed=2)
    bob_before = _digest(bob)
    defs = location()
    instance = _instance_with(["ada", "bob"])

    def run(job: str, key: dg.MultiPartitionKey) -> dg.ExecuteInProcessResult:
        return defs.resolve_job_def(job).execute_in_process(instance=instance, partition_key=key)

    day = run("agent_journal_day", dg.MultiPartitionKey({"agent": "ada", "day": "2026-09-15"}))
    assert day.success
    journal = ada / "knowledge" / "journal" / "2026-09-15.md"
    assert journal.is_file() and "## 2026-09-15" in journal.read_text()
    assert (ada / "parquet" / "sessions" / "2026-09-15" / "turns.parquet").is_file()  # the day names the folder
    mats = instance.fetch_materializations(dg.AssetKey("journals"), limit=5).records
    assert [str(m.partition_key) for m in mats] == ["ada|2026-09-15"]
    week = run("agent_journal_week", dg.MultiPartitionKey({"agent": "ada", "week": "2026-09-13"}))
    assert week.success and (ada / "knowledge" / "memory" / "MEMORY.md").is_file()
    month = run("agent_journal_month", dg.MultiPartitionKey({"agent": "ada", "month": "2026-09-01"}))
    assert month.success and (ada / "reports" / "monthly" / "2026-09.json").is_file()
    compaction = run("agent_compaction_week", dg.MultiPartitionKey({"agent": "ada", "week": "2026-09-13"}))
    assert compaction.success
    assert _digest(bob) == bob_before  # nothing of bob's was read into, or written by, ada's runs
