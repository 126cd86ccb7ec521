"""Recall reads the search index and lets search referee: each layer is shortlisted by the index's stored vectors
(only the shortlist is embedded), files are scored on search's own relevance, and search's first hit answers when
it is more relevant than the layer's answer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memory_pipeline.embedding.hashing import hashing_embed
from memory_pipeline.embedding.spec import HASHING
from memory_pipeline.rollups.recall import SHORTLIST, Hit, RecallResult, recall, referee
from memory_pipeline.search import build_index, file_scores, search
from memory_pipeline.search.engine import clear_cache
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline_tests.rollups.helpers import insert_sessions, session

EMBED = (hashing_embed, HASHING)
QUESTION = "what did we decide about the status page certificate?"
DECISION = "We will move the status page certificate to automatic renewal, because manual renewals were missed twice."
MENTION = "The status page certificate is renewed by hand every {n} days. I checked the details below."
# a session is long and about much else (as a real one is): its transcript's chunks say the mention in passing
OTHER = ("The build runners keep stale Docker layers. We pruned the cache and rotated the on-call rota. "
         "The ingest worker leaked memory until the LRU cache got a bound. Mei reviewed the firewall rules. "
         "The backup job ran late because the replica lagged. We moved the retro to Thursday afternoon.")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """Sessions that mention the certificate (their transcripts on disk, as an import leaves them), a decision
    memory, and the search index over both (hashing embedder: no model)."""
    ws = tmp_path / "ws"
    sessions = [session(i, f"{OTHER} What do we need to do? {MENTION.format(n=10 + i)} {OTHER}", title=f"ops {i}")
                for i in range(1, 13)]  # fmt: skip
    sessions += [session(i, f"We planned the garden on day {i}. The basil sprouted.") for i in range(13, 25)]
    store = insert_sessions(ws, sessions)
    with store.connect() as con:
        for sid, path, title, text in con.execute("SELECT session_id, path, title, text FROM sessions").fetchall():
            (ws / path).parent.mkdir(parents=True, exist_ok=True)
            (ws / path).write_text(f"---\nsession_id: {sid}\n---\n\n# {title}\n\n{text}\n", encoding="utf-8")
    src = tmp_path / "m.jsonl"
    src.write_text(json.dumps({"id": "m-decision", "content": DECISION, "kind": "decision",
                               "created_at": "2026-01-20T10:00:00Z"}) + "\n")  # fmt: skip
    import_jsonl(store, src)
    build_index(ws, *EMBED)
    clear_cache()
    return ws


def test_a_files_score_is_the_relevance_search_gives_it(home: Path) -> None:
    hits = search(QUESTION, 30, home=home, embedder=EMBED, floor=0.0)
    transcripts = {h.id: h.parts["relevance"] for h in hits if h.kind == "transcript"}
    assert transcripts  # the sessions' transcripts are among the hits
    scores = file_scores(home, QUESTION, list(transcripts), EMBED)
    assert set(scores) == set(transcripts)
    for path, relevance in transcripts.items():  # one chunk each: the file's best is that chunk
        assert scores[path].relevance == pytest.approx(relevance, abs=1e-4)
    assert file_scores(home, QUESTION, ["raw/conversations/not-there.md"], EMBED) == {}


def test_only_the_shortlist_is_embedded_and_the_answer_stays(home: Path) -> None:
    from memory_pipeline.rollups.recall import _layer_docs
    from memory_pipeline.store import MemoryStore

    store = MemoryStore(home / "memory.duckdb")
    embedded: list[str] = []

    def counting(texts: list[str]) -> np.ndarray:
        embedded.extend(texts)
        return hashing_embed(texts)

    def stored(paths: list[str]) -> dict[str, tuple[float, float]]:
        return {p: (s.cosine, s.relevance) for p, s in file_scores(home, QUESTION, paths, EMBED).items()}

    everything = recall(store, home, QUESTION, hashing_embed)
    shortlisted = recall(store, home, QUESTION, counting, stored=stored)
    sessions = _layer_docs(store, home)["session"]
    assert len(sessions) > SHORTLIST
    most = max(len(ts) for _, _, ts in sessions)  # the query, then at most SHORTLIST sessions' passages
    assert len(embedded) <= 1 + SHORTLIST * most < 1 + sum(len(ts) for _, _, ts in sessions)
    assert shortlisted.best is not None and everything.best is not None
    assert shortlisted.best.key == everything.best.key and shortlisted.best.score == everything.best.score
    assert shortlisted.best.relevance is not None  # the index's relevance travels with the hit


def _tier(relevance: float | None, path: str = "/ws/raw/s1.md") -> RecallResult:
    hit = Hit("session", "s1", 0.8, path, "The certificate is renewed by hand.", relevance)
    return RecallResult(QUESTION, 0.45, "session", [hit], True, [("sphere", None), ("core", None), ("session", 0.8)])


def test_search_answers_when_its_first_hit_is_more_relevant_than_the_layers_answer() -> None:
    found = [Hit("decision", "m-decision", 0.45, "", DECISION, 0.45), Hit("fact", "m2", 0.2, "", "Other.", 0.2)]
    out = referee(_tier(0.3), found)
    assert out.layer == "search" and out.cleared and out.best is not None and out.best.key == "m-decision"
    assert [h.key for h in out.hits] == ["m-decision", "s1", "m2"]  # the session ranked in by its relevance
    assert out.tier is not None and out.tier.key == "s1" and out.searched[-1] == ("search", 0.45)
    assert referee(_tier(None), found).layer == "search"  # a file the index does not hold counts 0


def test_the_layer_keeps_its_answer_when_it_is_as_relevant_or_is_searchs_first_hit() -> None:
    found = [Hit("session", "s1", 0.45, "/ws/raw/s1.md", "a chunk of it", 0.45)]
    assert referee(_tier(0.45), found).layer == "session"
    assert referee(_tier(0.1), found).layer == "session"  # search's first hit is the same session's file
    assert referee(_tier(0.1), []).layer == "session"  # search found nothing: the tiers alone


def test_recall_from_the_cli_answers_with_the_decision(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    from memory_pipeline.cli import main

    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.delenv("MEMORY_PIPELINE_EMBEDDER", raising=False)  # MiniLM, as a user has it: the index is rebuilt
    assert main(["recall", QUESTION]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("answer from"))
    assert lines[at].startswith("answer from search"), lines
    assert lines[at + 1].split()[0] == "decision", "\n".join(lines)  # the layer, then score and key
    assert lines[at + 1].split()[2] == "m-decision"
    assert DECISION in lines[at + 2]


def test_an_empty_question_is_one_line(home: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    from memory_pipeline.cli import main

    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", HASHING)
    assert main(["recall", "   "]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
