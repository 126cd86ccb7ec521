"""Schema, recursive-pollution filter, duplicate titles and cooldown (seed 003 "Enterprise Semantic Governance")."""

import json
from datetime import timedelta
from pathlib import Path

import pytest

from memory_pipeline.compaction import governance
from memory_pipeline.compaction.governance import SemanticEntry
from memory_pipeline_tests.compaction.conftest import NOW

GOOD = SemanticEntry(
    "Clear the build cache before deploys",
    "Two deploys of the bot shipped old code in October",
    "A stale build cache silently ships old code; clearing it makes deploys reproducible.",
    "Deploys clear the cache first.",
)


def test_a_well_formed_entry_passes_and_renders_the_schema() -> None:
    assert governance.validate_entry(GOOD) == []
    assert GOOD.render().splitlines() == [
        "Title: Clear the build cache before deploys",
        "Context: Two deploys of the bot shipped old code in October",
        "Durable Insight: A stale build cache silently ships old code; clearing it makes deploys reproducible.",
        "Operational Impact: Deploys clear the cache first.",
    ]
    assert governance.validate_semantic_file("# Learnings\n\n" + GOOD.render()) == []


def test_schema_rejects_a_missing_durable_insight() -> None:
    errors = governance.validate_entry(SemanticEntry("Cache rule", "Deploys failed", ""))
    assert [(e.field, e.reason) for e in errors] == [("Durable Insight", "missing or empty (required)")]
    text = "Title: Cache rule\nContext: Deploys failed\n\nTitle: Second\nContext: c\nDurable Insight: d\n"
    [error] = governance.validate_semantic_file(text)
    assert (error.field, error.line, error.title) == ("Durable Insight", 1, "Cache rule")
    assert "line 1: Durable Insight: missing" in str(error)


@pytest.mark.parametrize(
    ("insight", "category"),
    [
        ("2026-11-01 03:12:44 ERROR worker crashed: cache miss", "debug log"),
        ("[DEBUG] cache miss on key build-42", "debug log"),
        ('Traceback (most recent call last): File "bot.py", line 3', "debug log"),
        ("Tier C actions require the operator per OPERATING_RULES.md", "governance rule"),
        ("Semantic append APPROVED by Matthew at 10:02", "approval log"),
        ("cron job ran at 0 3 * * 0 and exited", "cron log"),
        ("--- a/bot.py\n+++ b/bot.py\n@@ -1,2 +1,2 @@", "diff preview"),
        ("$ npm run build exited with exit code 1", "tool output"),
        ('{"status": "ok", "items": 3}', "tool output"),
        ("User: can you fix the deploy", "conversational fragment"),
        ("Should we clear the cache before deploys?", "conversational fragment"),
    ],
)
def test_schema_rejects_pollution(insight: str, category: str) -> None:
    errors = governance.validate_entry(SemanticEntry("Deploy note", "While deploying", insight))
    assert any(e.field == "Durable Insight" and category in e.reason for e in errors), errors


def test_overlong_title_and_stray_text_are_errors() -> None:
    errors = governance.validate_entry(SemanticEntry("x " * 60, "c", "d"))
    assert errors and errors[0].field == "Title" and "≤ 80" in errors[0].reason
    stray = governance.validate_semantic_file("just a raw summary line\n" + GOOD.render())
    assert stray and "outside any entry" in stray[0].reason and stray[0].line == 1


@pytest.mark.parametrize(
    ("title", "duplicate"),
    [
        ("Always clear the build cache before deploying", "Always clear the build cache before deploying"),
        ("always clear the build-cache before deploying!", "Always clear the build cache before deploying"),
        ("Always clear build cache before deploy", "Always clear the build cache before deploying"),  # fuzzy
        ("Clear the build cache", "Always clear the build cache before deploying"),  # substring
        ("Prefer UTC timestamps in every report", None),
        ("Drain the alpha queue before restarts", None),
    ],
)
def test_duplicate_titles(title: str, duplicate: str | None) -> None:
    existing = ["Always clear the build cache before deploying", "Handling of the alpha subsystem"]
    assert governance.find_duplicate(title, existing) == duplicate


def test_cooldown_24_hours(tmp_path: Path) -> None:
    assert governance.cooldown(None, NOW).status == "OK"
    recent = governance.cooldown({"lastCompactionAt": (NOW - timedelta(hours=23, minutes=59)).isoformat()}, NOW)
    assert (recent.status, recent.hours_since) == ("WARNING", 23.98)
    assert governance.cooldown({"lastCompactionAt": (NOW - timedelta(hours=24)).isoformat()}, NOW).status == "OK"
    naive = (NOW - timedelta(hours=2)).replace(tzinfo=None).isoformat()  # naive timestamps are UTC
    assert governance.cooldown({"lastCompactionAt": naive}, NOW).status == "WARNING"


def test_bad_meta_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / ".memory-compactor-meta.json"
    assert governance.read_meta(path) is None  # a first run
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(governance.MetaError, match=r"memory-compactor-meta.json: invalid JSON at line 1"):
        governance.read_meta(path)
    path.write_text(json.dumps({"lastCompactionAt": "yesterday"}), encoding="utf-8")
    with pytest.raises(governance.MetaError, match="lastCompactionAt='yesterday'"):
        governance.read_meta(path)
