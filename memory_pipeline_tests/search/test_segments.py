"""The segmented index. Updates proportional to what changed, the tiered merge policy, merged == rebuilt,
an interrupted update leaves the previous version readable, the int8 scan, the two tokenisers agree."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from memory_pipeline.search import build_index, search
from memory_pipeline.search import segment as segment_mod
from memory_pipeline.search.engine import clear_cache
from memory_pipeline.search.index import CRASH_POINT, current_folder, load_index
from memory_pipeline.search.segment import plan_merges
from memory_pipeline.search.tokens import STOPWORDS, bulk_terms, stem, stem_words, tokenize
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.changes import note_changed

DIM = 32
MODEL = "test-hash-32"
NOW = datetime(2026, 3, 1)
WORDS = ("ferry naxos cabin deck harbour ticket route sailing club pier north south meeting schedule budget "
         "invoice alert price weekly range deploy friday freeze review lesson decision cat allergy chicken "
         "garden tomato winter coat train station platform delay").split()  # fmt: skip


def encode(texts: list[str]) -> np.ndarray:
    """Deterministic per text (never per batch), so a vector does not depend on what was embedded with it."""
    out = np.empty((len(texts), DIM), np.float32)
    for i, t in enumerate(texts):
        seed = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
        out[i] = np.random.default_rng(seed).standard_normal(DIM)
    return out


def texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, int(rng.integers(4, 12)))) + f" note{seed}x{i}" for i in range(n)]


def add_rows(home: Path, start: int, contents: list[str]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    store = MemoryStore(home / "memory.duckdb")
    store.migrate()
    frame = pd.DataFrame(  # noqa: F841 - read by DuckDB
        {"id": [f"m-{start + i:05d}" for i in range(len(contents))], "content": contents,
         "created_at": [datetime(2026, 1, 1) + timedelta(hours=start + i) for i in range(len(contents))]}
    )  # fmt: skip
    with store.transaction() as con:
        con.execute(
            "INSERT INTO memories (id, content, importance, categories, tags, nexus_keys, kind, created_at, "
            "token_count, pinned, locked, lifecycle) SELECT id, content, 1.0, ['t'], [], [], 'observation', "
            "created_at, 10, false, false, 'active' FROM frame"
        )


def set_lifecycle(home: Path, ids: list[str], lifecycle: str) -> None:
    with MemoryStore(home / "memory.duckdb").transaction() as con:
        con.execute("UPDATE memories SET lifecycle = ? WHERE list_contains(?, id)", [lifecycle, ids])
        note_changed(con, ids)


def results(home: Path, query: str) -> list[tuple[str, float, float, float]]:
    clear_cache()
    hits = search(query, 10, home=home, embedder=(encode, MODEL), floor=0.0, now=NOW)
    return [(h.chunk, h.score, h.parts["bm25"], h.parts["vector"]) for h in hits]


QUERIES = ["ferry cabin deck", "price alert weekly", "deploy friday review", "garden tomato", "train delay"]


def assert_same_results(a: Path, b: Path) -> None:
    for q in QUERIES:
        ra, rb = results(a, q), results(b, q)
        assert [r[0] for r in ra] == [r[0] for r in rb], q
        np.testing.assert_allclose([r[1:] for r in ra], [r[1:] for r in rb], rtol=1e-4, atol=1e-5)


def nights(home: Path, journal: Path, count: int, factor: int) -> list[int]:
    """`count` nights of appends, archivals, a superseded memory and an edited journal; segment counts."""
    segments = []
    for night in range(count):
        add_rows(home, 1000 + 40 * night, texts(40, seed=100 + night))
        set_lifecycle(home, [f"m-{7 * night + 3:05d}"], "archived")
        set_lifecycle(home, [f"m-{7 * night + 5:05d}"], "superseded")
        journal.write_text(f"# Night {night}\n\nThe ferry to Naxos left late, night {night}.\n", encoding="utf-8")
        os.utime(journal, (1_700_000_000 + night, 1_700_000_000 + night))
        stats = build_index(home, encode, MODEL, merge_factor=factor)
        assert stats.embedded <= 41  # the new rows and the journal chunk: never the store
        segments.append(stats.segments)
    return segments


def test_merged_segments_give_the_results_of_a_full_rebuild(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(300, seed=1))
    journal = home / "knowledge" / "journal" / "2026-01-05.md"
    journal.parent.mkdir(parents=True)
    journal.write_text("# Day\n\nBooked the ferry to Naxos.\n", encoding="utf-8")
    build_index(home, encode, MODEL, full=True)
    segments = nights(home, journal, 7, factor=3)
    assert max(segments) <= 3 and segments != sorted(segments)  # merges happened: the count went down
    rebuilt = tmp_path / "rebuilt"
    shutil.copytree(home, rebuilt)
    stats = build_index(rebuilt, encode, MODEL, full=True)
    assert stats.segments == 1
    incremental = load_index(home)
    assert incremental.n_live == load_index(rebuilt).n_live == 300 + 7 * 40 - 7 + 1  # 7 superseded, 1 journal chunk
    assert sorted(d.key for d in incremental.live_docs()) == sorted(d.key for d in load_index(rebuilt).live_docs())
    assert_same_results(home, rebuilt)


def test_an_update_reads_only_what_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(200, seed=2))
    build_index(home, encode, MODEL, full=True)
    add_rows(home, 500, texts(5, seed=3))
    set_lifecycle(home, ["m-00007"], "superseded")
    seen: list[int] = []
    real = segment_mod.write_segment

    def spy(folder: Path, table, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        seen.append(table.num_rows)
        real(folder, table, *args, **kwargs)

    monkeypatch.setattr("memory_pipeline.search.build.write_segment", spy)
    stats = build_index(home, encode, MODEL)
    assert seen == [5] and (stats.added, stats.removed, stats.embedded) == (5, 1, 5)
    idx = load_index(home)
    assert [s.rows for s in idx.segments] == [200, 5] and idx.dead == [1, 0]


def test_an_update_that_fails_midway_leaves_the_previous_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(200, seed=4))
    build_index(home, encode, MODEL, full=True)
    add_rows(home, 500, texts(5, seed=5))
    before, answers = current_folder(home), results(home, "ferry cabin deck")  # the new rows from the live delta

    def half(folder: Path, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        folder.mkdir(parents=True)
        (folder / "docs.parquet").write_bytes(b"PAR1 half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("memory_pipeline.search.build.write_segment", half)
    with pytest.raises(OSError):
        build_index(home, encode, MODEL)
    assert current_folder(home) == before and results(home, "ferry cabin deck") == answers
    assert not [p for p in (home / "index").iterdir() if p.name.startswith(".tmp-")]
    monkeypatch.undo()
    assert build_index(home, encode, MODEL).added == 5


def test_an_update_killed_before_its_commit_leaves_the_previous_index(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(120, seed=6))
    build_index(home, encode, MODEL, full=True)
    add_rows(home, 500, texts(5, seed=7))
    before, answers = current_folder(home), results(home, "garden tomato")
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[2]);"
        "from test_segments import encode, MODEL; from memory_pipeline.search import build_index;"
        "build_index(Path(sys.argv[1]), encode, MODEL)"
    )
    env = {**os.environ, "MEMORY_PIPELINE_CRASH_AT": CRASH_POINT}
    proc = subprocess.run([sys.executable, "-c", code, str(home), str(Path(__file__).parent)], env=env, timeout=300)
    assert proc.returncode == -9  # SIGKILLed with the new version written and not committed
    assert current_folder(home) == before and results(home, "garden tomato") == answers
    assert build_index(home, encode, MODEL).added == 5 and current_folder(home) != before


def test_plan_merges_is_tiered() -> None:
    small = [(f"s{i}", 100, 0) for i in range(9)]
    assert plan_merges(small, factor=10) == []
    assert plan_merges([*small, ("s9", 120, 0)], factor=10) == [[f"s{i}" for i in range(10)]]
    mixed = [("big", 500_000, 0), *[(f"m{i}", 30_000, 0) for i in range(3)], *small]
    assert plan_merges(mixed, factor=10) == []  # no tier is full
    assert plan_merges([("big", 500_000, 400_000)], factor=10) == [["big"]]  # mostly deleted: rewritten


def test_the_int8_scan_finds_the_exact_neighbours(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(segment_mod, "QUANT_ROWS", 100)
    home = tmp_path / "ws"
    add_rows(home, 0, texts(400, seed=8))
    build_index(home, encode, MODEL, full=True)
    seg = load_index(home).segments[0]
    assert seg.codes is not None
    vectors = np.asarray(seg.vectors)
    for q in encode(QUERIES):
        q = q / np.linalg.norm(q)
        rows, cos = seg.cosine_top(q, 10, None, 0)
        exact = np.argsort(-(vectors @ q))[:10]
        assert set(rows.tolist()) == set(exact.tolist())
        np.testing.assert_allclose(cos, vectors[rows] @ q, rtol=1e-5)


def test_vector_rows_read_through_the_mapping_or_with_pread_are_the_same_bytes(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(300, seed=9))
    build_index(home, encode, MODEL, full=True)
    seg = load_index(home).segments[0]
    rows = np.array([0, 7, 7, 150, 299])
    assert seg.vectors.nbytes <= segment_mod.MAPPED_READ_MAX
    mapped = seg.vector_rows(rows)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(segment_mod, "MAPPED_READ_MAX", 0)  # as a large matrix is read
        preads = seg.vector_rows(rows)
    assert mapped.dtype == preads.dtype == np.float32 and mapped.tobytes() == preads.tobytes()
    assert mapped.tobytes() == np.asarray(seg.vectors)[rows].tobytes()


def test_kept_documents_are_the_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A segment of up to SMALL_ROWS keeps its documents as objects (equal strings shared): the same documents as a
    take of its Parquet table gives a larger one."""
    home = tmp_path / "ws"
    add_rows(home, 0, texts(300, seed=9))
    build_index(home, encode, MODEL, full=True)
    rows = np.array([299, 0, 7, 7, 150])
    seg = load_index(home).segments[0]
    kept = seg.doc_rows(rows)
    assert seg._docs is not None and kept[2] is kept[3]
    monkeypatch.setattr(segment_mod, "SMALL_ROWS", 0)
    assert load_index(home).segments[0].doc_rows(rows) == kept
    assert kept[0].lifecycle is kept[1].lifecycle  # one string object for a column's equal values


def test_preload_builds_a_small_segments_documents_and_maps_its_vectors(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(3000, seed=10))  # vectors over many pages: more than the kernel maps around a fault
    build_index(home, encode, MODEL, full=True)
    seg = load_index(home).segments[0]
    assert seg._docs is None  # built by the first query that reads a document, unless preloaded
    seg.preload()
    assert seg._docs is not None and len(seg._docs) == 3000
    assert seg.doc_rows([5])[0] is seg._docs[5]
    if os.access("/proc/self/pagemap", os.R_OK):  # its vectors, read through the mapping, are all mapped in
        present, pages = _present_pages(seg.vectors)
        assert pages > 16 and present == pages


def _present_pages(array: np.ndarray) -> tuple[int, int]:
    """How many of the pages under `array` this process has mapped in, of how many (Linux's /proc/self/pagemap:
    bit 63 of a page's entry)."""
    start = array.__array_interface__["data"][0] // 4096
    end = (array.__array_interface__["data"][0] + array.nbytes - 1) // 4096
    with open("/proc/self/pagemap", "rb") as fh:
        fh.seek(start * 8)
        entries = np.frombuffer(fh.read((end - start + 1) * 8), dtype="<u8")
    return int(((entries >> np.uint64(63)) & np.uint64(1)).sum()), end - start + 1


def test_the_two_tokenisers_agree() -> None:
    sample = [
        "The ferry to Naxos: cabins sold out, deck seats only!",
        "Über-große Straße in Zürich; café crème, naïve résumé",
        "snake_case_words and CamelCase and 3.14159 and x2 a b c",
        "Привет мир, 東京 station 42nd street",
        "",
        "the and of to a in",
    ]
    ascii_only = ["The ferry to Naxos: cabins sold out!", "snake_case_words and CamelCase, x2 a b c", "", "3.14 A-B"]
    others = [t for t in sample if not t.isascii()]
    for batch in (sample, ascii_only, others, [*others, *ascii_only], ["K\u212a K\u212aelvin"]):  # mixed, one kind
        rows, terms, vocab = bulk_terms(batch)
        assert list(rows) == sorted(rows)  # document order
        bulk = [[vocab[t] for t, r in zip(terms, rows, strict=True) if r == i] for i in range(len(batch))]
        assert bulk == tokenize(batch), batch
    spaced = ["tabs\tand\nnew-lines,commas;semis  (parens) \"quotes\" end.", *ascii_only]
    rows, terms, vocab = bulk_terms(pa.array(["skipped", *spaced]).slice(1))  # an Arrow slice: its own offset
    assert [[vocab[t] for t, r in zip(terms, rows, strict=True) if r == i] for i in range(len(spaced))] == tokenize(
        spaced)


def test_batch_stemming_matches_a_word_at_a_time() -> None:
    """bulk_terms stems its distinct words in one call of the stemmer: the same stems as `stem` one by one, and
    words that share a stem share one term id, numbered in order of first use."""
    words = [*texts(50, seed=3), "running runs ran runner Runs", "généralement Generalisation généraux", "x y 42"]
    flat = sorted({w for t in words for w in t.lower().split()})
    assert stem_words(flat) == [stem(w) for w in flat]
    rows, terms, vocab = bulk_terms(words)
    assert len(vocab) == len(set(vocab))
    firsts = list(dict.fromkeys(terms.tolist()))
    assert firsts == list(range(len(vocab)))
    bulk = [[vocab[t] for t, r in zip(terms, rows, strict=True) if r == i] for i in range(len(words))]
    assert bulk == tokenize(words)


def test_the_stopwords_are_bm25s_own_and_tokens_match_bm25s_tokenize() -> None:
    """The word list is kept in a file (importing bm25s loads SciPy); it must stay bm25s' own."""
    import bm25s
    from bm25s.stopwords import STOPWORDS_EN

    assert STOPWORDS == frozenset(STOPWORDS_EN)
    text = ["The ferry to Naxos: the cabins were sold out, so they slept on the deck"]
    ours = tokenize(text)[0]
    theirs = bm25s.tokenize(text, stopwords="en", stemmer=None, return_ids=False, show_progress=False)[0]
    assert ours == [stem(w) for w in theirs]


WRITES = re.compile(  # the SET clause only (up to WHERE or FROM)
    r"UPDATE memories\s+(?:AS \w+\s+)?SET(?:(?!WHERE|FROM)[^;])*?\b(lifecycle|importance|archived_by|"
    r"included_count_decay)\s*="
)


def test_every_write_of_ranked_columns_notes_the_change() -> None:
    root = Path(__file__).resolve().parents[2] / "memory_pipeline"
    missing = []
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if WRITES.search(text) and "note_changed(" not in text:
            missing.append(str(path.relative_to(root)))
    assert missing == []


def test_a_write_after_an_empty_build_scores_as_a_rebuild_would(tmp_path: Path) -> None:
    """A server warmed before the agent's first write: the memory is in the delta, not the index, and its BM25
    uses the mean length of the documents there are (not the empty index's placeholder)."""
    home = tmp_path / "ws"
    add_rows(home, 0, [])
    build_index(home, encode, MODEL, full=True)
    add_rows(home, 0, ["Alice parks her car on level minus two of the garage"])
    in_delta = results(home, "parks")
    rebuilt = tmp_path / "rebuilt"
    shutil.copytree(home, rebuilt)
    build_index(rebuilt, encode, MODEL, full=True)
    assert load_index(home).n_live == 0 and load_index(rebuilt).n_live == 1
    assert [r[0] for r in in_delta] == ["m-00000"]
    np.testing.assert_allclose([r[1:] for r in in_delta], [r[1:] for r in results(rebuilt, "parks")], rtol=1e-4)


def test_a_query_with_two_vectors_scores_bm25_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(200, seed=9))
    build_index(home, encode, MODEL, full=True)
    idx = load_index(home)
    tokens = tokenize(["ferry cabin deck"])[0]
    vectors = [v / np.linalg.norm(v) for v in encode(["ferry cabin deck", "cabin"])]
    reference = load_index(home)
    calls: list[int] = []
    real = type(idx).bm25

    def counted(self, q_tokens):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(self, q_tokens)

    monkeypatch.setattr(type(idx), "bm25", counted)
    keys, bm, cos, idf, _outside = idx.candidates(tokens, vectors, 50)
    assert len(calls) == 1
    _idf, scores = real(reference, tokens)
    # float32 sums: a common word looked up rather than summed in adds in another order (1 ulp)
    np.testing.assert_allclose(bm, [scores.of(s, np.array([r]))[0] for s, r in keys], rtol=1e-6)
    for j, v in enumerate(vectors):  # each vector's cosines as a query of that vector alone would give them
        alone_keys, _bm, alone_cos, _, _outside = reference.candidates(tokens, [v], 50)
        where = {k: i for i, k in enumerate(keys)}
        np.testing.assert_allclose([cos[where[k], j] for k in alone_keys if k in where],
                                   [alone_cos[i, 0] for i, k in enumerate(alone_keys) if k in where], rtol=1e-6)
