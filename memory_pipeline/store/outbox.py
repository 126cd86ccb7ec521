"""The outbox (seed 004 §5): follow-up actions for external indexes, written in the same transaction as
the archive they follow, and drained crash-safely: claim → apply idempotently → mark done.

A drain that dies leaves its rows `claimed`; the next drain takes them back when their drainer is no
longer alive and applies them again — the index dedupes on the action id, so nothing is applied twice and
nothing is lost. With no external index configured nothing is enqueued. No Dagster here."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import duckdb
import pandas as pd

from memory_pipeline.faults import crash_point
from memory_pipeline.store.db import MemoryStore, atomic
from memory_pipeline.store.external_index import ExternalIndex, OutboxAction

CRASH_POINT = "draining_outbox"  # MEMORY_PIPELINE_CRASH_AT=draining_outbox: SIGKILL after an apply, before done


def action_id(index_name: str, action: str, target_id: str, summary_id: str) -> str:
    return hashlib.sha256(f"{index_name}\n{action}\n{target_id}\n{summary_id}".encode()).hexdigest()[:32]


def enqueue_compaction(
    con: duckdb.DuckDBPyConnection,
    *,
    index_names: Sequence[str],
    summary_id: str,
    summary_payload: dict[str, object],
    source_ids: Sequence[str],
    run_id: str,
    now: datetime,
) -> int:
    """Inside the caller's phase-2 transaction: per index, upsert the summary and delete every source."""
    rows: list[tuple[str, str, str, str, str]] = []
    for name in index_names:
        rows.append(
            (
                action_id(name, "upsert", summary_id, summary_id),
                name,
                "upsert",
                summary_id,
                json.dumps(summary_payload, sort_keys=True),
            )
        )
        for sid in sorted(source_ids):
            rows.append(
                (
                    action_id(name, "delete", sid, summary_id),
                    name,
                    "delete",
                    sid,
                    json.dumps({"replaced_by_summary_id": summary_id}),
                )
            )
    for row in rows:
        con.execute(
            """INSERT INTO outbox (id, index_name, action, target_id, payload, status, run_id, created_at, attempts)
               SELECT ?, ?, ?, ?, ?, 'pending', ?, ?, 0 WHERE NOT EXISTS (SELECT 1 FROM outbox WHERE id = ?)""",
            [*row, run_id, now, row[0]],
        )
    return len(rows)


def memory_payload(kind: str, nexus_keys: Sequence[str] | None, tags: Sequence[str] | None) -> dict[str, object]:
    """What an index holds for one memory (the summary upsert of a compaction has the same shape)."""
    return {"kind": kind, "nexus_keys": list(nexus_keys or []), "tags": list(tags or [])}


def enqueue_rollback(
    con: duckdb.DuckDBPyConnection,
    *,
    index_names: Sequence[str],
    restored: Sequence[tuple[str, str, Sequence[str] | None, Sequence[str] | None]],
    summary_ids: Sequence[str],
    rollback_id: str,
    now: datetime,
) -> int:
    """Inside the rollback's transaction: per index, re-upsert every restored source (id, kind, keys, tags)
    and delete every rolled-back summary. Created strictly after every action already queued for these
    targets, so a drain (which goes in (created_at, id) order) applies the compaction's delete first."""
    targets = pd.DataFrame({"id": [r[0] for r in restored] + list(summary_ids)})  # noqa: F841
    sql = "SELECT max(created_at) FROM outbox WHERE target_id IN (SELECT id FROM targets)"
    latest = con.execute(sql).fetchall()[0][0]
    at = now if latest is None or latest < now else latest + timedelta(milliseconds=1)
    rows: list[tuple[str, str, str, str, str]] = []
    for name in index_names:
        for sid, kind, keys, tags in sorted(restored, key=lambda r: r[0]):
            payload = json.dumps(memory_payload(kind, keys, tags), sort_keys=True)
            rows.append((action_id(name, "upsert", sid, "rollback:" + rollback_id), name, "upsert", sid, payload))
        for sum_id in sorted(summary_ids):
            payload = json.dumps({"rolled_back_by": rollback_id})
            rows.append((action_id(name, "delete", sum_id, "rollback:" + rollback_id), name, "delete", sum_id, payload))
    for row in rows:
        con.execute(
            """INSERT INTO outbox (id, index_name, action, target_id, payload, status, run_id, created_at, attempts)
               SELECT ?, ?, ?, ?, ?, 'pending', ?, ?, 0 WHERE NOT EXISTS (SELECT 1 FROM outbox WHERE id = ?)""",
            [*row, rollback_id, at, row[0]],
        )
    return len(rows)


def open_count(con: duckdb.DuckDBPyConnection) -> int:
    return int(con.execute("SELECT count(*) FROM outbox WHERE status <> 'done'").fetchall()[0][0])


@dataclass
class DrainResult:
    applied: int = 0
    reclaimed: int = 0
    failed: int = 0
    unknown_index: int = 0
    deferred: int = 0  # behind a failed action on the same target: left pending, in order, for the next drain
    remaining: int = 0
    errors: list[str] = field(default_factory=list)


def drain(
    store: MemoryStore,
    indexes: Mapping[str, ExternalIndex],
    drainer: str,
    now: Callable[[], datetime],
    is_alive: Callable[[str], bool],
    batch: int = 500,
    max_actions: int | None = None,
) -> DrainResult:
    """Apply open actions in (created_at, id) order until none is left (or `max_actions`)."""
    result = DrainResult()
    names = sorted(indexes)
    failed_ids: list[str] = []  # failed in this drain: not retried until the next one
    failed_targets: set[tuple[str, str]] = set()  # (index, target) with a failed action: the rest wait too
    with store.connect() as con:
        with atomic(con):
            stale = con.execute("SELECT DISTINCT claimed_by FROM outbox WHERE status = 'claimed' ORDER BY 1").fetchall()
            for (holder,) in stale:
                if holder == drainer or not is_alive(str(holder)):
                    n = con.execute(
                        "UPDATE outbox SET status = 'pending', claimed_by = NULL, claimed_at = NULL "
                        "WHERE status = 'claimed' AND claimed_by = ? RETURNING id",
                        [holder],
                    ).fetchall()
                    result.reclaimed += len(n)
            result.unknown_index = int(
                con.execute(
                    "SELECT count(*) FROM outbox WHERE status = 'pending' AND NOT list_contains(?, index_name)",
                    [names],
                ).fetchall()[0][0]
            )
        while max_actions is None or result.applied + result.failed < max_actions:
            limit = batch if max_actions is None else min(batch, max_actions - result.applied - result.failed)
            with atomic(con):
                claimed = con.execute(
                    """UPDATE outbox SET status = 'claimed', claimed_by = ?, claimed_at = ?, attempts = attempts + 1
                       WHERE id IN (SELECT id FROM outbox WHERE status = 'pending' AND list_contains(?, index_name)
                                    AND NOT list_contains(?, id) ORDER BY created_at, id LIMIT ?)
                       RETURNING id, index_name, action, target_id, payload, created_at""",
                    [drainer, now(), names, failed_ids, limit],
                ).fetchall()
            if not claimed:
                break
            for row in sorted(claimed, key=lambda r: (r[5], r[0])):
                action = OutboxAction(row[0], row[1], row[2], row[3], json.loads(row[4]) if row[4] else {})
                if (action.index_name, action.target_id) in failed_targets:
                    # an earlier action on this target failed: applying a later one first would reorder them
                    with atomic(con):
                        con.execute(
                            "UPDATE outbox SET status = 'pending', claimed_by = NULL, claimed_at = NULL WHERE id = ?",
                            [action.id],
                        )
                    failed_ids.append(action.id)
                    result.deferred += 1
                    continue
                try:
                    indexes[action.index_name].apply(action)
                except Exception as exc:  # the index said no: back to pending with the reason, next drain retries
                    with atomic(con):
                        con.execute(
                            "UPDATE outbox SET status = 'pending', claimed_by = NULL, last_error = ? WHERE id = ?",
                            [f"{type(exc).__name__}: {exc}", action.id],
                        )
                    result.failed += 1
                    failed_ids.append(action.id)
                    failed_targets.add((action.index_name, action.target_id))
                    result.errors.append(f"{action.index_name} {action.action} {action.target_id}: {exc}")
                    continue
                crash_point(CRASH_POINT)
                with atomic(con):
                    con.execute(
                        "UPDATE outbox SET status = 'done', done_at = ?, last_error = NULL "
                        "WHERE id = ? AND status = 'claimed' AND claimed_by = ?",
                        [now(), action.id, drainer],
                    )
                result.applied += 1
        result.remaining = open_count(con)
    return result
