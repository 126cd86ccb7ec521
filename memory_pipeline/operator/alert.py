"""One alert as the notifier sends it (written to alerts.jsonl, posted to the webhook); the rules that raise
alerts belong to the domains (e.g. abstraction/alerts.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Alert:
    priority: str  # "action" (a person should look) | "info"
    subject: str
    source: str  # check | run | report
    run_id: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
