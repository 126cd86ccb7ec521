import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.abstraction import alerts
from memory_pipeline.defs.abstraction import sensors
from memory_pipeline.defs.abstraction.sensors import consolidation_alerts
from memory_pipeline.resources.notifier import NotifierResource
from memory_pipeline.store import MemoryStore
from memory_pipeline_tests.conftest import run_job


def read_alerts(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def break_lineage(home: Path) -> None:
    """An archived memory that no summary lists: the lineage check must fail with ERROR."""
    with MemoryStore(home / "memory.duckdb").transaction() as con:
        con.execute(
            "UPDATE memories SET lifecycle = 'archived', archived_by = 'nobody', prior_importance = importance, "
            "importance = 0.5 WHERE id = (SELECT min(id) FROM memories WHERE lifecycle = 'active' AND importance < 2.5"
            " AND kind = 'observation' AND NOT pinned AND NOT locked)"
        )


def test_sensor_alerts_on_failed_error_check_failed_run_and_reports(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an on-disk instance: the default SQLite storage shards events per run, as under `dagster dev`
    (tmp_path / "dagster_home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster_home")) as instance:
        notifier = NotifierResource(alerts_path=str(tmp_path / "alerts.jsonl"))
        good = run_job(workspace, instance=instance)
        assert good.success
        break_lineage(workspace)
        bad = run_job(workspace, instance=instance)
        assert not bad.success  # the blocking check stopped the run

        context = dg.build_sensor_context(instance=instance, resources={"notifier": notifier})
        outcome = consolidation_alerts(context)
        sent = read_alerts(tmp_path / "alerts.jsonl")
        by_source = {(a["source"], a["run_id"]): a for a in sent}
        report_alert = by_source[("report", good.run_id)]
        assert report_alert["priority"] == "info" and report_alert["subject"].startswith("COMPRESSION RUN PASS")
        check_alerts = [a for a in sent if a["source"] == "check" and a["run_id"] == bad.run_id]
        assert [a["subject"] for a in check_alerts] == ["CHECK ERROR archive_updates.lineage_consistent failed"]
        assert check_alerts[0]["priority"] == "action"
        assert by_source[("run", bad.run_id)]["priority"] == "action"
        assert "sent" in outcome.skip_message

        # the cursor advanced: evaluating again sends nothing new
        again = dg.build_sensor_context(instance=instance, cursor=context.cursor, resources={"notifier": notifier})
        consolidation_alerts(again)
        assert len(read_alerts(tmp_path / "alerts.jsonl")) == len(sent)

        # one run per tick: the same alerts arrive in the same order, none skipped or repeated
        monkeypatch.setattr(sensors, "BATCH", 1)
        cursor, trickled = sensors.AlertCursor(), []
        for _ in range(10):
            found, cursor = sensors.collect_alerts(instance, cursor)
            trickled += found
        expected = [(a["source"], a["run_id"], a["subject"]) for a in sent]
        assert [(a.source, a.run_id, a.subject) for a in trickled] == expected


@pytest.mark.parametrize(
    ("report", "priority", "why"),
    [
        ({"verdict": "PASS", "errors": 0, "token_reduction_pct": 20.0, "duration_ms": 1000}, "info", None),
        ({"verdict": "FAIL", "errors": 0, "token_reduction_pct": 0.0, "duration_ms": 1000}, "action", "verdict FAIL"),
        ({"verdict": "PARTIAL", "errors": 2, "token_reduction_pct": 5.0, "duration_ms": 1}, "action", "2 error(s)"),
        ({"verdict": "PASS", "errors": 0, "token_reduction_pct": -1.0, "duration_ms": 1}, "action", "negative token"),
        ({"verdict": "PASS", "errors": 0, "token_reduction_pct": 9.0, "duration_ms": 31 * 60_000}, "action", "31 min"),
    ],
)
def test_report_priority_follows_the_seed(report: dict, priority: str, why: str | None) -> None:
    alert = alerts.from_report("r", report)
    assert alert.priority == priority
    if why:
        assert any(why in reason for reason in alert.details["why"])


def test_warn_check_is_info_and_passed_check_is_silent() -> None:
    assert alerts.from_check("r", "report", "report_health", True, "WARN", {}) is None
    assert alerts.from_check("r", "report", "report_health", False, "WARN", {}).priority == "info"


def test_webhook_receives_a_slack_compatible_post(tmp_path: Path) -> None:
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.handle_request, daemon=True)
    thread.start()
    try:
        notifier = NotifierResource(
            alerts_path=str(tmp_path / "alerts.jsonl"), webhook_url=f"http://127.0.0.1:{server.server_port}/hook"
        )
        notifier.send(alerts.from_report("run-1", {"verdict": "FAIL", "abstractions_created": 0}))
        thread.join(timeout=10)
    finally:
        server.server_close()
    assert received and received[0]["text"].startswith("[action] COMPRESSION RUN FAIL")
    assert received[0]["alert"]["run_id"] == "run-1"
    assert read_alerts(tmp_path / "alerts.jsonl")[0]["priority"] == "action"
