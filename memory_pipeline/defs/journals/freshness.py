"""Which days' journals are older than their transcripts, from Dagster's own records: the fingerprint each
day's latest `journals` materialisation was built from (`journals.freshness`), against the transcripts now.
Used by `transcripts import` and the `agent_transcripts_sensor`."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import dagster as dg

from memory_pipeline.journals.freshness import FINGERPRINT, LEGACY, stale_days, transcript_days

JOURNALS = dg.AssetKey("journals")


def built_fingerprints(instance: dg.DagsterInstance, keys: set[str]) -> dict[date, str]:
    """Day → the fingerprint its latest journal materialisation records (`LEGACY` when it records none)."""
    if not keys:
        return {}
    latest = instance.get_latest_storage_id_by_partition(JOURNALS, dg.DagsterEventType.ASSET_MATERIALIZATION, keys)
    if not latest:
        return {}
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=JOURNALS, storage_ids=list(latest.values())), limit=len(latest)
    ).records
    out: dict[date, str] = {}
    for record in records:
        mat = record.asset_materialization
        if mat is None or mat.partition is None:
            continue
        value = mat.metadata.get(FINGERPRINT)
        out[date.fromisoformat(mat.partition)] = str(value.value) if value is not None else LEGACY
    return out


def stale_journal_days(instance: dg.DagsterInstance, raw_root: Path, valid: set[str]) -> dict[date, str]:
    """The journal partitions (`valid` keys) whose journal is older than their transcripts → the transcripts'
    fingerprint now."""
    now = {day: fp for day, fp in transcript_days(raw_root).items() if day.isoformat() in valid}
    built = built_fingerprints(instance, {day.isoformat() for day in now})
    return {day: now[day] for day in stale_days(now, built)}
