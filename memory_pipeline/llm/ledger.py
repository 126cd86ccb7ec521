"""The usage ledger: one record per LLM call, and the state of every Message Batch.

Files under the workspace's `reports/` folder rather than store tables: `distillations` calls the API
outside the store's single-writer pool, so it must not write DuckDB. The files are append-only and
crash-safe, and DuckDB reads them directly when an operator wants to query spend:

    SELECT run_id, sum(cost_usd) FROM read_json_auto('reports/llm-usage/*.jsonl') GROUP BY run_id

    reports/llm-usage/<run_id>.jsonl      one CallRecord per line (fsync'd), deduplicated by id on read
    reports/llm-batches/<batch_id>.json   one BatchRecord, replaced atomically on every change
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_pipeline.llm.pricing import PriceTable, Usage


def _now_iso() -> str:
    return datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


@dataclass
class CallRecord:
    run_id: str
    stage: str  # distill | enrich
    key: str  # cluster id (distill), summary/custom id (enrich)
    model: str
    api: str  # messages | batch
    status: str  # ok | error
    attempts: int = 1
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    request_id: str | None = None
    batch_id: str | None = None
    error: str | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created_at: str = field(default_factory=_now_iso)
    epoch: float = field(default_factory=time.time)  # wall clock, for the run-wide rate limiter

    def to_json(self) -> str:
        data = asdict(self)
        data.pop("usage")
        return json.dumps({**data, **self.usage.as_dict()}, sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> CallRecord:
        data = json.loads(line)
        usage = Usage.from_api(data)
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "usage"}
        return cls(usage=usage, **known)


@dataclass
class BatchRecord:
    batch_id: str
    stage: str
    model: str
    run_id: str  # the run that submitted it
    custom_ids: list[str]
    status: str = "submitted"  # submitted | collected | failed
    submitted_at: str = field(default_factory=_now_iso)
    submitted_epoch: float = field(default_factory=time.time)
    collected_at: str | None = None
    collected_by_run: str | None = None
    processing_status: str | None = None
    error: str | None = None
    # custom_id → {"type": "succeeded", "text": …, "usage": {…}} or {"type": "errored"|"expired"|…, "error": …}
    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    def succeeded(self, custom_id: str) -> bool:
        return self.results.get(custom_id, {}).get("type") == "succeeded"


@dataclass(frozen=True)
class UsageSummary:
    calls: int
    failed_calls: int
    messages: Usage
    batch: Usage
    messages_calls: int
    batch_calls: int

    @property
    def total(self) -> Usage:
        return self.messages + self.batch

    def cost(self, prices: PriceTable) -> float:
        return prices.cost(self.messages) + prices.cost(self.batch, batch=True)


def summarise(calls: list[CallRecord]) -> UsageSummary:
    ok = [c for c in calls if c.status == "ok"]
    messages, batch = Usage(), Usage()
    for c in ok:
        if c.api == "batch":
            batch = batch + c.usage
        else:
            messages = messages + c.usage
    return UsageSummary(
        calls=len(ok),
        failed_calls=len(calls) - len(ok),
        messages=messages,
        batch=batch,
        messages_calls=sum(1 for c in ok if c.api != "batch"),
        batch_calls=sum(1 for c in ok if c.api == "batch"),
    )


class Ledger:
    """In-memory ledger (unit tests, ad-hoc use); `FileLedger` persists the same records."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._calls: dict[str, CallRecord] = {}
        self._batches: dict[str, BatchRecord] = {}

    def record(self, call: CallRecord) -> None:
        self._calls[call.id] = call

    def calls(self) -> list[CallRecord]:
        return [c for c in self._calls.values() if c.run_id == self.run_id]

    def summary(self) -> UsageSummary:
        return summarise(self.calls())

    def spent_usd(self) -> float:
        return sum(c.cost_usd for c in self.calls() if c.status == "ok")

    def call_times(self) -> list[float]:
        return [c.epoch for c in self.calls()]

    def batches(self, stage: str, since_epoch: float = 0.0) -> list[BatchRecord]:
        """This stage's batches submitted since `since_epoch`, newest first (any run's)."""
        found = [b for b in self._batches.values() if b.stage == stage and b.submitted_epoch >= since_epoch]
        return sorted(found, key=lambda b: -b.submitted_epoch)

    def save_batch(self, batch: BatchRecord) -> None:
        self._batches[batch.batch_id] = batch

    def for_run(self, run_id: str) -> Ledger:
        """The same storage seen from another run (a resumed run after a crash)."""
        other = Ledger(run_id)
        other._calls, other._batches = self._calls, self._batches
        return other


_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


class FileLedger(Ledger):
    def __init__(self, reports_dir: Path | str, run_id: str) -> None:
        super().__init__(run_id)
        self.root = Path(reports_dir)
        self.usage_dir = self.root / "llm-usage"
        self.batch_dir = self.root / "llm-batches"

    def _usage_path(self, run_id: str) -> Path:
        return self.usage_dir / f"{_SAFE.sub('_', run_id)}.jsonl"

    def record(self, call: CallRecord) -> None:
        self.usage_dir.mkdir(parents=True, exist_ok=True)
        with open(self._usage_path(call.run_id), "a", encoding="utf-8") as fh:
            fh.write(call.to_json() + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def calls(self) -> list[CallRecord]:
        path = self._usage_path(self.run_id)
        if not path.exists():
            return []
        found: dict[str, CallRecord] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                call = CallRecord.from_json(line)
            except (ValueError, TypeError):
                continue  # a line torn by a crash mid-write
            found[call.id] = call
        return list(found.values())

    def batches(self, stage: str, since_epoch: float = 0.0) -> list[BatchRecord]:
        if not self.batch_dir.exists():
            return []
        found = []
        for path in self.batch_dir.glob("*.json"):
            try:
                batch = BatchRecord(**json.loads(path.read_text(encoding="utf-8")))
            except (ValueError, TypeError):
                continue
            if batch.stage == stage and batch.submitted_epoch >= since_epoch:
                found.append(batch)
        return sorted(found, key=lambda b: -b.submitted_epoch)

    def save_batch(self, batch: BatchRecord) -> None:
        self.batch_dir.mkdir(parents=True, exist_ok=True)
        path = self.batch_dir / f"{_SAFE.sub('_', batch.batch_id)}.json"
        tmp = path.with_suffix(".json.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(asdict(batch), indent=1, sort_keys=True))
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)

    def for_run(self, run_id: str) -> FileLedger:
        return FileLedger(self.root, run_id)
