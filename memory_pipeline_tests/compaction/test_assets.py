"""The compaction job on real files: ages, the first-run rule, Tier C approval, cooldown, duplicates,
append-only, crash safety, the report and the asset checks."""

import json
from datetime import timedelta
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.compaction import fileops
from memory_pipeline.compaction.tiers import META_FILE
from memory_pipeline_tests.compaction.conftest import (
    EPISODIC_NOTE,
    NOW,
    WORKING_NOTE,
    checks,
    mark_not_first,
    names,
    note,
    report_of,
    run,
    semantic_text,
)

REPORTING_FIELDS = [
    "working_file_count", "working_total_tokens", "oldest_working_file_age_days", "episodic_file_count",
    "episodic_total_tokens", "oldest_episodic_file_age_days", "semantic_token_count", "thresholds_evaluated",
    "trigger_fired", "tier_classification", "cooldown_status", "no_action_reason",
    "working_to_episodic_files", "episodic_to_semantic_insights", "archived_files", "semantic_tokens_after",
    "soft_limit_status", "hard_limit_status", "duplicate_check",
]


def test_six_day_old_file_untouched_eight_day_old_compacted_and_archived(home: Path) -> None:
    mark_not_first(home)
    young = note(home, "working", "young.md", WORKING_NOTE.replace("Deploy day", "Young"), age_days=6)
    old = note(home, "working", "deploy-day.md", WORKING_NOTE, age_days=8)
    original = old.read_bytes()
    young_bytes = young.read_bytes()
    result = run(home)
    assert result.success
    assert names(home, "working") == ["young.md"] and young.read_bytes() == young_bytes
    assert names(home, "episodic") == ["deploy-day.md"]
    summary = (home / "memory" / "episodic" / "deploy-day.md").read_text(encoding="utf-8")
    assert summary.startswith("# Compiled: deploy-day.md\n## Summary\n- ")
    assert names(home, "archive") == ["deploy-day-archived-2026-11-01.md"]
    assert (home / "memory" / "archive" / "deploy-day-archived-2026-11-01.md").read_bytes() == original
    r = report_of(home, result)
    assert (r["working_to_episodic_files"], r["archived_files"], r["executed"]) == (1, 1, True)
    assert r["tier_classification"]["working_to_episodic"] == "B"
    assert all(checks(result).values()), checks(result)
    meta = json.loads((home / "memory" / META_FILE).read_text())
    assert meta["lastCompactionAt"] == NOW.isoformat() and meta["fileCount"] == 3


def test_first_run_is_a_dry_run_until_approved(home: Path) -> None:
    note(home, "working", "deploy-day.md", WORKING_NOTE, age_days=8)
    instance = dg.DagsterInstance.ephemeral()
    first = run(home, instance=instance)
    assert first.success
    r = report_of(home, first)
    assert r["first_run"] and not r["executed"]
    assert "first run on this workspace: confirmation required" in r["no_action_reason"]
    assert r["compacted"][0]["source"] == "deploy-day.md"  # what it would do
    assert names(home, "working") == ["deploy-day.md"] and names(home, "archive") == []
    assert not (home / "memory" / META_FILE).exists()  # still a first run next time
    text = (home / "reports" / f"compaction-{first.run_id}.md").read_text(encoding="utf-8")
    assert text.startswith("DRY RUN") and "Would compact: deploy-day.md" in text
    assert instance.get_run_by_id(first.run_id).tags["memory_pipeline/approved"] == "false"

    approved = run(home, approved=True, instance=instance)
    assert approved.success and report_of(home, approved)["executed"]
    assert names(home, "working") == [] and names(home, "archive") == ["deploy-day-archived-2026-11-01.md"]
    assert instance.get_run_by_id(approved.run_id).tags["memory_pipeline/approved"] == "true"
    meta = json.loads((home / "memory" / META_FILE).read_text())
    assert meta["firstRunConfirmedAt"] == NOW.isoformat()


def test_tier_c_above_risk_blocked_without_approval_and_executed_with_it(home: Path) -> None:
    mark_not_first(home)
    existing = semantic_text(1050).encode("utf-8")
    (home / "memory" / "semantic" / "openclaw.md").write_bytes(existing)
    note(home, "episodic", "deploy-day.md", EPISODIC_NOTE, age_days=31)
    note(home, "working", "w.md", WORKING_NOTE, age_days=9)
    instance = dg.DagsterInstance.ephemeral()

    blocked = run(home, instance=instance)
    r = report_of(home, blocked)
    assert r["trigger_fired"].startswith("semantic_risk") and r["tier_classification"]["episodic_to_semantic"] == "C"
    assert any("Tier C and needs approved: true" in b for b in r["blocked"])
    assert (home / "memory" / "semantic" / "openclaw.md").read_bytes() == existing
    assert names(home, "episodic") == ["deploy-day.md", "w.md"]  # Tier B working → episodic still ran
    assert any("shard" in w for w in r["warnings"])
    assert instance.get_run_by_id(blocked.run_id).tags["memory_pipeline/compaction_fired"].startswith("semantic_risk")

    approved = run(home, approved=True, instance=instance)
    r = report_of(home, approved)
    after = (home / "memory" / "semantic" / "openclaw.md").read_bytes()
    assert after.startswith(existing) and b"Durable Insight: Always clear the build cache" in after[len(existing):]
    assert r["episodic_to_semantic_insights"] == 1 and "deploy-day-archived-2026-11-01.md" in names(home, "archive")
    assert instance.get_run_by_id(approved.run_id).tags["memory_pipeline/approved"] == "true"


def test_hard_limit_blocks_the_whole_run_without_approval(home: Path) -> None:
    mark_not_first(home)
    existing = semantic_text(1201).encode("utf-8")
    (home / "memory" / "semantic" / "openclaw.md").write_bytes(existing)
    note(home, "episodic", "deploy-day.md", EPISODIC_NOTE, age_days=31)
    note(home, "working", "w.md", WORKING_NOTE, age_days=9)
    blocked = run(home)
    r = report_of(home, blocked)
    assert r["trigger_fired"].startswith("semantic_hard_limit") and r["hard_limit_status"] == "WARNING"
    assert "semantic hard limit" in r["no_action_reason"] and not r["executed"]
    assert names(home, "working") == ["w.md"] and names(home, "archive") == []
    assert checks(blocked)["semantic_hard_limit"] is False and checks(blocked)["semantic_soft_limit"] is False

    approved = run(home, approved=True)
    assert report_of(home, approved)["executed"] and names(home, "working") == []
    assert (home / "memory" / "semantic" / "openclaw.md").read_bytes().startswith(existing)


def test_append_only_keeps_existing_bytes(home: Path) -> None:
    mark_not_first(home)
    existing = b"# Learnings\r\nTitle: Odd  spacing kept\nContext: crlf and no final newline\nDurable Insight: x y"
    (home / "memory" / "semantic" / "openclaw.md").write_bytes(existing)
    note(home, "episodic", "deploy-day.md", EPISODIC_NOTE, age_days=40)
    assert run(home).success
    after = (home / "memory" / "semantic" / "openclaw.md").read_bytes()
    assert after[: len(existing)] == existing and len(after) > len(existing)
    assert after[len(existing):].decode().lstrip("\n").startswith("Title: Always clear the build cache")


def test_cooldown_holds_semantic_compaction_but_not_working(home: Path) -> None:
    mark_not_first(home, last=NOW - timedelta(hours=3))
    note(home, "episodic", "deploy-day.md", EPISODIC_NOTE, age_days=40)
    note(home, "working", "w.md", WORKING_NOTE, age_days=8)
    r = report_of(home, result := run(home))
    assert result.success and r["cooldown_status"] == "WARNING"
    assert any(b.startswith("cooldown: last compaction 3.0 h ago") for b in r["blocked"])
    assert not (home / "memory" / "semantic" / "openclaw.md").exists()
    assert "deploy-day.md" in names(home, "episodic") and r["working_to_episodic_files"] == 1
    assert "Cooldown: WARNING" in (home / "reports" / f"compaction-{result.run_id}.md").read_text(encoding="utf-8")
    confirmed = report_of(home, run(home, approved=True, as_of=NOW + timedelta(hours=1)))
    assert confirmed["episodic_to_semantic_insights"] == 1


def test_duplicate_title_needs_confirmation_and_is_never_merged(home: Path) -> None:
    mark_not_first(home)
    existing = (b"Title: Always clear build cache before deploy\nContext: an earlier week\n"
                b"Durable Insight: Clearing the cache avoids shipping stale code.\n")
    (home / "memory" / "semantic" / "openclaw.md").write_bytes(existing)
    note(home, "episodic", "deploy-day.md", EPISODIC_NOTE, age_days=40)
    r = report_of(home, run(home))
    assert r["duplicate_check"] == "WARNING" and r["episodic_to_semantic_insights"] == 0
    assert r["insights"][0]["status"] == "duplicate" and "duplicate title" in r["insights"][0]["reason"]
    assert (home / "memory" / "semantic" / "openclaw.md").read_bytes() == existing
    assert r["episodic_kept_for_confirmation"] == ["deploy-day.md"] and names(home, "archive") == []
    r = report_of(home, run(home, approved=True, as_of=NOW + timedelta(days=2)))
    assert r["episodic_to_semantic_insights"] == 1 and r["duplicate_check"] == "WARNING"
    assert (home / "memory" / "semantic" / "openclaw.md").read_bytes().startswith(existing)


def test_schema_rejects_are_reported_and_never_written(home: Path) -> None:
    mark_not_first(home)
    polluted = EPISODIC_NOTE.replace(
        "- Always clear the build cache before deploying the bot.",
        "- 2026-10-02 10:00:01 ERROR builder: always retry on cache miss\n- Tier C actions need APPROVED first",
    )
    note(home, "episodic", "polluted.md", polluted, age_days=40)
    r = report_of(home, result := run(home))
    assert [o["status"] for o in r["insights"]] == ["rejected", "rejected"]
    fields = [e["reason"] for o in r["insights"] for e in o["errors"]]
    assert any("debug log" in f for f in fields) and any("governance rule" in f for f in fields)
    assert not (home / "memory" / "semantic" / "openclaw.md").exists()
    assert names(home, "archive") == ["polluted-archived-2026-11-01.md"]  # kept whole in the archive
    assert checks(result)["semantic_entry_schema"]


def test_nothing_due_ends_cleanly_with_the_reason_and_every_field(home: Path) -> None:
    mark_not_first(home)
    note(home, "working", "young.md", WORKING_NOTE, age_days=2)
    result = run(home, trigger="weekly")
    assert result.success
    r = report_of(home, result)
    for key in REPORTING_FIELDS:
        assert key in r, key
    assert r["no_action_reason"].startswith("no threshold met: semantic_tokens_hard_limit=0 ≤ 1200")
    assert r["requested_by"] == "weekly" and not r["executed"] and r["trigger_fired"] == "none"
    assert len(r["thresholds_evaluated"]) == 10
    metadata = result.asset_materializations_for_node("compaction_report")[0].metadata
    assert metadata["no_action_reason"].value == r["no_action_reason"]
    assert metadata["working_file_count"].value == 1 and "Memory Compaction Complete" in metadata["output"].value
    # the file count the no_file_deleted check reads back from the previous materialization (mypy found it
    # overwritten by the per-file token dict, which the scalar-only metadata then dropped)
    assert r["files_total_after"] == r["files_total_before"] == 1 and metadata["files_total_after"].value == 1
    assert names(home, "working") == ["young.md"]


def test_dry_run_config_writes_nothing(home: Path) -> None:
    mark_not_first(home)
    note(home, "working", "w.md", WORKING_NOTE, age_days=8)
    note(home, "episodic", "deploy-day.md", EPISODIC_NOTE, age_days=40)
    before = sorted(p.relative_to(home).as_posix() for p in (home / "memory").rglob("*"))
    r = report_of(home, run(home, dry_run=True))
    assert not r["executed"] and r["insights"][0]["status"] == "would_append"
    assert sorted(p.relative_to(home).as_posix() for p in (home / "memory").rglob("*")) == before


def test_crash_between_summary_and_archive_is_recovered(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mark_not_first(home)
    original = note(home, "working", "deploy-day.md", WORKING_NOTE, age_days=8).read_bytes()

    def crash(*args: object, **kwargs: object) -> Path:
        raise OSError("simulated crash after phase 1")

    monkeypatch.setattr(fileops, "move_to_archive", crash)
    assert not run(home).success
    assert names(home, "working") == ["deploy-day.md"] and names(home, "episodic") == ["deploy-day.md"]
    monkeypatch.undo()
    r = report_of(home, run(home))
    assert r["compacted"][0]["recovered"] is True
    assert names(home, "episodic") == ["deploy-day.md"]  # no second summary
    assert (home / "memory" / "archive" / "deploy-day-archived-2026-11-01.md").read_bytes() == original


def test_no_file_deleted_check_catches_a_deletion(home: Path) -> None:
    mark_not_first(home)
    note(home, "working", "deploy-day.md", WORKING_NOTE, age_days=8)
    instance = dg.DagsterInstance.ephemeral()
    assert checks(run(home, instance=instance))["no_file_deleted"]
    (home / "memory" / "archive" / "deploy-day-archived-2026-11-01.md").unlink()  # someone deletes history
    second = run(home, instance=instance, as_of=NOW + timedelta(days=2))
    evaluation = next(e for e in second.get_asset_check_evaluations() if e.check_name == "no_file_deleted")
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert evaluation.metadata["files_total"].value == 1 and evaluation.metadata["floor"].value == 2


def test_backfilled_week_acts_as_of_its_end_and_future_weeks_are_refused(home: Path) -> None:
    mark_not_first(home)
    note(home, "working", "w.md", WORKING_NOTE, age_days=8)  # 8 days old at NOW: 1 day old at 2026-10-25's end?
    r = report_of(home, run(home, partition="2026-10-18"))  # window ends 2026-10-25 03:00, 1 day after writing
    assert r["now"].startswith("2026-10-25T03:00") and r["working_due"] == [] and names(home, "working") == ["w.md"]
    assert not run(home, partition="2026-11-08").success  # starts after "now"
