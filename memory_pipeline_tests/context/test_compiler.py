"""The compiler: budget never exceeded, tokens add up, P0 first, slots in the seed's order, manifest reasons."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.context.compiler import (
    ContextError,
    Knowledge,
    Turn,
    compile_context,
    read_history,
    section_tokens,
)
from memory_pipeline.context.sample import install_sample_knowledge
from memory_pipeline.context.topics import load_topics
from memory_pipeline.tokens import estimate_tokens

TODAY = date(2026, 11, 2)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    install_sample_knowledge(root)
    (root / "knowledge" / "memory").mkdir(parents=True)
    (root / "knowledge" / "memory" / "MEMORY.md").write_text("# Core Memory\n\n## Key Decisions\n- 2026-11-01: "
                                                             "limit orders only on thin books\n")
    (root / "knowledge" / "journal").mkdir()
    (root / "knowledge" / "journal" / "2026-11-02.md").write_text("## 2026-11-02\n- JTO/USDT slipped 6.1 %\n")
    return root


def _search(query: str, k: int) -> list[Knowledge]:
    facts = [
        Knowledge("Set a price alert on TIA at 5.99", 0.9, memory_id="m-000002", date="2026-10-12"),
        Knowledge("Market order on JTO/USDT slipped 6.1 %", 0.7, memory_id="m-000010", date="2026-10-20"),
        Knowledge("barely related", 0.01, memory_id="m-000099"),
        Knowledge("the runbook", 0.5, kind="file", path="knowledge/procedures/deploy-runbook.md"),
    ]
    return facts[:k]


def test_slots_in_the_seeds_order_with_a_manifest(home: Path) -> None:
    topics, _ = load_topics(home)
    history = [Turn("user", "hi"), Turn("tool", "line one\nline two\nline three", tool="read_file"),
               Turn("assistant", "done")]
    out = compile_context(home, "market order on JTO/USDT: what stop-loss?", topics=topics,
                          session_history=history, search=_search, today=TODAY)
    labels = [e.label for e in out.manifest if e.included]
    assert labels[:2] == ["identity:SOUL.md", "identity:USER.md"]
    assert out.prompt.startswith("<!-- identity:SOUL.md -->")
    order = [out.prompt.index(f"<!-- {lab} -->") for lab in
             ("identity:USER.md", "memory", "journal:2026-11-02", "projects", "topic:trading-risk",
              "knowledge", "history:0")]
    assert order == sorted(order)
    left_out = {e.label: e.reason for e in out.manifest if not e.included}
    assert left_out["journal:2026-11-01"] == "missing file"
    assert left_out["knowledge:m-000099"].startswith("score 0.010")
    assert left_out["topic:deploys"].startswith("not active")
    assert "[tool read_file] line one (+2 lines)" in out.prompt and "line two" not in out.prompt
    assert out.memory_ids == ["m-000002", "m-000010"]
    # P3 is one section, a line per item, each dated by its facts
    assert "<!-- knowledge -->\n- [2026-10-12] Set a price alert on TIA at 5.99\n" in out.prompt
    assert out.tokens == sum(e.tokens for e in out.manifest if e.included) <= out.budget
    # history is printed oldest first
    assert out.prompt.index("user: hi") < out.prompt.index("assistant: done")


def test_not_main_session_leaves_memory_md_out(home: Path) -> None:
    out = compile_context(home, "hello", main_session=False, today=TODAY)
    memory = next(e for e in out.manifest if e.label == "memory")
    assert not memory.included and "main session" in memory.reason
    assert "Core Memory" not in out.prompt


def test_a_budget_below_identity_is_a_clear_error(home: Path) -> None:
    need = sum(section_tokens(f"identity:{p.name}", p.read_text())
               for p in sorted((home / "knowledge" / "identity").glob("*.md")))
    with pytest.raises(ContextError, match=f"raise the budget to at least {need}"):
        compile_context(home, "hi", budget_tokens=need - 1, today=TODAY)
    out = compile_context(home, "hi", budget_tokens=need, today=TODAY)
    assert out.tokens == need and [e.slot for e in out.manifest if e.included] == ["P0", "P0"]
    with pytest.raises(ContextError, match="positive"):
        compile_context(home, "hi", budget_tokens=0)


def test_an_empty_workspace_compiles_and_says_what_is_missing(tmp_path: Path) -> None:
    out = compile_context(tmp_path, "hi", session_history=[Turn("user", "hi")], today=TODAY)
    assert out.prompt == "<!-- history:0 -->\nuser: hi"
    assert {e.label for e in out.manifest if not e.included} >= {"identity", "memory", "projects"}


turns = st.lists(
    st.builds(Turn, role=st.sampled_from(["user", "assistant", "tool"]), content=st.text(min_size=0, max_size=400),
              tool=st.sampled_from(["", "bash"])),
    max_size=30,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(message=st.text(max_size=600), history=turns, budget=st.integers(min_value=1, max_value=6000))
def test_never_over_budget_and_tokens_add_up(home: Path, message: str, history: list[Turn], budget: int) -> None:
    topics, _ = load_topics(home)
    try:
        out = compile_context(home, message, topics=topics, session_history=history, budget_tokens=budget,
                              search=_search, today=TODAY)
    except ContextError:
        p0 = sum(section_tokens(f"identity:{p.name}", p.read_text())
                 for p in (home / "knowledge" / "identity").glob("*.md"))
        assert budget < p0
        return
    included = [e for e in out.manifest if e.included]
    assert out.tokens == sum(e.tokens for e in included) <= budget
    assert estimate_tokens(out.prompt) <= out.tokens  # per-section rounding only ever over-counts
    assert [e.slot for e in included[:2]] == ["P0", "P0"]  # identity always there when it fits


def test_read_history_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n{"role": "robot", "content": "x"}\n')
    with pytest.raises(ContextError, match=r"h.jsonl:2: field 'role'"):
        read_history(path)
    path.write_text('{"role": "user", "content": "hi"}\nnot json\n')
    with pytest.raises(ContextError, match=r"h.jsonl:2: invalid JSON"):
        read_history(path)
    path.write_text('{"role": "tool", "tool": "bash", "content": "ok"}\n')
    assert read_history(path) == [Turn("tool", "ok", "bash", "")]


def test_a_topic_that_does_not_fit_brings_no_subscription(home: Path) -> None:
    topics, _ = load_topics(home)
    full = compile_context(home, "market order on JTO/USDT", topics=topics, today=TODAY)
    topic_tokens = next(e.tokens for e in full.manifest if e.label == "topic:trading-risk")
    before_topic = sum(e.tokens for e in full.manifest if e.included and e.slot in ("P0", "P1"))
    out = compile_context(home, "market order on JTO/USDT", topics=topics, today=TODAY,
                          budget_tokens=before_topic + topic_tokens - 1)
    reasons = {e.label: e.reason for e in out.manifest if not e.included}
    assert reasons["topic:trading-risk"].startswith(("over budget", "over its slot"))
    assert reasons["sub:knowledge/procedures/trading-checklist.md"] == "its topic's instructions did not fit"


@pytest.mark.parametrize("item_words", [6, 60])
def test_p3_asks_search_for_what_the_budget_takes_not_twenty_then_forty(home: Path, item_words: int) -> None:
    """Each search call is a scan: a large budget of short items is asked for once; items larger than the first
    guess bring one more call, sized by what the first ones measured; the budget is filled either way."""
    asked: list[int] = []

    def many(query: str, k: int) -> list[Knowledge]:
        asked.append(k)
        return [Knowledge(" ".join(f"w{i}x{j}" for j in range(item_words)), 0.9, memory_id=f"m-{i:05d}")
                for i in range(min(k, 5000))]  # fmt: skip

    topics, _ = load_topics(home)
    out = compile_context(home, "anything", topics=topics, session_history=[], budget_tokens=8192, search=many,
                          today=TODAY)  # fmt: skip
    assert out.budget - out.tokens < 100  # P3 stops when fewer than P3_FLOOR tokens are left
    assert len(asked) <= 2 and asked[0] > 20
    assert sum(1 for e in out.manifest if e.slot == "P3" and e.included) <= asked[-1]


@pytest.mark.parametrize("stored_for", ["the message", "the keywords"])
def test_whether_knowledge_is_stored_is_the_messages_question_not_its_topics_keywords(home: Path,
                                                                                      stored_for: str) -> None:
    """A topic that wakes adds its keywords to P3's query; they can pull a relevant message under search's
    floor (an empty P3 where the message alone finds the answer) or lift one that finds nothing over it."""
    message = "market order on JTO/USDT: what stop-loss?"
    asked: list[str] = []

    def search(query: str, k: int) -> list[Knowledge]:
        asked.append(query)
        hit = (query == message) == (stored_for == "the message")
        return [Knowledge("Market order on JTO/USDT slipped 6.1 %", 0.7, memory_id="m-000010")] if hit else []

    topics, _ = load_topics(home)
    out = compile_context(home, message, topics=topics, search=search, today=TODAY)
    assert any("topic:trading-risk" == e.label and e.included for e in out.manifest)
    assert any(q != message for q in asked) or stored_for == "the keywords"  # the keywords were in a query
    assert out.memory_ids == (["m-000010"] if stored_for == "the message" else [])


CSS = "body { margin: 0; } " * 60
SESSION = (
    "## 10:02 — user\n\nWhy is the settings page blank on mobile?\n\n"
    "## 10:03 — agent\n\nThe flex container had no min-width; decided to set min-width: 0 on the sidebar.\n"
    f"> [tool:read_file] src/styles/app.css → {CSS}\n"
    "> [tool:bash] npm test → 42 passed\n"
    "> [tool:bash] npm run build → error: Module not found: Can't resolve './theme-dark.css' in src/styles"
    + " (webpack)" * 20
)


def test_a_sessions_tool_dumps_stay_out_of_the_knowledge_slot_unless_the_message_asks(home: Path) -> None:
    def search(query: str, k: int) -> list[Knowledge]:
        return [Knowledge(SESSION, 0.8, kind="transcript", path="raw/conversations/2026/11/02/1002-s1-settings.md")]

    out = compile_context(home, "what did we decide about the settings page?", search=search, today=TODAY)
    assert "min-width: 0 on the sidebar" in out.prompt and "42 passed" in out.prompt  # prose, a short result
    assert "margin: 0" not in out.prompt and f"[output left out: {len(CSS):,} characters]" in out.prompt
    assert "Module not found" not in out.prompt
    asked = compile_context(home, "why did the build fail: module theme-dark.css not found?", search=search,
                            today=TODAY)  # fmt: skip
    assert "Can't resolve './theme-dark.css'" in asked.prompt  # the result the message is about
    assert "margin: 0" not in asked.prompt
    memory = Knowledge(f"> [tool:read_file] src/styles/app.css → {CSS}", 0.8, memory_id="m-1")  # not a session
    kept = compile_context(home, "the settings page", search=lambda q, k: [memory], today=TODAY)
    assert "margin: 0" in kept.prompt
