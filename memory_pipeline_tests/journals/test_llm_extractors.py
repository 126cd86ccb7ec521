"""The LLM versions of the session extractors, through the real SDK against the fake Anthropic API on 127.0.0.1:
the seed's prompt with the session goes out, good replies become memories with the LLM source, a bad reply or an
API error falls back to the offline extractor for that session (reason in the metadata), and switching the mode
replaces exactly that extractor's memories of the partition."""

import json
import re
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.defs.journals.assets import DAILY_ASSETS, session_memories, sessions
from memory_pipeline.defs.journals.common import EXTRACTOR_KEYS, IO_MANAGER
from memory_pipeline.defs.journals.io import ParquetIOManager
from memory_pipeline.journals import llm_extractors as lx
from memory_pipeline.journals.extractors import EXTRACTORS
from memory_pipeline.journals.transcript import Transcript, Turn
from memory_pipeline.llm.ledger import FileLedger
from memory_pipeline.resources import EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.settings import REPO_ROOT
from memory_pipeline.store import MemoryStore
from memory_pipeline_tests.llm.fake_api import TEST_KEY, FakeAnthropicAPI, server_error
from memory_pipeline_tests.seeds import seed_files

DAY = "2026-09-15"
SESSIONS = ("ses_46ea2429", "ses_2855e3fd")  # the sample's two sessions that day
SEED = seed_files("001_*.txt")
STARTS = {name: spec.prompt.split("{transcript}")[0] for name, spec in lx.PROMPTS.items()}


def prompt_kind(user: str) -> str:
    return next(name for name, start in STARTS.items() if user.startswith(start))


def prose(user: str) -> list[str]:
    """The transcript's spoken lines (after the frontmatter and title), as a careful model would quote them."""
    body = user.split("Transcript:\n", 1)[1].split("\n---\n", 1)[-1]
    lines = [ln.strip() for ln in body.splitlines()]
    return [ln for ln in lines if len(ln.split()) >= 6 and not ln.startswith(("#", ">", "<!--", "---"))]


def careful_model(system: str, user: str) -> str:
    """A deterministic stand-in for Claude: two items quoting the session, in the fields each prompt asks for."""
    kind = prompt_kind(user)
    said = prose(user)[:3] or ["nothing much was said in this session at all"]
    first, second = said[0], said[-1]
    items = {
        "decisions": [{"decision": first, "context": "agreed in the session", "project": "general"}],
        "lessons": [{"lesson": second, "context": ""}],
        "people": [{"person": "Mei Tanaka", "info": first}],
        "procedures": [{"procedure": "How to follow up", "steps": [first, second]}],
        "facts": [{"fact": first, "topic": "ops"}, {"fact": second}],
    }[kind]
    return "```json\n" + json.dumps(items) + "\n```"


@pytest.fixture(autouse=True)
def _no_git(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    day = tmp_path / "raw" / "conversations" / "2026" / "09"
    for d in ("15", "16"):
        shutil.copytree(REPO_ROOT / "data" / "sample" / "raw" / "conversations" / "2026" / "09" / d, day / d)
    return tmp_path


@pytest.fixture
def fake() -> Iterator[tuple[FakeAnthropicAPI, str]]:
    api = FakeAnthropicAPI()
    api.reply_when(lambda system, user: system == lx.SYSTEM_PROMPT, careful_model)
    with api.serve() as url:
        yield api, url


def resources(home: Path, url: str | None = None, **engine: object) -> dict:
    llm = (
        LLMResource(api_key=TEST_KEY, mode="anthropic", base_url=url, timeout_s=2.0, min_interval_s=0.0,
                    max_retries=1, retry_base_delay_s=0.001)
        if url
        else LLMResource(mode="offline")
    )
    return {
        "store": MemoryStoreResource(home=str(home)),
        IO_MANAGER: ParquetIOManager(base_dir=str(home / "parquet")),
        "llm": llm,
        "engine": EngineConfig(**{"rate_limit_per_min": 100_000, **engine}),  # type: ignore[arg-type]
    }


def materialize(home: Path, url: str | None = None, day: str = DAY, selection: list | None = None,
                assets: list | None = None, **engine: object) -> dg.ExecuteInProcessResult:
    result = dg.materialize(assets or DAILY_ASSETS, resources=resources(home, url, **engine), partition_key=day,
                            selection=selection)
    assert result.success
    return result


def rows(home: Path, sql: str, params: list | None = None) -> list[tuple]:
    with MemoryStore(home / "memory.duckdb").connect() as con:
        return con.execute(sql, params or []).fetchall()


def meta(result: dg.ExecuteInProcessResult, name: str) -> dict:
    mats = result.asset_materializations_for_node("session_memories")
    return next(m.metadata for m in mats if m.asset_key == EXTRACTOR_KEYS[name])


ONLY_DECISIONS = [dg.AssetKey("sessions"), EXTRACTOR_KEYS["decisions"]]
MEMORIES = "SELECT id, content, lifecycle, source, session_id, created_at FROM memories ORDER BY id"


def test_the_prompt_is_the_seeds_with_the_session(home: Path, fake: tuple[FakeAnthropicAPI, str]) -> None:
    api, url = fake
    materialize(home, url, assets=[sessions, session_memories])
    sent = api.requests("messages")
    assert len(sent) == len(EXTRACTORS) * len(SESSIONS) and all(s.key_ok for s in sent)
    users = [s.body["messages"][-1]["content"] for s in sent]
    systems = {s.body["system"][0]["text"] for s in sent}
    assert systems == {lx.SYSTEM_PROMPT} and {s.body["max_tokens"] for s in sent} == {lx.MAX_TOKENS}
    decisions = [u for u in users if prompt_kind(u) == "decisions"]
    seed_words = "Extract any decisions made in this conversation.\nFor each decision, output:\n- decision: what " \
        "was decided\n- context: why\n- project: which project (or \"general\")\n\nOutput JSON array. If no " \
        "decisions, output [].\n\nTranscript:\n"
    assert len(decisions) == 2 and all(u.startswith(seed_words) for u in decisions)
    for sid in SESSIONS:  # each session's own transcript, frontmatter and turns, cut at the seed's 6000 characters
        mine = [u for u in users if f"session_id: {sid}\n" in u]
        assert len(mine) == len(EXTRACTORS) and {prompt_kind(u) for u in mine} == set(EXTRACTORS)
        assert all("\n## " in u and len(u.split("Transcript:\n", 1)[1]) <= lx.TRANSCRIPT_MAX_CHARS for u in mine)
    assert "Let's review last night's on-call pages." in next(u for u in decisions if SESSIONS[0] in u)


@pytest.mark.skipif(not SEED, reason="seed 001 not on this machine")
def test_the_decisions_prompt_is_quoted_from_seed_001() -> None:
    text = SEED[0].read_text(encoding="utf-8")
    quoted = re.search(r'class DecisionExtractor:.*?prompt = """(.*?)"""', text, re.S)
    assert quoted and quoted.group(1) == lx.DECISIONS_PROMPT
    for spec in lx.PROMPTS.values():  # the others follow its template
        assert spec.prompt.endswith("output [].\n\nTranscript:\n{transcript}") and "Output JSON array." in spec.prompt


def test_good_replies_become_memories_with_the_llm_source(home: Path, fake: tuple[FakeAnthropicAPI, str]) -> None:
    api, url = fake
    first = materialize(home, url)
    mems = rows(home, MEMORIES)
    assert {m[3] for m in mems} == {f"extract:{n}@llm-2" for n in EXTRACTORS} and {m[2] for m in mems} == {"active"}
    assert {m[4] for m in mems} == set(SESSIONS)
    for name in EXTRACTORS:
        m = meta(first, name)
        assert m["mode"].value == "llm" and m["version"].value == "llm-2" and m["source"].value.endswith("@llm-2")
        assert m["fallback_sessions"].value == 0 and m["llm_calls"].value == 2
        assert m["distiller"].value == "anthropic:claude-haiku-4-5"
    procedure = next(m[1] for m in mems if m[3] == "extract:procedures@llm-2")
    assert procedure.startswith("How to follow up: 1. ") and "; 2. " in procedure
    # each memory is dated by the turn it quotes, not the session's start
    turns = home / "parquet" / "sessions" / DAY / "turns.parquet"
    turn_times = {r[0] for r in rows(home, f"SELECT \"at\" FROM read_parquet('{turns}')")}
    starts = {r[0] for r in rows(home, "SELECT started_at FROM sessions")}
    assert {m[5] for m in mems} <= turn_times and not {m[5] for m in mems} <= starts
    journal = (home / "knowledge" / "journal" / f"{DAY}.md").read_text()
    assert "How to follow up" in journal
    # every call in the run's usage ledger, with its stage
    calls = FileLedger(home / "reports", first.run_id).calls()
    assert len(calls) == 10 and {c.stage for c in calls} == {f"journal_{n}" for n in EXTRACTORS}
    assert all(c.status == "ok" and c.cost_usd > 0 for c in calls)
    # idempotent in LLM mode: same memories, same journal bytes
    before = journal
    again = materialize(home, url)
    assert rows(home, MEMORIES) == mems and (home / "knowledge" / "journal" / f"{DAY}.md").read_text() == before
    assert all(meta(again, n)["inserted"].value == 0 for n in EXTRACTORS)


def test_bad_json_or_an_api_error_falls_back_offline_for_that_session(
    home: Path, fake: tuple[FakeAnthropicAPI, str]
) -> None:
    api, url = fake
    # the first call (decisions, first session) fails twice: the retry gives up; people's reply for the second
    # session is cut JSON; facts' for the first names no fact
    api.fail("messages", server_error(), server_error())
    api.reply_rules.insert(0, (lambda s, u: prompt_kind(u) == "people" and SESSIONS[1] in u, '[{"person": "Tom'))
    api.reply_rules.insert(0, (lambda s, u: prompt_kind(u) == "facts" and SESSIONS[0] in u, '[{"topic": "ops"}]'))
    result = materialize(home, url, assets=[sessions, session_memories])
    by = {(m[4], m[3].split(":")[1]) for m in rows(home, MEMORIES)}
    fell_back = {(SESSIONS[0], "decisions"), (SESSIONS[1], "people"), (SESSIONS[0], "facts")}
    for sid in SESSIONS:
        for name in EXTRACTORS:
            wrong = f"{name}@llm-2" if (sid, name) in fell_back else f"{name}@{EXTRACTORS[name].version}"
            assert (sid, wrong) not in by, (sid, name)
    assert (SESSIONS[0], "decisions@3") in by  # the offline decisions of that session (its people: none offline)
    fallbacks = {n: meta(result, n)["fallbacks"].value for n in EXTRACTORS}
    assert set(fallbacks["decisions"]) == {SESSIONS[0]} and "LLM call failed" in fallbacks["decisions"][SESSIONS[0]]
    assert "500" in fallbacks["decisions"][SESSIONS[0]]
    assert set(fallbacks["people"]) == {SESSIONS[1]} and fallbacks["people"][SESSIONS[1]].startswith("invalid JSON")
    assert fallbacks["facts"] == {SESSIONS[0]: "facts item 1: field 'fact' is missing, not a string"}
    assert fallbacks["lessons"] == {} and fallbacks["procedures"] == {}
    decisions = meta(result, "decisions")
    assert decisions["mode"].value == "llm" and decisions["fallback_sessions"].value == 1
    failed = [c for c in FileLedger(home / "reports", result.run_id).calls() if c.status == "error"]
    assert len(failed) == 1 and failed[0].attempts == 2 and failed[0].key == SESSIONS[0]
    # the same run again with the API healthy: the fallbacks are replaced by LLM memories, the rest unchanged
    api.reply_rules = api.reply_rules[2:]
    again = materialize(home, url, assets=[sessions, session_memories])
    assert all(meta(again, n)["fallback_sessions"].value == 0 for n in EXTRACTORS)
    active = {m[3] for m in rows(home, MEMORIES) if m[2] == "active"}
    assert active == {f"extract:{n}@llm-2" for n in EXTRACTORS}
    assert meta(again, "decisions")["superseded"].value >= 1 and meta(again, "lessons")["inserted"].value == 0


def test_the_cost_cap_sends_nothing_and_falls_back(home: Path, fake: tuple[FakeAnthropicAPI, str]) -> None:
    api, url = fake
    result = materialize(home, url, assets=[sessions, session_memories], max_cost_usd=0.0)
    assert api.requests("messages") == []
    for name in EXTRACTORS:
        reasons = meta(result, name)["fallbacks"].value
        assert set(reasons) == set(SESSIONS) and all(r.startswith("cost cap $0 reached") for r in reasons.values())
    assert {m[3] for m in rows(home, MEMORIES)} <= {e.source for e in EXTRACTORS.values()}


def test_switching_mode_replaces_exactly_that_extractors_memories(
    home: Path, fake: tuple[FakeAnthropicAPI, str]
) -> None:
    _, url = fake
    materialize(home, None, assets=[sessions, session_memories])
    materialize(home, None, day="2026-09-16", assets=[sessions, session_memories])
    neighbour = rows(home, f"SELECT * FROM memories WHERE session_id NOT IN {SESSIONS} ORDER BY id")
    others = rows(home, "SELECT * FROM memories WHERE source NOT LIKE 'extract:decisions@%' ORDER BY id")
    mine = f"session_id IN {SESSIONS}"
    offline_ids = {r[0] for r in rows(home, f"SELECT id FROM memories WHERE source = 'extract:decisions@3' AND {mine}")}
    assert neighbour and offline_ids

    switched = materialize(home, url, assets=[sessions, session_memories], selection=ONLY_DECISIONS)
    assert [m.asset_key for m in switched.asset_materializations_for_node("session_memories")] == [
        EXTRACTOR_KEYS["decisions"]
    ]
    assert rows(home, "SELECT * FROM memories WHERE source NOT LIKE 'extract:decisions@%' ORDER BY id") == others
    assert rows(home, f"SELECT * FROM memories WHERE session_id NOT IN {SESSIONS} ORDER BY id") == neighbour
    state = dict(rows(home, f"SELECT id, lifecycle FROM memories WHERE source = 'extract:decisions@3' AND {mine}"))
    assert set(state) == offline_ids and set(state.values()) == {"superseded"}
    llm_rows = rows(home, "SELECT lifecycle, session_id FROM memories WHERE source = 'extract:decisions@llm-2'")
    assert {r[0] for r in llm_rows} == {"active"} and {r[1] for r in llm_rows} == set(SESSIONS)
    assert meta(switched, "decisions")["superseded"].value == len(offline_ids)

    # and back offline: the same offline memories again (same ids, reactivated), the LLM ones superseded
    back = materialize(home, None, assets=[sessions, session_memories], selection=ONLY_DECISIONS)
    assert meta(back, "decisions")["mode"].value == "offline"
    assert meta(back, "decisions")["reactivated"].value == len(offline_ids)
    assert {r[0] for r in rows(home, "SELECT lifecycle FROM memories WHERE source = 'extract:decisions@llm-2'")} == {
        "superseded"
    }
    assert rows(home, "SELECT * FROM memories WHERE source NOT LIKE 'extract:decisions@%' ORDER BY id") == others


def _transcript(*texts: str) -> Transcript:
    at = datetime(2026, 9, 15, 9, 50)
    turns = tuple(
        Turn("09:50", "user", (t,), at=at.replace(minute=50 + i), line=10 + i, text=t, ref=f"D1:{i}")
        for i, t in enumerate(texts)
    )
    return Transcript("raw/x.md", "ses_1", at, at, "t", "t", {"session_id": "ses_1"}, turns)


T = _transcript("We picked Postgres over MySQL for the billing service.", "Mei leads the on-call rotation now.")


@pytest.mark.parametrize(
    ("name", "reply", "problem"),
    [
        ("decisions", "", "empty reply"),
        ("decisions", "No decisions were made.", "invalid JSON: no array"),
        ("decisions", '[{"decision": "x"', "invalid JSON: Expecting"),
        ("decisions", '{"decision": "x"}', "invalid JSON: no array"),
        ("decisions", '["picked Postgres"]', "decisions item 1 is a str, not an object"),
        ("decisions", '[{"decision": "  "}]', "decisions item 1: field 'decision' is empty"),
        ("decisions", '[{"decision": 3}]', "decisions item 1: field 'decision' is int, not a string"),
        ("decisions", '[{"decision": "x", "context": ["a"]}]', "field 'context' is list, not a string"),
        ("lessons", json.dumps([{"lesson": "y" * 501}]), "field 'lesson' has 501 characters (at most 500)"),
        ("people", '[{"person": "Mei"}]', "people item 1: field 'info' is missing"),
        ("procedures", '[{"procedure": "deploy", "steps": "run it"}]', "field 'steps' is not a list of strings"),
        ("procedures", '[{"procedure": "deploy", "steps": []}]', "field 'steps' needs 1–15 steps"),
        ("facts", "[1, 2]", "facts item 1 is a int, not an object"),
    ],
)
def test_replies_that_break_the_shape_are_rejected(name: str, reply: str, problem: str) -> None:
    with pytest.raises(lx.LLMExtractionFailed, match=re.escape(problem)):
        lx.parse_reply(name, reply, T)


def test_llm_items_pass_the_same_statement_gate_as_the_offline_extractors() -> None:
    reply = json.dumps([
        {"lesson": "**Template Structure (lines 185-292, inline in render/1):**"},
        {"lesson": "But `mount_computers` is never called for that branch which means the assign doesn't exist."},
        {"lesson": "Updated `export_development_history.py` to always produce a file."},
        {"lesson": "DuckDB holds one write lock per process, so two CLI commands cannot write at once."},
    ])  # fmt: skip
    got = lx.parse_reply("lessons", reply, T)
    assert [c.content for c in got] == ["DuckDB holds one write lock per process, so two CLI commands cannot write "
                                        "at once."]  # fmt: skip


def test_good_replies_parse_and_anchor_to_their_turn() -> None:
    assert lx.parse_reply("decisions", "[]", T) == []
    got = lx.parse_reply(
        "decisions",
        'Here you go:\n```json\n[{"decision": "Use Postgres for billing", "context": "we picked Postgres over '
        'MySQL for the billing service", "project": "billing"}, {"decision": "Use Postgres for billing"}]\n```',
        T,
    )
    assert [c.content for c in got] == [
        "Use Postgres for billing — we picked Postgres over MySQL for the billing service",
        "Use Postgres for billing",
    ]
    people = lx.parse_reply("people", '[{"person": "Mei", "info": "leads the on-call rotation"}]', T)
    assert people[0].content == "Mei: leads the on-call rotation"
    assert (people[0].at, people[0].turn_line, people[0].ref) == (T.turns[1].at, 11, "D1:1")
    unmatched = lx.parse_reply("facts", '[{"fact": "Quarterly revenue grew by a lot in Brazil."}]', T)
    assert (unmatched[0].at, unmatched[0].turn_line, unmatched[0].ref) == (T.started, 0, None)
    steps = lx.parse_reply("procedures", '[{"procedure": "To deploy:", "steps": ["Build.", "Ship it"]}]', T)
    assert steps[0].content == "How to deploy: 1. Build; 2. Ship it."
    many = json.dumps([{"fact": f"The billing service runs {i} workers in region {i}."} for i in range(20)])
    assert len(lx.parse_reply("facts", many, T)) == lx.MAX_ITEMS
