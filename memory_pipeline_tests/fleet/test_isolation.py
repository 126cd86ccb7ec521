"""No `search` or `context` call for agent A ever returns agent B's data — through the read path's
process-wide caches (indexes, store views, fresh-write vectors), fresh writes after the index build, and an
agent id reused after `agents remove`."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.context.search_adapter import default_search
from memory_pipeline.context.service import compile_for_agent
from memory_pipeline.embedding.hashing import hashing_embed
from memory_pipeline.fleet import registry
from memory_pipeline.search import build_index
from memory_pipeline.search.engine import clear_cache, search
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl

# Both agents write about the same topics with the same words; only a marker per agent tells them apart, so a
# leak would rank the other agent's memories as high as the agent's own.
TOPICS = ["ferry booking naxos deck seats", "deploy rollback canary latency", "trading risk stop loss",
          "dentist appointment tuesday", "kubernetes helm chart values", "grandmother birthday cake recipe"]
MARKERS = {"ada": "adamarker", "bob": "bobmarker", "cy": "cymarker", "cy2": "cysecondmarker"}
EMBEDDER = (lambda texts: hashing_embed(list(texts)), "hashing-256")


def _encode(texts: Sequence[str]) -> np.ndarray:
    return hashing_embed(list(texts))


def _memories(agent: str, n: int, first: int = 0) -> list[dict]:
    rng = random.Random(agent)
    marker = MARKERS[agent]
    return [{"id": f"{agent}-{i:04d}", "content": f"{rng.choice(TOPICS)} {marker} note {i}",
             "created_at": (datetime(2026, 10, 1, tzinfo=UTC) + timedelta(hours=i)).isoformat(),
             "importance": 1.0 + (i % 3) * 0.5} for i in range(first, first + n)]


def _write(store: MemoryStore, path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    import_jsonl(store, path)


def _agent(root: Path, agent: str, folder: str | None = None) -> Path:
    home = registry.add_agent(root, folder or agent, datetime.now(UTC))
    store = MemoryStore(home / "memory.duckdb")
    _write(store, home / "in.jsonl", _memories(agent, 60))
    projects = home / "knowledge" / "projects"
    projects.mkdir(parents=True)
    (projects / "_active.md").write_text(f"# Active Projects\n\n- deploy rollback canary {MARKERS[agent]}\n")
    build_index(home, _encode, EMBEDDER[1])
    _write(store, home / "fresh.jsonl", _memories(agent, 5, first=60))  # written after the build: the delta path
    return home


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("isolation")
    clear_cache()
    yield {agent: _agent(root, agent) for agent in ("ada", "bob")}
    clear_cache()


def _foreign(agent: str, text: str) -> list[str]:
    return [m for a, m in MARKERS.items() if a != agent and m in text]


words = st.sampled_from(" ".join(TOPICS).split() + list(MARKERS.values()) + ["note", "the", "what"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(st.tuples(st.sampled_from(["ada", "bob"]), st.lists(words, min_size=1, max_size=6),
                                st.sampled_from(["search", "context"]), st.integers(1, 30)),
                      min_size=1, max_size=6))
def test_no_read_for_one_agent_returns_another_agents_data(fleet: dict[str, Path], calls: list) -> None:
    for agent, query_words, how, k in calls:  # interleaved: the caches see both agents in one process
        home, query = fleet[agent], " ".join(query_words)
        if how == "search":
            hits = search(query, k, home=home, embedder=EMBEDDER, floor=0.0)  # floor 0: every candidate shows
            for hit in hits:
                assert hit.source != "store" or hit.id.startswith(f"{agent}-"), (agent, query, hit.id)
                assert not _foreign(agent, hit.snippet), (agent, query, hit.snippet)
        else:
            compiled, _ = compile_for_agent(home, query, budget_tokens=k * 100 + 600,
                                            search=default_search(home, embedder=EMBEDDER, floor=0.0))
            assert not _foreign(agent, compiled.prompt), (agent, query)
            assert all(m.startswith(f"{agent}-") for m in compiled.memory_ids), (agent, compiled.memory_ids)


def test_an_agent_id_reused_after_remove_never_reads_the_old_tenant(tmp_path: Path) -> None:
    """`agents remove cy` then a new `cy`: a long-lived process (the MCP server) that had cy's index cached must
    serve the new tenant's data only."""
    root = tmp_path / "fleet"
    first = _agent(root, "cy")
    hits = search("deploy rollback canary", 10, home=first, embedder=EMBEDDER, floor=0.0)
    assert hits and all(MARKERS["cy"] in h.snippet for h in hits)  # cached now
    registry.remove_agent(root, "cy", datetime.now(UTC))
    second = _agent(root, "cy2", folder="cy")  # the same id and path, another tenant's memories
    assert second == first
    for query in ("deploy rollback canary", "note", MARKERS["cy"]):
        for hit in search(query, 30, home=second, embedder=EMBEDDER, floor=0.0):
            assert MARKERS["cy"] + " " not in hit.snippet + " " and not hit.id.startswith("cy-"), hit
