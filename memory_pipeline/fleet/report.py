"""The fleet report: one row per agent — its last night's verdict, token reduction, cost and
duration, when it last succeeded, whether it was deferred and why — and which agents have gone too long without a
successful night."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memory_pipeline.fleet.budget import Reservation

STALE_AFTER = timedelta(hours=48)
OVERDUE_AFTER = timedelta(hours=2)  # a night's expected bound: deploy/fleet/dagster.yaml's max_runtime_seconds
# a night that ran whole, a quiet one (nothing new to consolidate: PASS) included; FAIL (clusters to try and none
# compressed, errors) is not one
SUCCESS_VERDICTS = ("PASS", "PARTIAL")


@dataclass(frozen=True)
class Night:
    """One finished night of an agent, as its `report` materialisation and run report describe it."""

    run_id: str
    finished: datetime
    verdict: str
    token_reduction_pct: float
    cost_usd: float
    duration_s: float
    verdict_reason: str = ""
    clusters_deferred: int = 0
    retention: float | None = None  # knowledge kept by the night's probes (None: not measured)


@dataclass(frozen=True)
class AgentRow:
    agent: str
    verdict: str  # NONE: no night yet
    token_reduction_pct: float
    cost_usd: float
    duration_s: float
    last_success: str  # ISO time, or "" when never
    hours_since_success: float | None
    deferred: str  # "" when nothing was deferred; else why
    stale: bool
    in_flight: str = ""  # "" when no night is queued or running; else which, in what state, for how long
    overdue: bool = False  # a night in flight longer than OVERDUE_AFTER
    retention: float | None = None  # the last night's knowledge retention (None: not measured)


@dataclass(frozen=True)
class Running:
    """A night not finished yet: queued, starting, started or being cancelled, since `since`."""

    run_id: str
    status: str
    since: datetime


def night_from_report(path: Path, run_id: str, finished: datetime, metadata: dict[str, Any]) -> Night:
    """A night from the `report` asset's metadata, completed by its JSON report (reason, deferrals) when it can
    still be read — a workspace moved since only loses those two fields."""
    payload: dict[str, Any] = {}
    try:
        payload = json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    llm = payload.get("llm") or {}
    probes: dict[str, Any] = {}
    try:  # the knowledge_retention check's figures, beside the report
        probes = json.loads((path.parent / f"retention-{run_id}.json").read_text())
    except (OSError, ValueError):
        pass
    return Night(
        run_id=run_id,
        finished=finished,
        verdict=str(metadata.get("verdict", payload.get("verdict", "?"))),
        token_reduction_pct=float(metadata.get("token_reduction_pct", 0.0)),
        cost_usd=float(metadata.get("estimated_cost_usd", 0.0)),
        duration_s=float(metadata.get("duration_ms", 0)) / 1000.0,
        verdict_reason=str(payload.get("verdict_reason", "")),
        clusters_deferred=int(llm.get("clusters_deferred", 0) or 0),
        retention=float(probes["retention"]) if isinstance(probes.get("retention"), (int, float)) else None,
    )


def agent_row(
    agent: str, nights: list[Night], registered: datetime, now: datetime,
    reservations: dict[str, Reservation] | None = None, running: list[Running] | None = None,
) -> AgentRow:
    """`nights`: the agent's finished nights, any order; `reservations`: the fleet budget's, by run id;
    `running`: its nights not finished yet. Stale: no successful night for STALE_AFTER, counted from
    registration for an agent that never had one. Overdue: a night in flight for longer than OVERDUE_AFTER —
    a hung night shows here, not as the last finished night's verdict."""
    latest = max(nights, key=lambda n: n.finished, default=None)
    ok = [n for n in nights if n.verdict in SUCCESS_VERDICTS]
    last_ok = max((n.finished for n in ok), default=None)
    since = now - (last_ok or registered)
    deferred = ""
    if latest is not None and latest.clusters_deferred:
        held = (reservations or {}).get(latest.run_id)
        why = (f"fleet cap ${held.fleet_cap_usd:g} for the night reached (allowance ${held.allowance_usd:g} of "
               f"the agent's ${held.agent_cap_usd:g})" if held and held.limited_by_fleet
               else f"the agent's own cap: {latest.verdict_reason or 'cost cap reached'}")
        deferred = f"{latest.clusters_deferred} clusters deferred to the next night — {why}"
    return AgentRow(
        agent=agent,
        verdict=latest.verdict if latest else "NONE",
        token_reduction_pct=latest.token_reduction_pct if latest else 0.0,
        cost_usd=latest.cost_usd if latest else 0.0,
        duration_s=latest.duration_s if latest else 0.0,
        last_success=last_ok.isoformat() if last_ok else "",
        hours_since_success=round((now - last_ok).total_seconds() / 3600, 1) if last_ok else None,
        deferred=deferred,
        stale=since > STALE_AFTER,
        retention=latest.retention if latest else None,
        **_in_flight(running or [], now),
    )


def _in_flight(running: list[Running], now: datetime) -> dict[str, Any]:
    if not running:
        return {}
    oldest = min(running, key=lambda r: r.since)
    age = now - oldest.since
    return {"in_flight": f"{oldest.run_id[:8]} {oldest.status} for {int(age.total_seconds() // 60)} min",
            "overdue": age > OVERDUE_AFTER}


def summary(rows: list[AgentRow]) -> dict[str, Any]:
    """The numbers the UI plots across runs of the fleet report."""
    verdicts = [r.verdict for r in rows]
    return {
        "agents": len(rows),
        "agents_pass": verdicts.count("PASS"),
        "agents_partial": verdicts.count("PARTIAL"),
        "agents_fail": verdicts.count("FAIL"),
        "agents_without_night": verdicts.count("NONE"),
        "agents_deferred": sum(1 for r in rows if r.deferred),
        "agents_stale": sum(1 for r in rows if r.stale),
        "agents_in_flight": sum(1 for r in rows if r.in_flight),
        "agents_overdue": sum(1 for r in rows if r.overdue),
        "fleet_cost_usd": round(sum(r.cost_usd for r in rows), 6),
        "mean_token_reduction_pct": round(sum(r.token_reduction_pct for r in rows) / len(rows), 2) if rows else 0.0,
    }


def as_records(rows: list[AgentRow]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]


def markdown(rows: list[AgentRow]) -> str:
    head = ("| agent | verdict | reduction % | retention | cost $ | duration s | last success | deferred | stale "
            "| in flight |")  # fmt: skip
    lines = [head, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    lines += [
        f"| {r.agent} | {r.verdict} | {r.token_reduction_pct:g} | "
        f"{'' if r.retention is None else f'{r.retention:.3f}'} | {r.cost_usd:.4f} | {r.duration_s:.1f} | "
        f"{r.last_success or 'never'} | {r.deferred or ''} | {'**yes**' if r.stale else ''} | "
        f"{r.in_flight}{' **overdue**' if r.overdue else ''} |"
        for r in rows
    ]
    return "\n".join(lines)


def write(reports: Path, now: datetime, rows: list[AgentRow], numbers: dict[str, Any]) -> Path:
    """`<reports>/fleet-<UTC time>.json`, written whole (temp file, then rename)."""
    reports.mkdir(parents=True, exist_ok=True)
    path = reports / f"fleet-{now:%Y%m%dT%H%M%SZ}.json"
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({"generated_at": now.isoformat(), **numbers, "agents": as_records(rows)}, indent=1))
    os.replace(tmp, path)
    return path
