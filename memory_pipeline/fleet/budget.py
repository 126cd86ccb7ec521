"""The fleet's nightly cost cap: every agent's night has its own cap (COMPRESSION_MAX_COST_USD)
and the fleet a cap per night (MEMORY_PIPELINE_FLEET_MAX_COST_USD) that no set of concurrent nights can cross.

A night reserves its allowance when it starts — min(its own cap, what the fleet has left) — in one ledger per
night under the fleet root, read and rewritten under an exclusive lock. What the fleet has left counts each other
night at what it really spent once it has finished (its usage ledger) and at its whole reservation while it has
not, so concurrent nights never over-commit. A night that died keeps its reservation counted: conservative."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

FLEET_CAP_ENV = "MEMORY_PIPELINE_FLEET_MAX_COST_USD"


@dataclass(frozen=True)
class Reservation:
    run_id: str
    agent: str
    allowance_usd: float
    agent_cap_usd: float
    fleet_cap_usd: float | None
    fleet_left_usd: float | None  # what the fleet had left when this night reserved (None: no fleet cap)

    @property
    def limited_by_fleet(self) -> bool:
        return self.fleet_cap_usd is not None and self.allowance_usd < self.agent_cap_usd


def fleet_cap(environ: dict[str, str] | None = None) -> float | None:
    raw = (os.environ if environ is None else environ).get(FLEET_CAP_ENV, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        from memory_pipeline.settings import SettingsError

        raise SettingsError(f"{FLEET_CAP_ENV}={raw!r}: expected a number of US dollars ≥ 0")
    return value


def ledger_path(root: Path, night: str) -> Path:
    return root / "budget" / f"{night}.json"


def reserve(
    root: Path,
    night: str,
    run_id: str,
    agent: str,
    agent_cap: float,
    cap: float | None,
    spent: Callable[[str, str], float | None],
) -> Reservation:
    """This night's allowance. Idempotent per run id: every step of a run (each may run in its own process)
    gets the same reservation. `spent(agent, run_id)` is what a night really spent once it has finished, None
    while it has not."""
    path = ledger_path(root, night)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        entries: dict[str, dict] = json.loads(path.read_text()) if path.is_file() else {}
        if run_id in entries:
            return Reservation(run_id, **entries[run_id])
        left: float | None = None
        allowance = agent_cap
        if cap is not None:
            committed = 0.0
            for other_run, entry in entries.items():
                actual = spent(entry["agent"], other_run)
                committed += entry["allowance_usd"] if actual is None else actual
            left = max(0.0, cap - committed)
            allowance = min(agent_cap, left)
        entry = {"agent": agent, "allowance_usd": round(allowance, 6), "agent_cap_usd": agent_cap,
                 "fleet_cap_usd": cap, "fleet_left_usd": None if left is None else round(left, 6)}
        entries[run_id] = entry
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(entries, indent=1, sort_keys=True))
        os.replace(tmp, path)  # the ledger is whole before or after, never half-written
        return Reservation(run_id, **entry)


def recent_reservations(root: Path, nights: int = 7) -> dict[str, Reservation]:
    """The reservations of the last `nights` nights' ledgers, by run id."""
    out: dict[str, Reservation] = {}
    for path in sorted((root / "budget").glob("*.json"))[-nights:]:
        for run_id, entry in json.loads(path.read_text()).items():
            out[run_id] = Reservation(run_id, **entry)
    return out
