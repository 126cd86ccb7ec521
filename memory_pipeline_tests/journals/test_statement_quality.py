"""The statement gate: only lines that read on their own reach a journal and MEMORY.md; an explicit decision keeps
its subject; what the host injects (CLAUDE.md, AGENTS.md, system reminders) is never a memory."""

from datetime import date, datetime
from pathlib import Path

import pytest

from memory_pipeline.cli import main
from memory_pipeline.journals.extractors import EXTRACTORS
from memory_pipeline.journals.knowledge import Entry
from memory_pipeline.journals.knowledge_writes import updated_on
from memory_pipeline.journals.statement_quality import statement, subject_of
from memory_pipeline.journals.transcript import Transcript, Turn

START = datetime(2026, 10, 14, 9, 0)
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code_journal"


def kept(*turns: tuple[str, str]) -> list[str]:
    """Every line the offline extractors keep from a session of (role, text) turns."""
    built = tuple(Turn("09:00", role, tuple(text.split("\n")), at=START, line=8 + 4 * i, text=text)
                  for i, (role, text) in enumerate(turns))  # fmt: skip
    t = Transcript("<test>", "s1", START, START, "test", "test", {}, built)
    return [c.content for e in EXTRACTORS.values() for c in e.find(t)]


JUNK = [
    "**Template Structure (lines 185-292, inline in render/1):**",
    '- - `:subagent_ref` - Detected agent ID (e.g., "agent-abc123")',
    "Lesson: Updated `export_development_history.py` to always produce a file even when there are no commits.",
    "Lesson: But `mount_computers` is never called for that branch which means the `__executor__` assign doesn't "
    "exist.",
    "I'll update the Dockerfile so the build never pulls the latest base image.",
    "Hmm, the test still fails, so the fixture must always be created before the app starts.",
    "This means the retry never happens for 4xx responses from Stripe.",
    "Decision: exponential backoff, 6 tries, max 10 minutes, then dead-letter to the webhook_failures table.",
    "Ran 128 tests in 4.2s — FAILED (failures=2)",
]


@pytest.mark.parametrize("text", JUNK, ids=[t[:30] for t in JUNK])
def test_fragments_changelog_reasoning_and_subjectless_lists_never_reach_the_journal(text: str) -> None:
    assert kept(("agent", text)) == []


def test_a_subjectless_decision_takes_the_heading_above_it() -> None:
    text = "## Webhook sender retry policy\n\nDecision: exponential backoff, 6 tries, max 10 minutes, then " \
           "dead-letter to the webhook_failures table."  # fmt: skip
    assert kept(("agent", text)) == ["Webhook sender retry policy: exponential backoff, 6 tries, max 10 minutes, "
                                     "then dead-letter to the webhook_failures table."]  # fmt: skip
    assert subject_of("For the image thumbnailer:") == "Image thumbnailer"
    assert subject_of("## Summary") is None and subject_of("Here's what I changed:") is None


def test_explicit_statements_by_the_user_are_kept_with_their_subject() -> None:
    assert kept(("user", "Decision for the session cache: we will use Redis with a 24-hour TTL.")) == [
        "Session cache: we will use Redis with a 24-hour TTL."
    ]
    assert kept(("user", "Let's go with Celery for the background jobs; RQ lacks the retry hooks we need.")) == [
        "We go with Celery for the background jobs; RQ lacks the retry hooks we need."
    ]
    assert kept(("user", "Remember that the payments sandbox rejects amounts below 50 cents.")) == [
        "The payments sandbox rejects amounts below 50 cents."
    ]
    assert kept(("user", "We will need to update the 3 call sites in the billing module as well.")) == []


def test_what_the_host_injects_is_never_a_memory() -> None:
    claude_md = ("<system-reminder>\nContents of /home/dev/shop/CLAUDE.md (project instructions):\n\n"
                 "- We decided to use Postgres 16 for every service.\n- Lesson: never commit .env files.\n"
                 "</system-reminder>\nPlease fix the failing checkout test.")  # fmt: skip
    agents_md = "# AGENTS.md instructions for /home/dev/api\n\n<INSTRUCTIONS>\nDecision: the API uses snake_case " \
                "JSON keys in every response.\n</INSTRUCTIONS>"  # fmt: skip
    codex = "<user_instructions>\nNever use mocks; we decided to test against a real Postgres 16.\n</user_instructions>"
    assert kept(("user", claude_md), ("user", agents_md), ("user", codex)) == []


def test_person_notes_and_procedures_keep_their_form() -> None:
    assert statement("Caroline: I went to a support group yesterday.", "person") == (
        "Caroline: I went to a support group yesterday."
    )
    assert statement("How to deploy: 1. Build; 2. Ship it.", "procedure") == "How to deploy: 1. Build; 2. Ship it."


def test_memory_md_is_dated_by_its_latest_journal_not_the_end_of_the_week() -> None:
    entries = {"Key Decisions": [Entry("Key Decisions", date(2026, 10, 13), "x", "x")]}
    assert updated_on([date(2026, 10, 13)], entries, date(2026, 10, 17)) == date(2026, 10, 13)
    assert updated_on([], {}, date(2999, 1, 2)) == date.today()


@pytest.mark.slow  # one import and the day's journal and week's MEMORY.md runs in process (~20 s)
def test_an_imported_claude_code_session_gives_a_journal_and_memory_md_without_junk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "ws"
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hashing-bow-256")
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["transcripts", "import", str(FIXTURE), "--in-process"]) == 0
    journal = (home / "knowledge" / "journal" / "2026-10-13.md").read_text(encoding="utf-8")
    memory = (home / "knowledge" / "memory" / "MEMORY.md").read_text(encoding="utf-8")
    decision = "Webhook sender retry policy: exponential backoff, 6 tries, max 10 minutes"
    lesson = "the payment provider's sandbox never sends a Retry-After header"
    for text in (journal, memory):
        assert decision in text and lesson in text and "Session cache: we will use Redis with a 24-hour TTL" in text
        for junk in ("Template Structure", "subagent_ref", "export_development_history", "mount_computers",
                     "Postgres 16", ".env files", "use uv", "I'll update", "Let me check"):  # fmt: skip
            assert junk not in text
    bullets = [line for line in journal.splitlines() if line.startswith("- ")]
    assert bullets and all(not line[2:].startswith(("-", "*", "#", "`")) for line in bullets)
    assert "\nupdated: 2026-10-13\n" in memory
