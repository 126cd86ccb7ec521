"""The Versioner's judgement through Claude — the real SDK against the fake Anthropic API's transport: a reworded
version the offline rule misses, answers that fall back to the offline rule, look-alikes kept apart whatever
the model says, and the night's step that asks (its request, its count of judged and fallen-back groups)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from memory_pipeline.abstraction.judged_versions import CACHE_FILE, ReplyCache, judged_plan
from memory_pipeline.abstraction.versions import plan
from memory_pipeline.defs.abstraction.versioner import fact_versions
from memory_pipeline.llm.version_judge import (
    SYSTEM_PROMPT,
    ClaudeVersionJudge,
    JudgementRejected,
    Stated,
    lookalike,
    parse_judgement,
    user_message,
)
from memory_pipeline.resources import EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.resources.embedder import EmbedderResource
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline.store.validity import FactRow
from memory_pipeline_tests.llm.fake_api import TEST_KEY, FakeAnthropicAPI, server_error

T0 = datetime(2026, 9, 1, 9, 0)
_LINE = re.compile(r"^\[(m\d+)\] stated (\S+ \S+) \| (.*)$")


def row(i: str, text: str, days: int) -> FactRow:
    return FactRow(i, text, T0 + timedelta(days=days), None)


BUDGET_OLD = row("b1", "The quarterly cloud budget is $10,000", 0)
BUDGET_NEW = row("b2", "Finance approved $12,500 for cloud spend this quarter", 30)
RISK_OLD = row("r1", "Per-trade risk cap is 2%.", 0)
RISK_NEW = row("r2", "Per-trade risk cap is now 1.5%.", 13)


def answer(*facts: Sequence[str], current: Callable[[list[str]], str] = lambda labels: labels[-1]) -> Any:
    """A reply function for the fake API: each fact names its memories by the start of their text; the labels
    are read from the request, as a model reads them."""

    def reply(_system: str, user: str) -> str:
        labels = {m.group(3): m.group(1) for m in map(_LINE.match, user.splitlines()) if m}
        out = []
        for texts in facts:
            found = [next(lab for text, lab in labels.items() if text.startswith(t)) for t in texts]
            out.append({"fact": "the fact", "versions": found, "current": current(found)})
        return json.dumps({"facts": out})

    return reply


def judge(fake: FakeAnthropicAPI) -> ClaudeVersionJudge:
    llm = LLMResource(api_key=TEST_KEY, mode="anthropic", min_interval_s=0.0, retry_base_delay_s=0.001)
    distiller = llm.get_distiller(client=llm.make_client(fake.http_client()), rate_limit_per_min=100_000,
                                  sleep=lambda _s: None)  # fmt: skip
    return ClaudeVersionJudge(distiller)


def run(fake: FakeAnthropicAPI, *groups: list[FactRow], cache: ReplyCache | None = None) -> tuple[Any, Any, list[str]]:
    rows = [r for g in groups for r in g]
    logged: list[str] = []
    out, stats = judged_plan(plan(rows), list(groups), judge(fake).ask, cache=cache, log=logged.append,
                             request_key=lambda members: ReplyCache.key("m", user_message(members)))  # fmt: skip
    return out, stats, logged


def pairs(p: Any) -> set[tuple[str, str]]:
    return {(s.memory_id, s.superseded_by) for s in p.supersessions}


# ------------------------------------------------------------------ what Claude adds


def test_claude_marks_a_reworded_version_the_offline_rule_misses_and_the_request_carries_texts_and_dates() -> None:
    assert pairs(plan([BUDGET_OLD, BUDGET_NEW])) == set()  # worded too differently for the offline rule
    fake = FakeAnthropicAPI()
    fake.reply_when(lambda system, _u: system == SYSTEM_PROMPT, answer(("The quarterly", "Finance approved")))
    out, stats, _ = run(fake, [BUDGET_OLD, BUDGET_NEW])
    assert pairs(out) == {("b1", "b2")}
    assert out.supersessions[0].valid_until == BUDGET_NEW.stated_at
    assert (stats.judged, stats.fell_back, stats.added) == (1, 0, 1)

    (sent,) = fake.requests("messages")
    assert sent.key_ok and sent.body["temperature"] == 0
    assert sent.body["system"][0]["text"] == SYSTEM_PROMPT and sent.body["system"][0]["cache_control"]
    user = sent.body["messages"][0]["content"]
    assert "[m1] stated 2026-09-01 09:00 | The quarterly cloud budget is $10,000" in user
    assert "[m2] stated 2026-10-01 09:00 | Finance approved $12,500 for cloud spend this quarter" in user


def test_an_added_qualifier_joins_only_when_the_newer_says_the_value_changed() -> None:
    moved = [row("s1", "Daily standup is at 09:30", 0), row("s2", "Standup moved to 10:15", 9)]
    qualified = [row("c1", "Risk cap is 2%", 0), row("c2", "Daily risk cap is 3%", 9)]
    fake = FakeAnthropicAPI()
    fake.reply_when(lambda _s, user: "Standup" in user, answer(("Daily standup", "Standup moved")))
    fake.reply_when(lambda _s, user: "Risk cap" in user, answer(("Risk cap", "Daily risk")))
    out, stats, logged = run(fake, moved, qualified)
    assert pairs(out) == {("s1", "s2")}
    assert stats.guarded == 1 and any("c1 / c2 kept apart" in line for line in logged)


# ------------------------------------------------------------------ look-alikes


LOOKALIKES = [
    [row("t1", "Risk per trade is 2%", 0), row("t2", "Risk per day is now 3%", 5)],
    [row("h1", "The staging host is db-stage-7", 0), row("h2", "The production host is now db-prod-2", 5)],
    [row("p1", "Leeds pickup is at 9:00", 0), row("p2", "York pickup is at 9:30", 5)],
    [row("a1", "Alice's bill is $80", 0), row("a2", "Bob's bill is $95", 5)],
]


@pytest.mark.parametrize("group", LOOKALIKES, ids=["per-trade/per-day", "staging/production", "Leeds/York", "bills"])
def test_lookalikes_stay_apart_whatever_claude_says(group: list[FactRow]) -> None:
    fake = FakeAnthropicAPI()
    fake.reply_when(lambda _s, _u: True, answer((group[0].content, group[1].content)))
    out, stats, _ = run(fake, group)
    assert pairs(out) == set() and stats.judged == 1 and stats.guarded == 1
    assert lookalike(group[0].content, group[1].content) is not None


def test_claude_declining_an_offline_pair_leaves_it_current() -> None:
    fake = FakeAnthropicAPI()
    fake.reply_when(lambda _s, _u: True, '{"facts": []}')
    assert pairs(plan([RISK_OLD, RISK_NEW])) == {("r1", "r2")}
    out, stats, _ = run(fake, [RISK_OLD, RISK_NEW])
    assert pairs(out) == set() and stats.declined == 1


# ------------------------------------------------------------------ invalid answers fall back to the offline rule


def _labels(ids: list[str]) -> str:
    return json.dumps({"facts": [{"fact": "risk cap", "versions": ids, "current": ids[-1]}]})


INVALID = {
    "unknown id": (_labels(["m1", "m9"]), "names 'm9', not a memory it was given"),
    "bad JSON": ("Sure! The first two are versions of one fact.", "invalid JSON: no object"),
    "not a list": ('{"facts": {"versions": ["m1", "m2"]}}', "invalid JSON: 'facts' is not a list"),
    "one version": (_labels(["m1"]), "no list of two or more"),
    "same value": (_labels(["m2", "m3"]), "states the same value"),
    "current not newest": (json.dumps({"facts": [{"versions": ["m1", "m2"], "current": "m1"}]}),
                           "is not the version stated last"),
    "in two facts": (json.dumps({"facts": [{"versions": ["m1", "m2"], "current": "m2"},
                                           {"versions": ["m2", "m4"], "current": "m4"}]}), "in more than one fact"),
}  # fmt: skip


@pytest.mark.parametrize("reply,reason", INVALID.values(), ids=INVALID.keys())
def test_an_invalid_answer_falls_back_to_the_offline_rule_for_that_group(reply: str, reason: str) -> None:
    group = [RISK_OLD, RISK_NEW, row("r3", "The per-trade risk cap is now 1.5 percent", 20),
             row("r4", "Per-trade risk cap is now 1%.", 40)]  # fmt: skip
    members = [Stated(r.id, r.content, r.stated_at) for r in group]
    with pytest.raises(JudgementRejected, match=re.escape(reason)):
        parse_judgement(reply, members)
    other = [BUDGET_OLD, BUDGET_NEW]  # judged validly beside it
    fake = FakeAnthropicAPI()
    fake.reply_when(lambda _s, user: "Per-trade" in user, reply)
    fake.reply_when(lambda _s, _u: True, answer(("The quarterly", "Finance approved")))
    out, stats, logged = run(fake, group, other)
    assert pairs(out) == pairs(plan(group)) | {("b1", "b2")}
    assert (stats.judged, stats.fell_back) == (1, 1)
    assert any("left to the offline rule" in line and reason in line for line in logged)


def test_no_reply_falls_back_and_never_crashes() -> None:
    fake = FakeAnthropicAPI()
    fake.fail("messages", *[server_error()] * 5)  # every attempt of the one call
    out, stats, logged = run(fake, [RISK_OLD, RISK_NEW])
    assert pairs(out) == {("r1", "r2")} and stats.fell_back == 1 and stats.reasons["AskFailed"] == 1
    assert "500" in logged[0]


def test_an_unchanged_group_is_not_asked_again(tmp_path: Path) -> None:
    fake = FakeAnthropicAPI()
    fake.reply_when(lambda _s, _u: True, answer(("The quarterly", "Finance approved")))
    first = ReplyCache(tmp_path / CACHE_FILE)
    run(fake, [BUDGET_OLD, BUDGET_NEW], cache=first)
    first.save()
    out, stats, _ = run(fake, [BUDGET_OLD, BUDGET_NEW], cache=ReplyCache(tmp_path / CACHE_FILE))
    assert len(fake.requests("messages")) == 1 and (stats.reused, stats.asked) == (1, 0)
    assert pairs(out) == {("b1", "b2")}


# ------------------------------------------------------------------ the night's step


def _workspace(tmp_path: Path) -> Path:
    home = tmp_path / "ws"
    home.mkdir()
    facts = [BUDGET_OLD, BUDGET_NEW, RISK_OLD, RISK_NEW, *LOOKALIKES[0],
             row("n1", "Walked the dog in the park before breakfast", 3)]  # fmt: skip
    lines = [{"id": r.id, "content": r.content, "created_at": r.stated_at.isoformat()} for r in facts]
    (tmp_path / "facts.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    import_jsonl(MemoryStore(home / "memory.duckdb"), tmp_path / "facts.jsonl")
    return home


def _materialize(home: Path, llm: LLMResource, instance: dg.DagsterInstance | None = None) -> dg.ExecuteInProcessResult:
    resources = {"store": MemoryStoreResource(home=str(home)), "embedder": EmbedderResource(), "llm": llm,
                 "engine": EngineConfig(as_of=(T0 + timedelta(days=60)).isoformat(), rate_limit_per_min=100_000)}
    return dg.materialize([fact_versions], resources=resources, raise_on_error=False,  # type: ignore[arg-type]
                          instance=instance or dg.DagsterInstance.ephemeral())


def _metadata(result: dg.ExecuteInProcessResult) -> dict[str, Any]:
    (event,) = result.get_asset_materialization_events()
    return {k: v.value for k, v in event.step_materialization_data.materialization.metadata.items()}


def test_the_versioner_step_asks_claude_in_anthropic_mode_and_says_what_it_judged(tmp_path: Path,
                                                                                   monkeypatch) -> None:  # fmt: skip
    home = _workspace(tmp_path)
    offline = _materialize(home, LLMResource(mode="offline"))
    assert offline.success and not any(k.startswith("claude_") for k in _metadata(offline))
    # "Risk per trade is 2%" is the per-trade risk cap in other words: the attribute rule supersedes it by "… now 1.5%"
    assert {(s.memory_id, s.superseded_by) for s in offline.output_for_node("fact_versions").supersessions} == {
        ("r1", "r2"), ("t1", "r2")
    }

    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    fake = FakeAnthropicAPI()
    fake.reply_when(lambda _s, user: "cloud" in user, answer(("The quarterly", "Finance approved")))
    fake.reply_when(lambda _s, user: "Risk per" in user, "Both are risk limits.")  # invalid: falls back
    with fake.serve() as base_url:
        llm = LLMResource(api_key=dg.EnvVar("ANTHROPIC_API_KEY"), mode="anthropic", base_url=base_url,
                          min_interval_s=0.0, retry_base_delay_s=0.001)  # fmt: skip
        instance = dg.DagsterInstance.ephemeral()
        night = _materialize(home, llm, instance)
    assert night.success
    got = night.output_for_node("fact_versions")
    assert {(s.memory_id, s.superseded_by) for s in got.supersessions} >= {("b1", "b2"), ("r1", "r2")}
    assert ("t1", "t2") not in {(s.memory_id, s.superseded_by) for s in got.supersessions}
    meta = _metadata(night)
    assert meta["claude_judged"] >= 1 and meta["claude_fell_back"] >= 1
    assert meta["claude_judged"] + meta["claude_fell_back"] == meta["claude_groups"] == len(fake.requests("messages"))
    lines = [r.user_message for r in instance.all_logs(night.run_id) if "Claude judged" in r.user_message]
    assert lines and f"{meta['claude_fell_back']} fell back to the offline rule" in lines[0]
    assert (home / "reports" / CACHE_FILE).exists()


def test_a_batch_night_keeps_the_offline_rule_alone(tmp_path: Path) -> None:
    home = _workspace(tmp_path)
    fake = FakeAnthropicAPI()
    with fake.serve() as base_url:
        night = _materialize(home, LLMResource(api_key=TEST_KEY, mode="batch", base_url=base_url))
    assert night.success and fake.seen == []
    assert not any(k.startswith("claude_") for k in _metadata(night))
    assert {(s.memory_id, s.superseded_by) for s in night.output_for_node("fact_versions").supersessions} == {
        ("r1", "r2"), ("t1", "r2")
    }
