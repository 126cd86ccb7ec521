"""The whole nightly_consolidation job with Claude — the real SDK against a fake Anthropic API served on
127.0.0.1 — keeps every store invariant of the offline path, and its report's cost is the recorded usage
times the price table. Also: a batch run killed while polling is resumed by the next run (paid once), and
a night stopped by the cost cap leaves its remaining clusters to the next night."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._serdes import serialize_value

from memory_pipeline.definitions import defs_with
from memory_pipeline.distillation.distill import SYSTEM_PROMPT
from memory_pipeline.llm.ledger import FileLedger
from memory_pipeline.llm.runs import DEFERRED_PREFIX
from memory_pipeline.resources import LLMResource
from memory_pipeline.store import MemoryStore
from memory_pipeline.store import repository as repo
from memory_pipeline_tests.abstraction.test_pipeline import INVARIANT_CHECKS, load_report, protected_ids, snapshot
from memory_pipeline_tests.conftest import SAMPLE_NOW, resources_for
from memory_pipeline_tests.llm.fake_api import (
    TEST_KEY,
    FakeAnthropicAPI,
    distill_reply,
    overloaded,
    rate_limited,
    server_error,
    timeout,
)

FAST = {"rate_limit_per_min": 100_000}  # the limiter itself is unit-tested; here it must not slow the night


def run_night(
    home: Path,
    instance: dg.DagsterInstance,
    base_url: str,
    mode: str = "anthropic",
    job: str = "nightly_consolidation",
    **engine: object,
):
    resources = resources_for(home, **{**FAST, **engine})
    resources["llm"] = LLMResource(
        api_key=dg.EnvVar("ANTHROPIC_API_KEY"),  # as resources/defaults.py wires it: the key never enters config
        mode=mode,
        base_url=base_url,
        timeout_s=1.0,
        min_interval_s=0.0,
        retry_base_delay_s=0.001,
        batch_poll_interval_s=0.01,
    )
    job_def = defs_with(resources).resolve_job_def(job)
    return job_def.execute_in_process(instance=instance, raise_on_error=False)


def ledger_cost(home: Path, run_id: str, llm: LLMResource | None = None) -> tuple[float, int]:
    prices = (llm or LLMResource()).prices()
    calls = [c for c in FileLedger(home / "reports", run_id).calls() if c.status == "ok"]
    return sum(prices.cost(c.usage, batch=c.api == "batch") for c in calls), len(calls)


def assert_store_invariants(result: dg.ExecuteInProcessResult) -> None:
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert INVARIANT_CHECKS <= set(checks)
    assert all(checks[n].passed for n in INVARIANT_CHECKS), {n: checks[n].passed for n in INVARIANT_CHECKS}


def assert_no_secret(home: Path, instance: dg.DagsterInstance, run_id: str) -> None:
    records = instance.all_logs(run_id)
    assert records and all(TEST_KEY not in serialize_value(r) for r in records)
    run = instance.get_run_by_id(run_id)
    assert TEST_KEY not in serialize_value(run)
    assert TEST_KEY not in serialize_value(instance.get_job_snapshot(run.job_snapshot_id))
    for path in (home / "reports").rglob("*"):
        if path.is_file():
            assert TEST_KEY not in path.read_text(encoding="utf-8", errors="replace"), path
    with MemoryStore(home / "memory.duckdb").connect() as con:
        reasons = " ".join(r[0] or "" for r in con.execute("SELECT reason FROM compression_log").fetchall())
    assert TEST_KEY not in reasons


def test_the_nightly_job_with_claude_keeps_the_offline_invariants(workspace: Path, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    before, protected = snapshot(workspace), protected_ids(workspace)
    fake = FakeAnthropicAPI()
    fake.fail("messages", rate_limited("0.05"), overloaded(), overloaded(), timeout(delay_s=1.5))
    instance = dg.DagsterInstance.ephemeral()
    with fake.serve() as base_url:
        result = run_night(workspace, instance, base_url)
    assert result.success
    assert_store_invariants(result)

    report = load_report(workspace, result.run_id)
    assert report["verdict"] == "PASS", report["verdict_reason"]
    assert report["clusters_compressed"] > 0 and report["token_reduction_pct"] > 0
    assert report["abstractions_created"] == report["clusters_compressed"]
    assert report["min_compression_ratio"] >= 1.5
    after = snapshot(workspace)
    assert set(before) <= set(after)
    assert all(after[m] == before[m] for m in protected)
    with MemoryStore(workspace / "memory.duckdb").connect() as con:
        summaries = repo.summaries_of_run(con, result.run_id)
        assert len(summaries) == report["clusters_compressed"]
        for s in summaries.itertuples():
            lineage = json.loads(s.compressed_from)
            assert lineage["distiller"] == "anthropic:claude-haiku-4-5"
            sources = repo.fetch_members(con, lineage["source_ids"])
            assert (sources["lifecycle"] == "archived").all() and (sources["importance"] == 0.5).all()

    # which distiller ran: the report and the run's tags
    assert report["distiller"] == "anthropic:claude-haiku-4-5" and report["llm"]["api"] == "messages"
    tags = instance.get_run_by_id(result.run_id).tags
    assert tags["memory_pipeline/distiller"] == "anthropic:claude-haiku-4-5"
    assert tags["memory_pipeline/llm_api"] == "messages"

    # every request: the seed's prompts, cached, at temperature 0, with the key
    sent = fake.requests("messages")
    assert all(s.key_ok for s in sent)
    assert all(s.body["model"] == "claude-haiku-4-5" and s.body["temperature"] == 0 for s in sent)
    assert all(s.body["system"][0]["cache_control"] == {"type": "ephemeral"} for s in sent)
    # the transient faults were retried: 4 more HTTP attempts than recorded calls
    cost, calls = ledger_cost(workspace, result.run_id)
    assert len(sent) == calls + 4
    assert report["total_llm_calls"] == calls >= report["clusters_compressed"]
    assert report["estimated_cost_usd"] == pytest.approx(cost, abs=1e-6) and cost > 0
    assert report["llm"]["cache_read_input_tokens"] > 0 and report["llm"]["cache_creation_input_tokens"] > 0
    assert_no_secret(workspace, instance, result.run_id)
    numbers = ("clusters_found", "clusters_compressed", "total_llm_calls", "total_llm_input_tokens")
    print("night:", {k: report[k] for k in (*numbers, "total_llm_output_tokens", "estimated_cost_usd")})


def test_a_night_stopped_by_the_cost_cap_leaves_the_rest_for_the_next_night(workspace: Path, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    fake = FakeAnthropicAPI()
    fake.only = lambda system, _user: system == SYSTEM_PROMPT  # the faults and the prose are the distiller's
    fake.fail("messages", *[server_error()] * 5)  # the first cluster: 500 on every attempt
    fake.replies.append("Sorry, I can only answer in prose.")  # the second: not JSON
    instance = dg.DagsterInstance.ephemeral()
    with fake.serve() as base_url:
        first = run_night(workspace, instance, base_url, max_cost_usd=0.06)
        assert first.success
        assert_store_invariants(first)
        report = load_report(workspace, first.run_id)
        assert report["verdict"] == "PARTIAL"
        deferred_n = report["llm"]["clusters_deferred"]
        assert deferred_n > 0 and report["clusters_compressed"] > 0
        assert report["verdict_reason"] == (
            f"1 error(s) during the run; cost cap $0.06 reached: {deferred_n} cluster(s) left for the next night"
        )
        cost, _ = ledger_cost(workspace, first.run_id)
        assert report["estimated_cost_usd"] == pytest.approx(cost, abs=1e-6) and cost <= 0.06
        with MemoryStore(workspace / "memory.duckdb").connect() as con:
            logged = con.execute(
                "SELECT cluster_id, status, reason FROM compression_log WHERE run_id = ?", [first.run_id]
            ).fetchall()
        reasons = {cid: reason for cid, status, reason in logged if status == "skipped"}
        deferred = {cid for cid, r in reasons.items() if r == f"{DEFERRED_PREFIX}cost cap $0.06 reached"}
        failed = {cid for cid, r in reasons.items() if r.startswith("LLM error: 500 api_error")}
        invalid = {cid for cid, r in reasons.items() if r.startswith("invalid JSON: no object in")}
        assert len(deferred) == deferred_n and len(failed) == 1 and len(invalid) == 1
        assert report["skip_reasons"]["LLM error"] == 1

        dry = run_night(workspace, instance, base_url, job="consolidation_dry_run")
        assert dry.success
        listed = {c.cluster_id: c.skip_reason for c in dry.output_for_node("clusters")}
        assert all(listed[cid] is None for cid in deferred | failed)  # due tonight, not "recently processed"
        assert all(listed[cid].startswith("fingerprint processed") for cid in invalid)
        second = run_night(workspace, instance, base_url)  # the next night, cap as default
    assert second.success
    assert_store_invariants(second)
    with MemoryStore(workspace / "memory.duckdb").connect() as con:
        logged = con.execute(
            "SELECT cluster_id, status, reason FROM compression_log WHERE run_id = ?", [second.run_id]
        ).fetchall()
    compressed = {cid for cid, status, _ in logged if status == "compressed"}
    ttl = {cid for cid, status, reason in logged if status == "skipped" and reason.startswith("fingerprint processed")}
    # deferred and API-failed clusters are not attempts: tonight they are distilled (and the reply judged: one
    # its sources do not support is refused, and the cluster stays); the invalid-JSON one was an attempt and
    # waits out the TTL
    refused = ("not faithful to its sources", "facts not preserved", "statements dropped")
    judged = {cid for cid, status, reason in logged if status == "skipped" and reason.startswith(refused)}
    assert deferred | failed <= compressed | judged, {cid: r for cid, s, r in logged if cid in deferred | failed}
    assert compressed & (deferred | failed)
    assert invalid <= ttl
    assert load_report(workspace, second.run_id)["verdict"] == "PASS"


@pytest.mark.slow  # a CLI night in a process of its own, SIGKILLed while it polls, then the resumed night (~15 s)
def test_a_batch_night_killed_while_polling_is_resumed_and_paid_once(
    workspace: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    fake = FakeAnthropicAPI(batch_polls=10**9)  # never ends while the first run polls
    with fake.serve() as base_url:
        env = os.environ | {
            "MEMORY_PIPELINE_HOME": str(workspace),
            "DAGSTER_HOME": str(tmp_path / "dagster_home"),
            "MEMORY_PIPELINE_LLM": "batch",  # the production wiring: resources.defaults.default_resources
            "ANTHROPIC_BASE_URL": base_url,
            # the resumed run below is configured like every test here (the seed's 0.82, conftest.resources_for);
            # the same clusters make the same requests, which is what lets a batch be resumed
            "COMPRESSION_SIMILARITY_THRESHOLD": "0.82",
        }
        child = subprocess.Popen(
            [sys.executable, "-m", "memory_pipeline.cli", "run", "--as-of", SAMPLE_NOW.isoformat()],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(tmp_path / "child.log").open("w"),
        )
        try:
            deadline = time.monotonic() + 300
            while not fake.requests("batches.retrieve"):
                assert child.poll() is None, (tmp_path / "child.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "the run never polled its batch"
                time.sleep(0.1)
        finally:
            child.kill()  # SIGKILL: no cleanup, no chance to record anything more
            child.wait(timeout=60)
        (batch_file,) = (workspace / "reports" / "llm-batches").glob("*.json")
        state = json.loads(batch_file.read_text())
        assert state["status"] == "submitted" and state["stage"] == "distill"
        assert len(fake.requests("batches.create")) == 1

        fake.batch_polls = 1
        instance = dg.DagsterInstance.ephemeral()
        result = run_night(workspace, instance, base_url, mode="batch")
    assert result.success
    assert_store_invariants(result)
    report = load_report(workspace, result.run_id)
    assert report["verdict"] == "PASS", (report["verdict_reason"], report["errors"][:3])
    assert report["clusters_compressed"] > 0
    creates = fake.requests("batches.create")
    assert len(creates) == 2  # the resumed distill batch was not sent again; the second is the atoms'
    assert creates[1].body["requests"][0]["params"]["system"][0]["text"].startswith("You extract causal")
    assert json.loads(batch_file.read_text())["status"] == "collected"
    assert len(fake.requests("batches.results")) == 2  # each batch's results fetched once
    assert fake.requests("messages") == []
    cost, calls = ledger_cost(workspace, result.run_id)
    assert report["estimated_cost_usd"] == pytest.approx(cost, abs=1e-6)
    assert report["llm"]["batch_calls"] == calls == report["total_llm_calls"]
    assert report["distiller"] == "anthropic-batch:claude-haiku-4-5"
    tags = instance.get_run_by_id(result.run_id).tags
    assert tags["memory_pipeline/llm_api"] == "batch"
    assert_no_secret(workspace, instance, result.run_id)


def _fabricated(system: str, user: str) -> str:
    """Claude's reply with a range no member states written into it."""
    reply = json.loads(distill_reply(user))
    reply["abstraction"] = "Backtests on candles: Sharpe 0.17–1.87 across the board. " + reply["abstraction"]
    return json.dumps(reply)


def test_claudes_fabricated_ranges_are_refused_and_nothing_is_archived(workspace: Path, monkeypatch) -> None:
    """Every reply states a range its members do not: the judge refuses each (the cluster stays), nothing is
    archived, and the night's grade says most of its distillations were refused."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    api = FakeAnthropicAPI()
    api.reply_when(lambda system, user: system == SYSTEM_PROMPT, _fabricated)
    with api.serve() as base_url, dg.instance_for_test() as instance:
        result = run_night(workspace, instance, base_url)
        grade = next(e for e in result.get_asset_check_evaluations() if e.check_name == "abstraction_grade")
        assert grade.metadata["mostly_refused"].value is True and grade.metadata["distillations"].value >= 5
    with MemoryStore(workspace / "memory.duckdb").connect() as con:
        reasons = [r for (r,) in con.execute("SELECT reason FROM compression_log WHERE run_id = ? AND status = "
                                             "'skipped'", [result.run_id]).fetchall()]  # fmt: skip
        verdict = con.execute("SELECT verdict, report FROM consolidation_runs WHERE run_id = ?",
                              [result.run_id]).fetchall()  # fmt: skip
        summaries = con.execute("SELECT count(*) FROM memories WHERE source LIKE 'abstraction:%'").fetchall()[0][0]
        compressed = con.execute("SELECT count(*) FROM compression_log WHERE run_id = ? AND status = 'compressed'",
                                 [result.run_id]).fetchall()[0][0]  # fmt: skip
    refused = [r for r in reasons if r.startswith("not faithful to its sources: states 0.17")]
    assert len(refused) >= 5 and all("which no source states" in r for r in refused)
    assert json.loads(verdict[0][1])["grade"]["refused"] >= len(refused)
    assert compressed == 0 and summaries == 0  # nothing archived, no summary left behind
