"""The LLM path of the compactor against the local fake Anthropic API (no network): the prompts, the same
governance as the offline extractor, and the per-file fallback to the offline extractor on any failure."""

import json
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.compaction import engine, extract
from memory_pipeline.compaction.llm_extract import (
    INSIGHT_SYSTEM_PROMPT,
    SUMMARY_SYSTEM_PROMPT,
    LLMExtractor,
)
from memory_pipeline.definitions import defs_with
from memory_pipeline.llm.ledger import Ledger
from memory_pipeline.resources import LLMResource
from memory_pipeline_tests.compaction.conftest import (
    EPISODIC_NOTE,
    NOW,
    PARTITION,
    WORKING_NOTE,
    checks,
    mark_not_first,
    names,
    note,
    report_of,
)
from memory_pipeline_tests.conftest import resources_for
from memory_pipeline_tests.llm.fake_api import TEST_KEY, FakeAnthropicAPI, rate_limited, server_error

SUMMARY = {
    "summary": [
        "The bot deploy failed twice on Monday because the build cache was stale.",
        "The builder image was pinned and the cache cleared.",
        "The release shipped and the error rate dropped to zero.",
    ],
    "decisions": ["Clear the build cache before every deploy."],
    "insights": ["A stale build cache silently ships old code."],
}
GOOD = {
    "title": "Stale build caches ship old code",
    "context": "Two bot deploys failed on a stale build cache.",
    "durable_insight": "A stale build cache silently ships old code; clear it before every deploy.",
    "operational_impact": "The deploy checklist clears the cache first.",
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def is_summary(system: str, _user: str) -> bool:
    return system == SUMMARY_SYSTEM_PROMPT


def is_insight(system: str, _user: str) -> bool:
    return system == INSIGHT_SYSTEM_PROMPT


def extractor(fake: FakeAnthropicAPI, clock: FakeClock, *, cap: float | None = None, ledger: Ledger | None = None,
              **config: object) -> LLMExtractor:
    llm = LLMResource(api_key=TEST_KEY, mode="anthropic", **config)  # type: ignore[arg-type]
    distiller = llm.get_distiller(
        client=llm.make_client(fake.http_client()), run_id="run-1", ledger=ledger, rate_limit_per_min=600,
        max_cost_usd=cap, sleep=clock.sleep, clock=clock.time, random=lambda: 0.5,
    )
    return LLMExtractor(distiller)


@pytest.fixture
def fake() -> FakeAnthropicAPI:
    return FakeAnthropicAPI()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def _working(home: Path) -> engine.Plan:
    mark_not_first(home)
    note(home, "working", "deploy-day.md", WORKING_NOTE, age_days=8)
    return engine.plan(home, NOW, engine.Options(approved=True))


def test_summary_by_the_llm_uses_the_seed_format_prompt_and_records_usage(home, fake, clock) -> None:
    fake.reply_when(is_summary, json.dumps(SUMMARY))
    ledger = Ledger("run-1")
    p = _working(home)
    fallbacks: list[engine.Fallback] = []
    [c] = engine.compact_working(home, p, True, extractor(fake, clock, ledger=ledger), fallbacks)
    assert (c.extractor, fallbacks) == ("anthropic:claude-haiku-4-5", [])
    text = (home / "memory" / "episodic" / "deploy-day.md").read_text()
    assert text == extract.EpisodicSummary("deploy-day.md", SUMMARY["summary"], SUMMARY["decisions"],
                                           SUMMARY["insights"]).render()
    [sent] = fake.requests("messages")
    body = sent.body
    assert sent.key_ok and body["temperature"] == 0 and body["max_tokens"] == 700
    assert body["system"] == [{"type": "text", "text": SUMMARY_SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}]
    for rule in ("3 to 5 bullets of key events", '"decisions"', '"insights"', "approval logs", "tool output"):
        assert rule in SUMMARY_SYSTEM_PROMPT
    assert body["messages"][0]["content"].startswith("FILE: deploy-day.md\n\n# Deploy day\n")
    [call] = ledger.calls()
    assert (call.stage, call.status, call.usage.output_tokens > 0, call.cost_usd > 0) == (
        "compaction_summary", "ok", True, True)
    assert names(home, "archive") == ["deploy-day-archived-2026-11-01.md"]


BAD_REPLIES = [
    ("not json", "invalid JSON: no object"),
    (json.dumps({"summary": ["only one."] * 6}), "summary has 6 bullets; the format needs 3–5"),
    (json.dumps({**SUMMARY, "summary": [*SUMMARY["summary"][:2], "2026-10-01 12:00:01 ERROR deploy crashed"]}),
     "summary item 3 holds debug log"),
    (json.dumps({**SUMMARY, "decisions": "clear the cache"}), "reply field 'decisions' is not a list of strings"),
]


@pytest.mark.parametrize(("reply", "reason"), BAD_REPLIES, ids=["not-json", "six-bullets", "log-line", "wrong-type"])
def test_a_bad_summary_reply_falls_back_to_the_offline_extractor_for_that_file(home, fake, clock, reply: str,
                                                                               reason: str) -> None:
    fake.reply_when(is_summary, reply)
    p = _working(home)
    fallbacks: list[engine.Fallback] = []
    [c] = engine.compact_working(home, p, True, extractor(fake, clock), fallbacks)
    [f] = fallbacks
    assert c.extractor == "offline" and f.file == "deploy-day.md" and f.step == "working_to_episodic"
    assert reason in f.reason, f.reason
    assert (home / "memory" / "episodic" / "deploy-day.md").read_text() == extract.summarise(
        "deploy-day.md", WORKING_NOTE).render()


def test_api_failures_retry_then_fall_back_and_a_rate_limit_is_waited_out(home, fake, clock) -> None:
    fake.reply_when(is_summary, json.dumps(SUMMARY))
    fake.fail("messages", rate_limited("2"))
    p = _working(home)
    fallbacks: list[engine.Fallback] = []
    [c] = engine.compact_working(home, p, True, extractor(fake, clock, max_retries=1), fallbacks)
    assert c.extractor.startswith("anthropic") and 2.0 in clock.sleeps and not fallbacks

    (home / "memory" / "archive" / "deploy-day-archived-2026-11-01.md").rename(
        home / "memory" / "working" / "deploy-day.md")
    (home / "memory" / "episodic" / "deploy-day.md").unlink()
    fake.fail("messages", server_error(), server_error())  # retries exhausted
    [c] = engine.compact_working(home, p, True, extractor(fake, clock, max_retries=1), fallbacks)
    [f] = fallbacks
    assert c.extractor == "offline" and "LLM call failed" in f.reason and "500" in f.reason


def test_the_cost_cap_stops_the_call_before_it_is_sent(home, fake, clock) -> None:
    p = _working(home)
    fallbacks: list[engine.Fallback] = []
    [c] = engine.compact_working(home, p, True, extractor(fake, clock, cap=1e-6), fallbacks)
    assert c.extractor == "offline" and "cost cap $1e-06 reached" in fallbacks[0].reason
    assert fake.requests("messages") == []


def test_a_dry_run_never_calls_the_llm(home, fake, clock) -> None:
    p = _working(home)
    [c] = engine.compact_working(home, p, False, extractor(fake, clock))
    assert c.extractor == "offline" and fake.requests("messages") == []
    note(home, "episodic", "deploy-day.md", EPISODIC_NOTE, age_days=31)
    p = engine.plan(home, NOW, engine.Options(approved=True))
    engine.extract_semantic(home, p, False, extractor(fake, clock))
    assert fake.requests("messages") == []


def test_llm_insights_pass_the_same_governance_as_the_offline_ones(home, fake, clock) -> None:
    mark_not_first(home)
    note(home, "episodic", "a.md", EPISODIC_NOTE, age_days=31)
    note(home, "episodic", "b.md", EPISODIC_NOTE.replace("deploy-day", "other"), age_days=32)
    missing = {**GOOD, "title": "Pin the builder image", "durable_insight": ""}
    polluted = {**GOOD, "title": "Cron restarts", "durable_insight": "The cron job 0 3 * * 0 restarts the bot."}
    chatty = {**GOOD, "title": "Ask the team", "durable_insight": "You should ask me before deploying."}
    duplicate = {**GOOD, "title": "Stale build caches ship old code again"}
    fake.reply_when(lambda s, u: is_insight(s, u) and "FILE: a.md" in u,
                    json.dumps({"insights": [GOOD, missing, polluted]}))
    fake.reply_when(lambda s, u: is_insight(s, u) and "FILE: b.md" in u,
                    json.dumps({"insights": [chatty, duplicate]}))
    p = engine.plan(home, NOW, engine.Options())
    result = engine.extract_semantic(home, p, True, extractor(fake, clock))
    got = {o.title: (o.status, o.extractor) for o in result.outcomes}
    llm = "anthropic:claude-haiku-4-5"
    assert got == {
        GOOD["title"]: ("appended", llm),
        "Pin the builder image": ("rejected", llm),
        "Cron restarts": ("rejected", llm),
        "Ask the team": ("rejected", llm),
        duplicate["title"]: ("duplicate", llm),
    }
    errors = {o.title: o.errors for o in result.outcomes if o.status == "rejected"}
    assert errors["Pin the builder image"][0]["reason"] == "missing or empty (required)"
    assert "cron log" in errors["Cron restarts"][0]["reason"]
    assert "conversational fragment" in errors["Ask the team"][0]["reason"]
    semantic = (home / "memory" / "semantic" / "openclaw.md").read_text()
    assert semantic == "Title: Stale build caches ship old code\nContext: Two bot deploys failed on a stale build " \
        "cache.\nDurable Insight: A stale build cache silently ships old code; clear it before every deploy.\n" \
        "Operational Impact: The deploy checklist clears the cache first.\n"
    assert result.kept == ["b.md"] and not result.fallbacks  # the duplicate waits for a confirmation
    [sent, _] = fake.requests("messages")
    assert sent.body["system"][0]["text"] == INSIGHT_SYSTEM_PROMPT
    for rule in ('"title"', '"context"', '"durable_insight"', '"operational_impact"', "at most 3 insights",
                 "durable system knowledge only", "cron logs", "diff previews"):
        assert rule in INSIGHT_SYSTEM_PROMPT


@pytest.mark.slow  # a whole run against a real local HTTP server: ~5 s loaded (the engine tests above are ~0.3 s)
def test_compaction_run_through_the_fake_api_reports_extractors_usage_and_fallbacks(home, fake) -> None:
    """A whole Dagster run with `llm` pointed at a local fake server: the summary by Claude; the insight reply
    is garbage, so that file falls back to the offline extractor, with the reason in the report."""
    mark_not_first(home)
    note(home, "working", "deploy-day.md", WORKING_NOTE, age_days=8)
    note(home, "episodic", "old.md", EPISODIC_NOTE, age_days=31)
    fake.reply_when(is_summary, json.dumps(SUMMARY))
    fake.reply_when(is_insight, "Sure! Here are some insights: none.")
    with fake.serve() as url:
        llm = LLMResource(api_key=TEST_KEY, mode="anthropic", base_url=url, max_retries=0, min_interval_s=0.0)
        defs = defs_with({**resources_for(home), "llm": llm})
        result = defs.resolve_job_def("tiered_compaction").execute_in_process(
            run_config={"ops": {"tier_volumes": {"config": {"as_of": NOW.isoformat()}}}},
            partition_key=PARTITION, instance=dg.DagsterInstance.ephemeral(), raise_on_error=False,
        )
    assert result.success and all(checks(result).values()), checks(result)
    r = report_of(home, result)
    section = r["llm"]
    assert section["configured"] == "anthropic:claude-haiku-4-5"
    assert section["summaries_by"] == ["anthropic:claude-haiku-4-5"] and section["insights_by"] == ["offline"]
    assert section["calls"] == 2 and section["cost_usd"] > 0
    [f] = section["fallbacks"]
    assert (f["step"], f["file"]) == ("episodic_to_semantic", "old.md") and "invalid JSON" in f["reason"]
    assert any(w.startswith("LLM fallback (episodic_to_semantic) for old.md") for w in r["warnings"])
    assert r["episodic_to_semantic_insights"] == 1  # the offline extractor's insight, same governance
    assert r["semantic_files"]["openclaw.md"]["appended"] == 1
    assert (home / "memory" / "episodic" / "deploy-day.md").read_text().startswith(
        "# Compiled: deploy-day.md\n## Summary\n- The bot deploy failed twice on Monday")
