"""Which days' journals are older than their transcripts, from Dagster's own records: the fingerprint each
day's latest `journals` materialisation was built from (`journals.freshness`), against the transcripts now.
Used by `transcripts import` and the `agent_transcripts_sensor`."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import dagster as dg

from memory_pipeline.journals.freshness import FINGERPRINT, LEGACY, stale_days, transcript_days, week_start

JOURNALS = dg.AssetKey("journals")
MEMORY_MD = dg.AssetKey("memory_md")


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


def weeks_behind(instance: dg.DagsterInstance, valid_weeks: set[str]) -> list[date]:
    """The weekly partitions (`valid_weeks`) whose MEMORY.md roll-up is older than a journal of theirs: a day's
    journal materialised after the week's latest `memory_md` materialisation (or the week never rolled up) — a
    weekly run killed or failed after its days' journals were rebuilt. From the storage ids of Dagster's
    records, which only grow."""
    mat = dg.DagsterEventType.ASSET_MATERIALIZATION
    rolled = instance.get_latest_storage_id_by_partition(MEMORY_MD, mat)
    out: set[date] = set()
    for key, storage_id in instance.get_latest_storage_id_by_partition(JOURNALS, mat).items():
        try:
            day = date.fromisoformat(key)
        except ValueError:  # another partitioning (a fleet's agent × day): not this workspace's
            continue
        week = week_start(day)
        if week.isoformat() in valid_weeks and storage_id > rolled.get(week.isoformat(), -1):
            out.add(week)
    return sorted(out)
