"""External indexes kept in step through the outbox (e.g. a separate vector store). An index applies an
action idempotently, keyed by the action's id, so an action applied twice (a drain that died between
applying and marking it done) has its effect once.

`DirectoryIndex` is the one bundled: one JSON file per indexed memory under `<workspace>/indexes/<name>/items`
and a ledger of applied action ids (`applied.jsonl`, fsynced). Stand-in for a real vector store; the drain
protocol does not depend on it."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

ACTIONS = ("upsert", "delete")


@dataclass(frozen=True)
class OutboxAction:
    id: str
    index_name: str
    action: str
    target_id: str
    payload: dict[str, Any]


class ExternalIndex(Protocol):
    name: str

    def apply(self, action: OutboxAction) -> None: ...


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


class DirectoryIndex:
    def __init__(self, root: Path, name: str) -> None:
        self.root = Path(root)
        self.name = name
        self.items = self.root / "items"
        self.ledger = self.root / "applied.jsonl"
        self._applied: set[str] | None = None

    def applied_ids(self) -> list[str]:
        """Every ledger entry, duplicates included (tests count them)."""
        if not self.ledger.exists():
            return []
        return [json.loads(line)["id"] for line in self.ledger.read_text(encoding="utf-8").splitlines() if line]

    def holds(self, memory_id: str) -> bool:
        return (self.items / f"{_safe(memory_id)}.json").exists()

    def apply(self, action: OutboxAction) -> None:
        if self._applied is None:
            self._applied = set(self.applied_ids())
        if action.id in self._applied:
            return
        self.items.mkdir(parents=True, exist_ok=True)
        path = self.items / f"{_safe(action.target_id)}.json"
        if action.action == "upsert":
            tmp = path.with_suffix(".json.tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump({"id": action.target_id, **action.payload}, fh, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            tmp.replace(path)
        elif action.action == "delete":
            path.unlink(missing_ok=True)
        else:
            raise ValueError(f"index {self.name}: unknown action {action.action!r} (known: {', '.join(ACTIONS)})")
        with open(self.ledger, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"id": action.id, "action": action.action, "target": action.target_id}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self._applied.add(action.id)


def directory_indexes(workspace: Path, names: list[str]) -> dict[str, ExternalIndex]:
    return {n: DirectoryIndex(Path(workspace) / "indexes" / _safe(n), n) for n in names}


def parse_index_names(spec: str) -> list[str]:
    """`MEMORY_PIPELINE_EXTERNAL_INDEXES` / EngineConfig.external_indexes: comma-separated names."""
    return sorted({part.strip() for part in spec.split(",") if part.strip()})
