"""The operator's view, tested the way a person meets it: a real `dagster dev` (started by `memory-pipeline ui`),
runs and a backfill launched over GraphQL, and headless Chromium on the asset graph and asset pages.

Slow (~3-4 min on 2 busy cores): one server for the whole module; tests run in file order and the later ones
use the first one's run. Runs use the in-process executor: with a subprocess per step (the default), the same
night took over 6 minutes on this machine, almost all of it Python start-up of the code location per step.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from dagster_graphql import DagsterGraphQLClient

from memory_pipeline.defs.abstraction.schedules import PIPELINE
from memory_pipeline.sample_data import write_sample_jsonl
from memory_pipeline.settings import REPO_ROOT
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline_tests.ui.picture import SHOWN, group_now, texts, with_text
from memory_pipeline_tests.ui.server import LOCATION, REPO, DagsterDev, latest_materialization, wait_for_run

pytestmark = pytest.mark.slow

ARTIFACTS = REPO_ROOT / "memory_pipeline_tests" / "artifacts"
README_SCREENSHOT = REPO_ROOT / "docs" / "asset-graph.png"
CHROMIUM = Path("/usr/bin/chromium")
IN_PROCESS = {"execution": {"config": {"in_process": {}}}}
ABSTRACTION = [a.key.to_user_string() for a in PIPELINE]  # in the seed diagram's order
BACKFILL_DAYS = ["2026-09-14", "2026-09-15"]


class Night:
    """What the tests share: the server, its workspace and the first run."""

    def __init__(self, server: DagsterDev, home: Path) -> None:
        self.server, self.home = server, home
        self.client = DagsterGraphQLClient("127.0.0.1", port_number=server.port, timeout=60)
        self.first_run: str | None = None


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Night]:
    root = tmp_path_factory.mktemp("dagster_dev")
    home = root / "workspace"
    home.mkdir()
    # the sample store (1,500+ memories, dated relative to now so the freshness rule behaves as in production)
    write_sample_jsonl(root / "sample.jsonl", datetime.now(UTC))
    import_jsonl(MemoryStore(home / "memory.duckdb"), root / "sample.jsonl")
    shutil.copytree(REPO_ROOT / "data" / "sample" / "raw", home / "raw")  # transcripts for the journals
    env = {"MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256", "MEMORY_PIPELINE_LLM": "offline"}
    env |= {"MEMORY_PIPELINE_JOURNAL_GIT": "0"}
    server = DagsterDev(home, root / "dagster_home", root / "dagster-dev.log", env)
    try:
        seconds = server.wait_ready()
        print(f"dagster dev ready in {seconds:.1f}s on {server.base}")
        server.graphql("mutation { setNuxSeen }")  # the first-visit newsletter dialog would cover the page
        yield Night(server, home)
    finally:
        server.stop()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(server.log_path, ARTIFACTS / "dagster-dev.log")


def _launch_nightly(night: Night) -> tuple[str, str]:
    run_id = night.client.submit_job_execution(
        "nightly_consolidation", repository_location_name=LOCATION, repository_name=REPO, run_config=IN_PROCESS
    )
    return run_id, wait_for_run(night.client, run_id)


def test_nightly_run_launched_over_graphql_succeeds_and_reports(night: Night) -> None:
    started = time.monotonic()
    run_id, status = _launch_nightly(night)
    print(f"nightly_consolidation via GraphQL: {status} in {time.monotonic() - started:.1f}s")
    assert status == "SUCCESS", night.server.log_tail()
    night.first_run = run_id

    report = latest_materialization(night.server, ["report"])
    meta = report["metadata"]
    assert report["run_id"] == run_id
    assert meta["verdict"] == "PASS"
    assert isinstance(meta["tokens_before"], int) and isinstance(meta["tokens_after"], int)
    assert 0 < meta["tokens_after"] < meta["tokens_before"]
    assert meta["token_reduction_pct"] > 0 and meta["clusters_compressed"] > 0
    assert meta["estimated_cost_usd"] == 0.0  # the offline distiller costs nothing
    assert Path(meta["report_path"]) == night.home / "reports" / f"compression-{run_id}.json"
    assert "| verdict | PASS |" in meta["report"]

    compressed = latest_materialization(night.server, ["compressed_memories"])["metadata"]
    assert compressed["cluster_outcomes"].startswith("| cluster_id | members |")
    assert f"compression ratio (n={meta['clusters_compressed']})" in compressed["compression_ratios"]


def test_browser_shows_the_asset_graph_and_the_reports_latest_metadata(night: Night) -> None:
    if night.first_run is None:
        pytest.skip("needs the first test's run")
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install -y chromium` (.ci/run does this)")
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    report = latest_materialization(night.server, ["report"])["metadata"]
    base = night.server.base
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            # tall enough for the whole top-down graph: the UI renders only the nodes inside the viewport
            context = browser.new_context(viewport={"width": 1000, "height": 2200})
            # top-down, like the seed's diagram (the UI's own toggle, ⌥O, stores the same setting)
            context.add_init_script("window.localStorage.setItem('asset-graph-direction', JSON.stringify('vertical'))")
            page = context.new_page()
            page.set_default_timeout(90_000)

            page.goto(f"{base}/locations/{REPO}@{LOCATION}/asset-groups/abstraction")
            for name in ABSTRACTION:
                page.get_by_text(name, exact=True).first.wait_for(state="visible")
            assert ABSTRACTION == group_now().split(";")[0].removeprefix("assets: ").split(", ")
            page.get_by_text("anthropic", exact=True).first.wait_for(state="visible")  # kinds badges
            page.wait_for_timeout(1500)  # the graph animates its zoom-to-fit
            graph = ARTIFACTS / "asset-graph.png"
            page.screenshot(path=str(graph))

            page.set_viewport_size({"width": 1280, "height": 1000})
            page.goto(f"{base}/assets/report")
            for label in ("tokens_before", "tokens_after", "token_reduction_pct", "estimated_cost_usd", "report_path"):
                page.get_by_text(label, exact=True).first.wait_for(state="visible")
            body = page.locator("body").inner_text()
            assert night.first_run in body  # the report table of the latest materialisation
            assert str(report["tokens_before"]) in body.replace(",", "")
            assert "team:agent-memory" in body or "agent-memory" in body  # owner badge
            page.screenshot(path=str(ARTIFACTS / "asset-report.png"), full_page=True)

            page.goto(f"{base}/assets/compressed_memories")
            page.get_by_text("compression_ratios", exact=True).first.wait_for(state="visible")
            # the markdown metadata renders after the labels: Playwright's assertion waits for it (90 s, the page's)
            expect(page.locator("body")).to_contain_text("members per cluster", timeout=90_000)
            page.screenshot(path=str(ARTIFACTS / "asset-compressed-memories.png"), full_page=True)
        finally:
            browser.close()
    # The README's picture is retaken only when what it shows changed (an asset or a check added): it records
    # what was waited for on the page (test_asset_graph_picture.py compares that with the definitions).
    seen = group_now()
    if not README_SCREENSHOT.exists() or texts(README_SCREENSHOT).get(SHOWN) != seen:
        README_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        README_SCREENSHOT.write_bytes(with_text(graph.read_bytes(), SHOWN, seen))


CHECK_EXECUTIONS = """query($key: AssetKeyInput!, $check: String!) {
  assetCheckExecutions(assetKey: $key, checkName: $check, limit: 1) {
    runId status
    evaluation { success severity description metadataEntries { %s } }
  } }"""


def test_a_violated_invariant_fails_its_blocking_check_visibly_over_graphql(night: Night) -> None:
    if night.first_run is None:
        pytest.skip("needs the first test's run")
    from memory_pipeline_tests.ui.server import METADATA_FIELDS

    # a memory the first run archived is pinned afterwards: the store now breaks "protected memories are never
    # archived", and the next run's blocking check must stop it before atoms and the report
    with MemoryStore(night.home / "memory.duckdb").connect() as con:
        (victim,) = con.execute(
            """SELECT id FROM memories WHERE lifecycle = 'archived' AND archived_by IS NOT NULL
               AND NOT starts_with(archived_by, 'dedupe:') ORDER BY id LIMIT 1"""
        ).fetchone()
        con.execute("UPDATE memories SET pinned = true WHERE id = ?", [victim])
    run_id, status = _launch_nightly(night)
    assert status == "FAILURE"

    data = night.server.graphql(
        CHECK_EXECUTIONS % METADATA_FIELDS,
        {"key": {"path": ["archive_updates"]}, "check": "protected_memories_untouched"},
    )
    (execution,) = data["assetCheckExecutions"]
    assert execution["runId"] == run_id and execution["status"] == "FAILED"
    evaluation = execution["evaluation"]
    assert evaluation["success"] is False and evaluation["severity"] == "ERROR"
    meta = {e["label"]: e for e in evaluation["metadataEntries"]}
    assert meta["violations"]["intValue"] == 1 and victim in meta["examples"]["text"]
    # blocking: nothing downstream ran, so the report's latest materialisation is still the first run's
    assert latest_materialization(night.server, ["report"])["run_id"] == night.first_run
    steps = night.server.graphql(
        """query($id: ID!) { runOrError(runId: $id) { ... on Run { stepStats { stepKey status } } } }""",
        {"id": run_id},
    )["runOrError"]["stepStats"]
    status_of = {s["stepKey"]: s["status"] for s in steps}
    assert status_of["archive_updates_protected_memories_untouched"] == "FAILURE"
    assert status_of.get("report") in (None, "SKIPPED")


def _journal_daily_keys() -> list[list[str]]:
    from memory_pipeline.defs.journals.assets import DAILY_ASSETS

    return [list(key.path) for a in DAILY_ASSETS for key in a.keys]


def test_a_journal_backfill_launched_over_graphql_completes(night: Night) -> None:
    keys = _journal_daily_keys()
    launched = night.server.graphql(
        """mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) {
             __typename ... on LaunchBackfillSuccess { backfillId } ... on Error { message } } }""",
        {
            "params": {
                "assetSelection": [{"path": k} for k in keys],
                "partitionNames": BACKFILL_DAYS,
                "runConfigData": IN_PROCESS,
                "title": "journals: reconstruct two days",
            }
        },
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill_id = launched["backfillId"]
    started = time.monotonic()
    status: dict[str, Any] = {}
    while time.monotonic() - started < 900:  # a bound for two runs beside load, not a target
        status = night.server.graphql(
            """query($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill {
                 status numPartitions runs(limit: 20) { runId status tags { key value } } } } }""",
            {"id": backfill_id},
        )["partitionBackfillOrError"]
        if status["status"] not in ("REQUESTED", "CANCELING", "FAILING"):
            break
        time.sleep(2)
    print(f"journal backfill {backfill_id}: {status['status']} in {time.monotonic() - started:.1f}s")
    assert status["status"] in ("COMPLETED_SUCCESS", "COMPLETED"), (status, night.server.log_tail())
    assert status["numPartitions"] == len(BACKFILL_DAYS)
    runs = status["runs"]
    assert runs and all(r["status"] == "SUCCESS" for r in runs)
    tags = [{t["key"]: t["value"] for t in r["tags"]} for r in runs]
    assert len(runs) == 1, runs  # single-run backfill policy: one run over the range
    assert (tags[0]["dagster/asset_partition_range_start"], tags[0]["dagster/asset_partition_range_end"]) == (
        BACKFILL_DAYS[0],
        BACKFILL_DAYS[-1],
    )
    for day in BACKFILL_DAYS:
        assert (night.home / "knowledge" / "journal" / f"{day}.md").exists()
