"""Offline extraction: the seed's episodic format, real sentences, determinism, pollution kept out."""

import json
import re

import pytest

from memory_pipeline.compaction import extract, governance
from memory_pipeline_tests.compaction.conftest import EPISODIC_NOTE, LOCOMO, WORKING_NOTE


def _sections(text: str) -> list[str]:
    return re.findall(r"^#+ .*$", text, re.M)


def test_episodic_summary_has_the_seed_format() -> None:
    rendered = extract.summarise("deploy-day.md", WORKING_NOTE).render()
    assert _sections(rendered) == ["# Compiled: deploy-day.md", "## Summary", "## Decisions", "## Extracted Insights"]
    s = extract.summarise("deploy-day.md", WORKING_NOTE)
    assert 3 <= len(s.summary) <= 5
    assert s.decisions == ["We decided to clear the cache before every deploy and pinned the builder image."]
    assert "We learned that a stale build cache silently ships old code." in s.insights
    for sentence in s.summary + s.decisions + s.insights:
        assert sentence in " ".join(WORKING_NOTE.split()), sentence  # extractive: verbatim from the note


def test_logs_code_and_diffs_never_reach_the_summary() -> None:
    note = WORKING_NOTE + "\n```\n$ make deploy\nexit code 2\n```\n2026-10-20 10:00:01 ERROR builder: cache stale\n"
    s = extract.summarise("x.md", note)
    joined = "\n".join(s.summary + s.decisions + s.insights)
    assert "exit code" not in joined and "ERROR" not in joined and "make deploy" not in joined


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo dev set not present")
def test_locomo_sessions_summarise_deterministically() -> None:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    summaries = data[0]["session_summary"]
    for key in sorted(summaries)[:6]:
        text = f"# {key}\n\n{summaries[key]}\n"
        first = extract.summarise(f"{key}.md", text)
        assert first == extract.summarise(f"{key}.md", text)  # deterministic
        n_sentences = len(extract.sentences(text))
        assert min(3, n_sentences) <= len(first.summary) <= 5
        flat = " ".join(text.split())
        assert all(b in flat for b in first.summary)


def test_insights_from_an_episodic_file_fit_the_schema() -> None:
    [entry] = extract.extract_insights("deploy-day.md", EPISODIC_NOTE)
    assert entry.title == "Always clear the build cache before deploying"
    assert entry.durable_insight == "Always clear the build cache before deploying the bot."
    assert entry.context.startswith("Compacted from deploy-day.md: ")
    assert entry.operational_impact == "We decided to clear the build cache before every deploy."
    assert governance.validate_entry(entry) == []


def test_insights_from_a_free_form_episodic_note_use_cue_sentences() -> None:
    text = "# Week 42\nThe queue stalled on Tuesday.\nWe learned that restarts must drain the queue first.\n"
    [entry] = extract.extract_insights("week-42.md", text)
    assert entry.durable_insight == "Restarts must drain the queue first."
    assert entry.title == "Restarts must drain the queue first"
