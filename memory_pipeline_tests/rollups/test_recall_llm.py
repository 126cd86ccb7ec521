"""Tiered recall with the real MiniLM embedder, and the LLM summarisation path against the fake Anthropic API."""

import json
from pathlib import Path

import pytest

from memory_pipeline.resources import EmbedderResource, LLMResource
from memory_pipeline.rollups import build
from memory_pipeline.rollups.llm_summary import CORE_SYSTEM_PROMPT, SPHERE_SYSTEM_PROMPT, LLMSummariser
from memory_pipeline.rollups.recall import recall
from memory_pipeline.store import MemoryStore
from memory_pipeline_tests.llm.fake_api import TEST_KEY, FakeAnthropicAPI, server_error
from memory_pipeline_tests.rollups.corpus import life_sessions
from memory_pipeline_tests.rollups.helpers import insert_sessions

BROAD = (
    "What has my life looked like over these months: garden, cooking, running, work, piano, travel, home and my dog?"
)
SPECIFIC = "What is Biscuit allergic to?"


@pytest.fixture(scope="module")
def life(tmp_path_factory: pytest.TempPathFactory) -> tuple[MemoryStore, Path]:
    home = tmp_path_factory.mktemp("life") / "ws"
    store = insert_sessions(home, life_sessions())
    for c in range(8):
        build.build_core(store, home, f"core_000_{c:03d}")
    build.build_sphere(store, home, "sphere_000")
    return store, home


def test_recall_answers_a_broad_query_from_the_sphere(life: tuple[MemoryStore, Path]) -> None:
    store, home = life
    result = recall(store, home, BROAD, EmbedderResource().encode)
    assert result.cleared and result.layer == "sphere" and result.best.key == "sphere_000"
    assert result.best.path == str(home / "knowledge" / "spheres" / "sphere_000.json")
    assert [layer for layer, _ in result.searched] == ["sphere"]  # stopped at the first layer


@pytest.mark.slow  # embeds every session passage (~70 MiniLM texts): 5–35 s depending on the machine's load
def test_recall_goes_down_to_the_session_for_a_specific_query(life: tuple[MemoryStore, Path]) -> None:
    store, home = life
    result = recall(store, home, SPECIFIC, EmbedderResource().encode)
    assert [layer for layer, _ in result.searched] == ["sphere", "core", "session"]
    assert all(score < result.threshold for _, score in result.searched[:2])
    assert result.cleared and result.layer == "session" and result.best.key == "s040"
    assert "allergic to chicken" in result.best.passage
    assert result.best.path.endswith("raw/conversations/2026/02/09/1000-s040.md")


def test_recall_cli_prints_layer_score_and_path(life: tuple[MemoryStore, Path], monkeypatch, capsys) -> None:
    from memory_pipeline.cli import main

    store, home = life
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    assert main(["recall", BROAD]) == 0
    out = capsys.readouterr().out
    assert "answer from sphere" in out and str(home / "knowledge" / "spheres" / "sphere_000.json") in out
    assert main(["recall", "  "]) == 2


def test_recall_says_plainly_when_nothing_matches_well_enough(life: tuple[MemoryStore, Path], monkeypatch,
                                                              capsys) -> None:  # fmt: skip
    from memory_pipeline.cli import main

    _, home = life
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    # no layer reaches 0.99 and search finds nothing relevant either: the nearest, marked as such
    assert main(["recall", "What is the torque spec for the rear axle bolts?", "--threshold", "0.99"]) == 0
    out = capsys.readouterr().out
    assert "Nothing in memory matches this well enough (best match 0." in out and "answers need 0.99)" in out
    assert "threshold" not in out and "answer from" not in out


def _client(fake: FakeAnthropicAPI):
    return LLMResource(api_key=TEST_KEY, mode="anthropic").make_client(http_client=fake.http_client())


def test_llm_summarisation_writes_the_narrative_and_keeps_the_measurements(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    store = insert_sessions(home, life_sessions()[:8])
    fake = FakeAnthropicAPI()
    reply = {
        "summary": "A week of small routines: the garden, cooking, training, work, piano, a Japan trip, the kitchen.",
        "key_events": [{"session_id": "s001", "event": "garden_watering", "emotion": "Joy"}],
        "recurring_themes": ["routine", "home"],
        "emotional_arc": {"start_state": "calm", "peak_emotion": "excitement", "end_state": "content"},
    }
    fake.reply_when(lambda system, user: system == CORE_SYSTEM_PROMPT, json.dumps(reply))
    summariser = LLMSummariser(_client(fake), "claude-haiku-4-5", secrets=(TEST_KEY,))
    doc = build.build_core(store, home, "core_000_000", summariser).document
    assert doc["compressed_narrative"]["summary"] == reply["summary"]
    assert doc["compressed_narrative"]["key_events"][0]["event"] == "garden_watering"
    assert doc["compressed_narrative"]["key_events"][0]["emotion"] == "joy"
    assert doc["compressed_narrative"]["emotional_arc"]["peak_emotion"] == "excitement"
    assert doc["meta"]["compression_method"].startswith("llm_summarization (anthropic:claude-haiku-4-5)")
    assert doc["aggregated_state"]["interaction_count"] == 32  # statistics stay measured
    sent = fake.requests("messages")
    assert len(sent) == 1 and sent[0].key_ok and "session_id=s008" in sent[0].body["messages"][0]["content"]
    assert summariser.ledger.summary().calls == 1


def test_llm_failure_or_bad_reply_keeps_the_offline_document_and_says_why(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    store = insert_sessions(home, life_sessions()[:8])
    fake = FakeAnthropicAPI().fail("messages", *[server_error()] * 5)
    summariser = LLMSummariser(_client(fake), "claude-haiku-4-5", secrets=(TEST_KEY,))
    summariser.retry.sleep = lambda _s: None
    doc = build.build_core(store, home, "core_000_000", summariser).document
    assert doc["meta"]["compression_method"].startswith("extractive_offline")
    assert "500" in doc["meta"]["llm_error"] and TEST_KEY not in json.dumps(doc)
    fake = FakeAnthropicAPI()
    fake.reply_when(
        lambda s, u: s == CORE_SYSTEM_PROMPT,
        '{"summary": "ok", "key_events": [{"session_id": "s001", '
        '"event": "x", "emotion": "joy"}], "recurring_themes": ["a"], "emotional_arc": {}}',
    )
    fake.reply_when(lambda s, u: s == SPHERE_SYSTEM_PROMPT, "not json at all")
    summariser = LLMSummariser(_client(fake), "claude-haiku-4-5")
    doc = build.build_core(store, home, "core_000_000", summariser).document
    assert doc["compressed_narrative"]["summary"] == "ok"  # a partial reply: what it gave, the rest offline


def test_recall_as_of_reads_only_what_was_known_then(life: tuple[MemoryStore, Path]) -> None:
    from datetime import datetime

    from memory_pipeline.embedding.hashing import hashing_embed

    store, home = life
    with store.connect() as con:
        first, last = con.execute("SELECT min(started_at), max(started_at) FROM sessions").fetchone()
    before = recall(store, home, BROAD, hashing_embed, as_of=first.replace(microsecond=0) - (last - first) / 1000)
    assert before.best is None and [s for _, s in before.searched] == [None, None, None]
    middle = first + (last - first) / 2
    result = recall(store, home, BROAD, hashing_embed, threshold=2.0, as_of=middle)  # 2.0: down to the sessions
    assert result.searched[0] == ("sphere", None)  # the Sphere's last session ended after `middle`
    with store.connect() as con:
        rows = con.execute("SELECT session_id FROM sessions WHERE started_at <= ?", [middle]).fetchall()
    known = {r[0] for r in rows}
    assert result.layer == "session" and result.hits and {h.key for h in result.hits} <= known
    assert recall(store, home, BROAD, hashing_embed, as_of=datetime.max).best is not None


def test_a_reply_stating_what_no_session_said_is_refused_and_the_offline_narrative_stays(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    store = insert_sessions(home, life_sessions()[:8])
    offline = build.build_core(store, home, "core_000_000").document["compressed_narrative"]["summary"]
    fake = FakeAnthropicAPI()
    reply = {"summary": "A week of routines; the Japan trip was booked for $4,870 with Zanzibar Air.",
             "key_events": [], "recurring_themes": ["routine"], "emotional_arc": {}}  # fmt: skip
    fake.reply_when(lambda system, user: system == CORE_SYSTEM_PROMPT, json.dumps(reply))
    summariser = LLMSummariser(_client(fake), "claude-haiku-4-5", secrets=(TEST_KEY,))
    doc = build.build_core(store, home, "core_000_000", summariser).document
    assert doc["compressed_narrative"]["summary"] == offline
    assert doc["meta"]["compression_method"].startswith("extractive_offline")
    assert "4,870" in doc["meta"]["llm_error"] and len(fake.requests("messages")) == 1, doc["meta"]["llm_error"]
