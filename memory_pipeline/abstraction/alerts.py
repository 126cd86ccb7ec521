"""Alert rules as plain functions: what deserves a person's attention, and how urgently."""

from __future__ import annotations

from typing import Any

from memory_pipeline.operator.alert import Alert

MAX_RUN_MINUTES = 30.0


def from_check(
    run_id: str, asset: str, check: str, passed: bool, severity: str, metadata: dict[str, Any]
) -> Alert | None:
    """A failed check alerts: ERROR needs action, WARN is information."""
    if passed:
        return None
    priority = "action" if severity == "ERROR" else "info"
    return Alert(priority, f"CHECK {severity} {asset}.{check} failed", "check", run_id, metadata)


def from_run_failure(run_id: str, job: str, message: str) -> Alert:
    return Alert("action", f"RUN FAILED {job}", "run", run_id, {"message": message[:2000]})


def from_report(run_id: str, report: dict[str, Any]) -> Alert:
    """Every report is posted as a summary; 'action' on a FAIL verdict (a quiet night's PASS is not one), errors,
    a negative token reduction or a run over MAX_RUN_MINUTES, else 'info'."""
    verdict = report.get("verdict", "FAIL")
    errors = int(report.get("errors", 0) or 0)
    reduction = float(report.get("token_reduction_pct", 0.0) or 0.0)
    minutes = float(report.get("duration_ms", 0) or 0) / 60_000
    reasons = [
        reason
        for reason, hit in (
            ("verdict FAIL", verdict == "FAIL"),
            (f"{errors} error(s)", errors > 0),
            ("negative token reduction", reduction < 0),
            (f"run took {minutes:.0f} min", minutes > MAX_RUN_MINUTES),
        )
        if hit
    ]
    subject = (
        f"COMPRESSION RUN {verdict}: {report.get('abstractions_created', 0)} abstractions, {reduction}% token reduction"
    )
    details = dict(report) | ({"why": reasons} if reasons else {})
    return Alert("action" if reasons else "info", subject, "report", run_id, details)
