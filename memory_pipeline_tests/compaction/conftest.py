"""Helpers for the compaction tests: notes of a chosen age, semantic files of an exact token count, a run."""

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from memory_pipeline.compaction.tiers import META_FILE, TIERS
from memory_pipeline.definitions import defs_with
from memory_pipeline.evaluation.locomo_transcripts import default_locomo_path
from memory_pipeline.tokens import estimate_tokens
from memory_pipeline_tests.conftest import resources_for

NOW = datetime(2026, 11, 1, 3, 30, tzinfo=UTC)  # the shared SAMPLE_NOW; inside weekly partition 2026-11-01
PARTITION = "2026-11-01"
LOCOMO = default_locomo_path()

WORKING_NOTE = """# Deploy day

The bot deploy failed twice on Monday because the build cache was stale.
We decided to clear the cache before every deploy and pinned the builder image.
After the fix the release shipped and the error rate dropped to zero.

## Lessons
- We learned that a stale build cache silently ships old code.
- Always check the deployed version string after a release.
"""

EPISODIC_NOTE = """# Compiled: deploy-day.md
## Summary
- The bot deploy failed twice because the build cache was stale.
- After the fix the release shipped and the error rate dropped to zero.
- The team pinned the builder image.
## Decisions
- We decided to clear the build cache before every deploy.
## Extracted Insights
- Always clear the build cache before deploying the bot.
"""


def note(home: Path, tier: str, name: str, text: str, age_days: float, now: datetime = NOW) -> Path:
    path = home / "memory" / tier / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    ts = (now - timedelta(days=age_days)).timestamp()
    os.utime(path, (ts, ts))
    return path


def semantic_text(tokens: int) -> str:
    """Valid schema entries whose estimated size is exactly `tokens`."""
    topics = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
              "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform",
              "victor", "whiskey", "xray", "yankee", "zulu"]
    text, i = "# OpenClaw operational learnings\n", 0
    while True:
        topic = topics[i % len(topics)] + (str(i // len(topics)) if i >= len(topics) else "")
        entry = (f"\nTitle: Handling of the {topic} subsystem\nContext: Observed while operating {topic} for weeks\n"
                 f"Durable Insight: The {topic} subsystem needs its queue drained before restarts.\n")
        if estimate_tokens(text + entry) > tokens - 5:
            break
        text, i = text + entry, i + 1
    text = text.rstrip("\n")
    while estimate_tokens(text + "\n") < tokens:
        text = text[:-1] + "s."  # lengthen the last Durable Insight one character at a time
    assert estimate_tokens(text + "\n") == tokens
    return text + "\n"


def mark_not_first(home: Path, last: datetime | None = None) -> None:
    """A workspace that has been compacted before (so the first-run rule does not apply)."""
    path = home / "memory" / META_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"firstRunConfirmedAt": "2026-01-01T00:00:00+00:00"}
    if last is not None:
        meta["lastCompactionAt"] = last.isoformat()
    path.write_text(json.dumps(meta), encoding="utf-8")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "workspace"
    for tier in TIERS:
        (h / "memory" / tier).mkdir(parents=True)
    return h


def run(
    home: Path,
    *,
    approved: bool = False,
    dry_run: bool = False,
    as_of: datetime = NOW,
    partition: str = PARTITION,
    instance: dg.DagsterInstance | None = None,
    tags: dict[str, str] | None = None,
    trigger: str = "manual",
) -> dg.ExecuteInProcessResult:
    defs = defs_with(resources_for(home))
    config = {"approved": approved, "dry_run": dry_run, "as_of": as_of.isoformat(), "trigger": trigger}
    return defs.resolve_job_def("tiered_compaction").execute_in_process(
        run_config={"ops": {"tier_volumes": {"config": config}}},
        partition_key=partition,
        instance=instance or dg.DagsterInstance.ephemeral(),
        tags=tags,
        raise_on_error=False,
    )


def report_of(home: Path, result: dg.ExecuteInProcessResult) -> dict[str, Any]:
    return json.loads((home / "reports" / f"compaction-{result.run_id}.json").read_text(encoding="utf-8"))


def names(home: Path, tier: str) -> list[str]:
    return sorted(p.name for p in (home / "memory" / tier).iterdir() if not p.name.startswith("."))


def checks(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
