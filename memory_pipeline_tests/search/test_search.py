from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_pipeline.search import SearchInputError, delete_index, search
from memory_pipeline.search.index import current_folder
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline_tests.search.conftest import minilm, write_jsonl

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def ids(hits) -> list[str]:
    return [h.id for h in hits]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("when should I be notified about the TIA token price?", "m-001"),
        ("what food can my cat not eat", "m-002"),
        ("can we ship to production at the end of the week", "m-003"),
        ("how many calls per minute does the partner API allow", "m-019"),
    ],
)
def test_reworded_fact_is_in_top_3(workspace: Path, query: str, expected: str) -> None:
    hits = search(query, k=10, home=workspace, embedder=minilm(), now=NOW)
    assert expected in ids(hits)[:3], [(h.id, h.score) for h in hits]


def test_archived_source_ranks_below_its_abstraction(workspace: Path) -> None:
    # the query is the archived source's own wording: it would win on text alone
    hits = search(
        "CI failed: no space left on device on the build runner", k=10, home=workspace, embedder=minilm(), now=NOW
    )
    order = ids(hits)
    assert "s-201" in order and "m-102" in order
    assert order.index("s-201") < order.index("m-102")
    source = hits[order.index("m-102")]
    assert source.tier == "archived" and source.archived_by == "c-201"  # the cluster, as the night writes it
    assert source.parts["importance"] < hits[order.index("s-201")].parts["importance"]


def test_with_sources_expands_lineage(workspace: Path) -> None:
    hits = search(
        "docker images fill CI runner disks", k=5, home=workspace, embedder=minilm(), with_sources=True, now=NOW
    )
    summary = next(h for h in hits if h.id == "s-201")
    assert sorted(s.id for s in summary.sources) == ["m-101", "m-102", "m-103"]
    assert all(s.tier == "archived" for s in summary.sources)


@pytest.mark.parametrize(
    "query",
    ["quantum chromodynamics lattice gauge simulations", "the migration patterns of arctic terns over greenland"],
)
def test_never_stored_topic_returns_nothing(workspace: Path, query: str) -> None:
    hits = search(query, k=10, home=workspace, embedder=minilm(), now=NOW)
    assert list(hits) == [] and hits.notice == "nothing relevant"


def test_fresh_write_is_found_before_any_index_update(workspace: Path, tmp_path: Path) -> None:
    version = current_folder(workspace)
    fresh = write_jsonl(
        tmp_path / "fresh.jsonl",
        [
            {
                "id": "m-900",
                "content": "The office wifi password changed to heron-42 this morning",
                "importance": 1.0,
                "created_at": "2026-10-31T08:00:00",
                "categories": ["office"],
            }
        ],
    )
    import_jsonl(MemoryStore(workspace / "memory.duckdb"), fresh)
    hits = search("what is the new wifi password at the office", k=3, home=workspace, embedder=minilm(), now=NOW)
    assert ids(hits)[0] == "m-900"
    assert current_folder(workspace) == version  # no index update happened
    assert search("wifi", k=3, home=workspace, embedder=minilm(), category="office", now=NOW)


def test_archiving_after_the_build_changes_rank_at_once(workspace: Path) -> None:
    with MemoryStore(workspace / "memory.duckdb").transaction() as con:
        con.execute("UPDATE memories SET lifecycle = 'superseded' WHERE id = 'm-001'")
    hits = search("price alert on TIA", k=5, home=workspace, embedder=minilm(), now=NOW)
    assert "m-001" not in ids(hits)


def test_journal_file_is_searchable_and_filters(workspace: Path) -> None:
    hits = search("ferry to Naxos", k=5, home=workspace, embedder=minilm(), now=NOW)
    assert hits and hits[0].id == "knowledge/journal/2026-10-20.md" and hits[0].kind == "journal"
    only_memories = search("ferry to Naxos", k=5, home=workspace, embedder=minilm(), kind="memory", now=NOW)
    assert all(h.source == "store" for h in only_memories)
    dated = search("ferry to Naxos", k=5, home=workspace, embedder=minilm(), since="2026-10-21", now=NOW)
    assert "knowledge/journal/2026-10-20.md" not in ids(dated)


def test_index_deleted_is_built_by_the_search_that_finds_it_missing(workspace: Path) -> None:
    delete_index(workspace)
    hits = search("price alert TIA", k=5, home=workspace, embedder=minilm(), now=NOW)
    assert hits.mode == "index" and hits.notice.startswith("search index missing: index built now (")
    assert current_folder(workspace) is not None and ids(hits)[0] == "m-001"
    again = search("price alert TIA", k=5, home=workspace, embedder=minilm(), now=NOW)
    assert again.notice == "" and ids(again) == ids(hits)  # said once


def test_an_index_that_cannot_be_built_gets_a_keyword_scan_that_weighs_rare_terms(
    workspace: Path, tmp_path: Path
) -> None:
    rows = [
        {"id": f"m-8{i:02d}", "content": f"Set a price alert on {t} at {p}: top of the weekly range.",
         "importance": 2.0, "created_at": "2026-10-30T08:00:00", "categories": ["trading"]}
        for i, (t, p) in enumerate([("ARB", "0.71"), ("ATOM", "7.33"), ("LINK", "17.15"), ("SOL", "150")])
    ]  # fmt: skip
    import_jsonl(MemoryStore(workspace / "memory.duckdb"), write_jsonl(tmp_path / "alerts.jsonl", rows))
    delete_index(workspace)
    (workspace / "index").write_text("not a folder")  # the index cannot be written here
    hits = search("where did I set the TIA alert", k=5, home=workspace, embedder=minilm(), now=NOW)
    assert hits.mode == "fallback" and "search index missing and could not be built (" in hits.notice
    assert ids(hits)[0] == "m-001", [(h.id, h.score) for h in hits]  # "TIA" is rarer than "price alert"


def test_a_large_fresh_write_updates_the_index_once(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_pipeline.search.engine import DELTA_EMBED_LIMIT
    from memory_pipeline.search.live import UPDATE_SECONDS_ENV

    monkeypatch.setenv(UPDATE_SECONDS_ENV, "600")  # time to embed them all in this call (a loaded machine too)

    before = current_folder(workspace)
    rows = [
        {"id": f"m-9{i:03d}", "content": f"Meeting note {i}: the ferry schedule changed for route {i}.",
         "importance": 1.0, "created_at": "2026-10-30T08:00:00", "categories": ["travel"]}
        for i in range(DELTA_EMBED_LIMIT + 1)
    ]  # fmt: skip
    import_jsonl(MemoryStore(workspace / "memory.duckdb"), write_jsonl(tmp_path / "notes.jsonl", rows))
    hits = search("ferry schedule route 7", k=5, home=workspace, embedder=minilm(), now=NOW)
    assert "documents written since the last index update: index updated now" in hits.notice
    assert current_folder(workspace) != before and "m-9007" in ids(hits)
    assert search("ferry schedule route 7", k=5, home=workspace, embedder=minilm(), now=NOW).notice == ""


def test_fusions_both_work(workspace: Path) -> None:
    for fusion in ("rrf", "linear"):
        hits = search("cat allergic chicken", k=3, home=workspace, embedder=minilm(), fusion=fusion, now=NOW)
        assert ids(hits)[0] == "m-002"


@pytest.mark.parametrize(
    ("query", "k", "kwargs", "message"),
    [
        ("", 10, {}, "empty query"),
        ("   ", 10, {}, "empty query"),
        ("alert", 0, {}, "k must be between 1 and 1000"),
        ("alert", -3, {}, "k must be between 1 and 1000"),
        ("alert", 1001, {}, "k must be between 1 and 1000"),
        ("alert", 10, {"category": "no-such-category"}, "unknown category 'no-such-category'"),
        ("alert", 10, {"kind": "gizmo"}, "unknown kind 'gizmo'"),
        ("alert", 10, {"since": "last tuesday"}, "since: not an ISO date"),
        ("x" * 1_048_576, 10, {}, "query too long"),
    ],
)
def test_bad_input_is_one_clear_error(workspace: Path, query: str, k: int, kwargs: dict, message: str) -> None:
    with pytest.raises(SearchInputError) as err:
        search(query, k=k, home=workspace, embedder=minilm(), **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_important_but_loosely_related_memories_do_not_outrank_the_answer(workspace: Path, tmp_path: Path) -> None:
    """The sample workspace's case: many price alerts on other tickers with higher importance."""
    rows = [
        {
            "id": f"m-8{i:02d}",
            "content": f"Set a price alert on {t} at {p}: top of the weekly range.",
            "importance": 2.0,
            "created_at": "2026-10-30T08:00:00",
            "categories": ["trading"],
        }
        for i, (t, p) in enumerate([("ARB", "0.71"), ("ATOM", "7.33"), ("LINK", "17.15"), ("SOL", "150")])
    ]
    import_jsonl(MemoryStore(workspace / "memory.duckdb"), write_jsonl(tmp_path / "alerts.jsonl", rows))
    hits = search("price alert on TIA", k=5, home=workspace, embedder=minilm(), now=NOW)
    assert ids(hits)[0] == "m-001", [(h.id, h.score) for h in hits]


def _sailing(tmp_path: Path) -> Path:
    return write_jsonl(
        tmp_path / "seg.jsonl",
        [{"id": "m-960", "content": "The sailing club meets every second Saturday at the north pier",
          "importance": 1.0, "created_at": "2026-10-31T08:00:00", "categories": ["hobby"]}],
    )  # fmt: skip


def test_incremental_update_writes_a_segment_and_keeps_ranking(workspace: Path, tmp_path: Path) -> None:
    from memory_pipeline.search import build_index
    from memory_pipeline.search.engine import clear_cache
    from memory_pipeline.search.index import load_index
    from memory_pipeline.store.changes import note_changed

    encode, model = minilm()
    base = load_index(workspace)
    import_jsonl(MemoryStore(workspace / "memory.duckdb"), _sailing(tmp_path))
    with MemoryStore(workspace / "memory.duckdb").transaction() as con:  # a write path: it logs its change
        con.execute("UPDATE memories SET lifecycle = 'superseded' WHERE id = 'm-003'")
        note_changed(con, ["m-003"])
    stats = build_index(workspace, encode, model)
    assert (stats.added, stats.removed, stats.embedded, stats.segments) == (1, 1, 1, 2)
    idx = load_index(workspace)
    assert idx.folder != base.folder and [s.rows for s in idx.segments] == [base.segments[0].rows, 1]
    assert [d.key for d in idx.live_docs() if d.key in ("m-960", "m-003")] == ["m-960"] and idx.dead == [1, 0]
    old, new = base.segments[0].folder / "arrays.bin", idx.segments[0].folder / "arrays.bin"
    assert old == new and old.stat().st_ino == new.stat().st_ino  # the base segment is shared, not rewritten
    clear_cache()
    assert ids(search("when does the sailing club meet", k=3, home=workspace, embedder=minilm(), now=NOW))[0] == "m-960"
    assert "m-003" not in ids(
        search("production deploys frozen on Fridays", k=5, home=workspace, embedder=minilm(), now=NOW)
    )
    assert ids(search("price alert on TIA", k=3, home=workspace, embedder=minilm(), now=NOW))[0] == "m-001"


def test_a_change_the_log_missed_is_caught_by_the_count_and_rebuilt_without_embedding(workspace: Path) -> None:
    from memory_pipeline.search import build_index
    from memory_pipeline.search.index import load_index

    with MemoryStore(workspace / "memory.duckdb").transaction() as con:  # raw SQL: no change-log entry
        con.execute("UPDATE memories SET lifecycle = 'superseded' WHERE id = 'm-003'")
    hits = search("production deploys frozen on Fridays", k=5, home=workspace, embedder=minilm(), now=NOW)
    assert "m-003" not in ids(hits)  # the query path's count check fell back to the full comparison
    stats = build_index(workspace, *minilm())
    assert stats.embedded == 0 and stats.segments == 1  # a full build, reusing every vector
    assert "m-003" not in {d.key for d in load_index(workspace).live_docs()}


def test_unseen_words_count_in_the_floors_ceiling_and_leave_the_order_alone(workspace: Path) -> None:
    from memory_pipeline.search.scoring import load_ranking

    shipped = load_ranking().with_(floor=0.0, unseen_words=False)
    unseen = load_ranking().with_(floor=0.0, unseen_words=True)
    # "zyxwvut" is held by no document: it weighs in the ceiling, so every hit's relevance falls, order unchanged
    query = "zyxwvut price alert TIA"
    a = search(query, k=10, home=workspace, embedder=minilm(), now=NOW, ranking=shipped)
    b = search(query, k=10, home=workspace, embedder=minilm(), now=NOW, ranking=unseen)
    assert ids(a) == ids(b) and ids(a)
    for x, y in zip(a, b, strict=True):  # only the BM25 share of relevance is scaled down
        assert x.parts["bm25"] == y.parts["bm25"]
        if x.parts["bm25"] > 0:
            assert y.parts["relevance"] < x.parts["relevance"]
        else:
            assert y.parts["relevance"] == x.parts["relevance"]
    assert a[0].parts["bm25"] > 0
    # every word known: nothing changes
    known = "price alert TIA"
    c = search(known, k=10, home=workspace, embedder=minilm(), now=NOW, ranking=shipped)
    d = search(known, k=10, home=workspace, embedder=minilm(), now=NOW, ranking=unseen)
    assert [h.parts["relevance"] for h in c] == [h.parts["relevance"] for h in d]


def test_the_background_gate_reads_relevance_less_a_memorys_likeness_to_everyday_questions(workspace: Path) -> None:
    import numpy as np

    from memory_pipeline.search.live import BACKGROUND_FILE
    from memory_pipeline.search.scoring import load_ranking

    plain = load_ranking().with_(floor=0.0, background_gate=0.0)
    gated = load_ranking().with_(floor=0.0, background_gate=1e-6)
    query = "what food can my cat not eat"
    a = search(query, k=10, home=workspace, embedder=minilm(), now=NOW, ranking=plain)
    b = search(query, k=10, home=workspace, embedder=minilm(), now=NOW, ranking=gated)
    assert ids(a) == ids(b) and ids(a)  # order and relevance as without the gate
    assert [h.parts["relevance"] for h in a] == [h.parts["relevance"] for h in b]
    assert "specific" not in a[0].parts
    encode, _ = minilm()
    questions = [q for q in BACKGROUND_FILE.read_text().splitlines() if q.strip() and not q.startswith("#")]
    background = encode(questions)
    background /= np.linalg.norm(background, axis=1, keepdims=True)
    for x in b:
        v = encode([x.text])[0]
        hub = float((background @ (v / np.linalg.norm(v))).max())
        cos = x.parts["vector"]  # the query has no capitalised word: one query vector ranks and decides relevance
        # only the vector part moves: 0.6·max(cos, 0) becomes 0.6·max(cos − hub, 0) (4-decimal parts, float32)
        expected = x.parts["relevance"] - 0.6 * (max(cos, 0.0) - max(cos - hub, 0.0))
        assert x.parts["specific"] == pytest.approx(expected, abs=2e-3), x.id
    # the gate abstains for the whole query when no hit over the floor reaches it, and changes nothing else
    best = max(h.parts["specific"] for h in b)
    assert not search(query, k=10, home=workspace, embedder=minilm(), now=NOW,
                      ranking=gated.with_(background_gate=best + 0.01))  # fmt: skip
    at_best = gated.with_(background_gate=best - 1e-4)  # the parts are rounded to 4 decimals
    kept = search(query, k=10, home=workspace, embedder=minilm(), now=NOW, ranking=at_best)
    assert ids(kept) == ids(a)


def test_a_transcript_is_dated_by_its_session_not_by_when_it_was_imported(workspace: Path) -> None:
    folder = workspace / "raw" / "conversations" / "2026" / "09" / "14"
    folder.mkdir(parents=True)
    (folder / "1950-ses_1.md").write_text(
        "---\nsession_id: ses_1\nstarted: 2026-09-14T19:50:00Z\n---\n\n## 19:52 — user\nThe kayak rental in Milos "
        "closes at six.\n", encoding="utf-8")  # fmt: skip
    (folder / "2010-ses_2.md").write_text("## 20:10 — user\nThe kayak deposit is forty euros.\n", encoding="utf-8")
    hits = {h.id: h for h in search("kayak rental Milos deposit", k=10, home=workspace, embedder=minilm(), now=NOW)}
    started = hits["raw/conversations/2026/09/14/1950-ses_1.md"]
    assert started.kind == "transcript" and started.date == "2026-09-14"
    assert hits["raw/conversations/2026/09/14/2010-ses_2.md"].date == "2026-09-14"  # no front matter: its folders
    before = search("kayak rental Milos", k=10, home=workspace, embedder=minilm(), until="2026-09-15", now=NOW)
    assert started.id in ids(before)
