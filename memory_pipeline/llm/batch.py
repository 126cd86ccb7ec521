"""Message Batches: submit once, persist the batch id, poll, collect once.

Each request's `custom_id` is a digest of its exact parameters (model, prompts, max_tokens, temperature),
so the same request in a later run is recognised whatever the run or the cluster is called. Before
submitting, the runner looks for this stage's recent batches (within `resume_window_s`):

- a request inside a batch that is still `submitted` (a run died while polling) is not sent again: that
  batch is polled and collected;
- a request that already *succeeded* in a collected batch reuses the stored result (no second call, no
  second charge); errored/expired/canceled requests are sent again.

Usage is recorded (ledger, `api=batch`, deterministic ids) when a batch is collected, by the run that
collects it; the batch file is then marked `collected` with its results.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from memory_pipeline.llm.ledger import BatchRecord, CallRecord, Ledger, _now_iso
from memory_pipeline.llm.pricing import PriceTable, Usage
from memory_pipeline.llm.retry import LLMCallFailed, RetryPolicy
from memory_pipeline.llm.secrets import redact


def custom_id_for(stage: str, params: Mapping[str, Any]) -> str:
    """`^[a-zA-Z0-9_-]{1,64}$`, as the API requires; stable for identical parameters."""
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
    return f"{stage[:7]}-{digest[:56]}"


def message_text(message: Any) -> str:
    blocks = [b for b in message.content if getattr(b, "type", "") == "text"]
    return "".join(getattr(b, "text", "") or "" for b in blocks)


def _result_error(result: Any) -> str:
    error = getattr(result, "error", None)
    inner = getattr(error, "error", None)
    kind = getattr(inner, "type", None) or getattr(error, "type", None) or result.type
    message = getattr(inner, "message", None) or ""
    return f"{result.type}: {kind}" + (f": {message}" if message else "")


class BatchRunner:
    def __init__(
        self,
        client: Any,
        ledger: Ledger,
        retry: RetryPolicy,
        prices: PriceTable,
        model: str,
        *,
        poll_interval_s: float = 30.0,
        max_wait_s: float = 5 * 3600.0,
        resume_window_s: float = 30 * 3600.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        log: Callable[[str], object] = lambda _msg: None,
        secrets: tuple[str, ...] = (),
    ) -> None:
        self.client = client
        self.ledger = ledger
        self.retry = retry
        self.prices = prices
        self.model = model
        self.poll_interval_s = poll_interval_s
        self.max_wait_s = max_wait_s
        self.resume_window_s = resume_window_s
        self.sleep = sleep
        self.clock = clock
        self.log = log
        self.secrets = secrets
        self.submitted: list[str] = []  # batch ids this runner created
        self.resumed: list[str] = []  # batch ids this runner polled after another run submitted them

    def known(self, stage: str, custom_ids: list[str]) -> dict[str, BatchRecord]:
        """custom_id → the recent batch that already holds (or will hold) its result."""
        wanted = set(custom_ids)
        found: dict[str, BatchRecord] = {}
        for batch in self.ledger.batches(stage, since_epoch=self.clock() - self.resume_window_s):
            if batch.status == "failed":
                continue
            for cid in batch.custom_ids:
                if cid in wanted and cid not in found and (batch.status == "submitted" or batch.succeeded(cid)):
                    found[cid] = batch
        return found

    def run(self, stage: str, requests: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        """custom_id → stored result ({"type": "succeeded", "text", "usage"} or {"type", "error"})."""
        known = self.known(stage, list(requests))
        fresh = {cid: params for cid, params in requests.items() if cid not in known}
        owner: dict[str, str] = {cid: b.batch_id for cid, b in known.items()}
        batches: dict[str, BatchRecord] = {b.batch_id: b for b in known.values()}
        if fresh:
            created = self._submit(stage, fresh)
            batches[created.batch_id] = created
            owner.update({cid: created.batch_id for cid in fresh})
        for batch_id, batch in list(batches.items()):
            if batch.status == "submitted":
                if batch.batch_id not in self.submitted:
                    self.resumed.append(batch.batch_id)
                    self.log(f"Batch: resuming {batch.batch_id} (submitted by run {batch.run_id}), not resubmitting")
                batches[batch_id] = self._collect(batch)
            elif batch.batch_id not in self.submitted:
                self.log(f"Batch: reusing results collected from {batch.batch_id}")
        missing = {"type": "missing", "error": "missing: no result for this request in the batch"}
        return {cid: batches[owner[cid]].results.get(cid, missing) for cid in requests}

    def _submit(self, stage: str, requests: Mapping[str, Mapping[str, Any]]) -> BatchRecord:
        payload = [{"custom_id": cid, "params": dict(params)} for cid, params in requests.items()]
        # A timeout or a dropped connection may hide a batch that was created: sending it again could pay
        # twice, so only errors that say the request was refused (429, 5xx) are retried here.
        created, _ = self.retry.call(
            lambda: self.client.messages.batches.create(requests=payload), connection_errors=False
        )
        record = BatchRecord(
            batch_id=created.id,
            stage=stage,
            model=self.model,
            run_id=self.ledger.run_id,
            custom_ids=list(requests),
            submitted_epoch=self.clock(),
        )
        self.ledger.save_batch(record)
        self.submitted.append(created.id)
        self.log(f"Batch: submitted {created.id} with {len(requests)} {stage} request(s)")
        return record

    def _collect(self, record: BatchRecord) -> BatchRecord:
        deadline = self.clock() + self.max_wait_s
        while True:
            batch, _ = self.retry.call(lambda: self.client.messages.batches.retrieve(record.batch_id))
            if batch.processing_status == "ended":
                break
            if self.clock() >= deadline:
                raise LLMCallFailed(
                    f"batch {record.batch_id} still {batch.processing_status} after {self.max_wait_s:g} s; "
                    "the next run resumes it"
                )
            counts = batch.request_counts
            self.log(
                f"Batch: {record.batch_id} {batch.processing_status} ({counts.processing} processing, "
                f"{counts.succeeded} succeeded); next poll in {self.poll_interval_s:g} s"
            )
            self.sleep(self.poll_interval_s)
        entries, _ = self.retry.call(lambda: list(self.client.messages.batches.results(record.batch_id)))
        results: dict[str, dict[str, Any]] = {}
        calls: list[CallRecord] = []
        for entry in entries:
            result = entry.result
            call = CallRecord(
                id=f"{record.batch_id}:{entry.custom_id}",
                run_id=self.ledger.run_id,
                stage=record.stage,
                key=entry.custom_id,
                model=record.model,
                api="batch",
                status="ok",
                batch_id=record.batch_id,
                epoch=self.clock(),
            )
            if result.type == "succeeded":
                usage = Usage.from_api(result.message.usage)
                results[entry.custom_id] = {
                    "type": "succeeded",
                    "text": message_text(result.message),
                    "usage": usage.as_dict(),
                    "stop_reason": getattr(result.message, "stop_reason", None),
                }
                call.usage, call.cost_usd = usage, self.prices.cost(usage, batch=True)
            else:  # errored, canceled, expired: not billed
                error = redact(_result_error(result), self.secrets)
                results[entry.custom_id] = {"type": result.type, "error": error}
                call.status, call.error = "error", error
            calls.append(call)
        # Usage first, then the batch file: a crash in between re-collects, and the ledger's read
        # deduplicates the records by their deterministic ids.
        for call in calls:
            self.ledger.record(call)
        record.status = "collected"
        record.processing_status = "ended"
        record.results = results
        record.collected_at = _now_iso()
        record.collected_by_run = self.ledger.run_id
        self.ledger.save_batch(record)
        ok = sum(1 for r in results.values() if r["type"] == "succeeded")
        self.log(f"Batch: collected {record.batch_id}: {ok}/{len(results)} succeeded")
        return record
