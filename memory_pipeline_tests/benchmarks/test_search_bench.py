"""`python -m benchmarks search`: the seed's `index_file` as written (a commit per memory) and the verdicts the run
prints against its targets (the read path at a million memories)."""

from pathlib import Path
from typing import Any

from benchmarks.search import corpus, index_file_each, seed_db, verdicts


def test_index_file_as_written_commits_each_memory_to_all_three_tables(tmp_path: Path) -> None:
    db = seed_db(tmp_path / "memory.db", create=True)
    texts = corpus(5, seed=3)
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    seconds = index_file_each(db, texts, start=100)
    assert seconds > 0
    assert sum(1 for s in statements if s.strip().upper() == "COMMIT") == 5  # one per memory, not one for all
    assert not db.in_transaction
    other = seed_db(tmp_path / "memory.db")  # a second connection sees committed rows only
    for table in ("knowledge_fts", "knowledge_vec", "knowledge_meta"):
        keys = sorted(r[0] for r in other.execute(f"SELECT path FROM {table}"))
        assert keys == [f"m-{100 + i:07d}" for i in range(5)], table
    words = dict(other.execute("SELECT path, token_count FROM knowledge_meta"))
    assert words["m-0000100"] == len(texts[0].split())
    db.close()
    other.close()


def _run(inc: float, seed_inc: float, p95: float = 5.0, seed_p95: float = 50.0, build: float = 1.0,
         seed_build: float = 2.0, rss: float = 1000.0) -> tuple[dict[str, Any], dict[str, Any]]:
    mine = {"inc_s": inc, "build_s": build, "query": {"p95": p95, "rss_mib": rss}}
    return mine, {"inc_s": seed_inc, "build_s": seed_build, "p95": seed_p95}


def test_verdicts_name_only_the_targets_a_size_has() -> None:
    assert verdicts(10_000, *_run(0.024, 0.008)) == "10,000: update missed (24.0 vs 8.0 ms)"
    at_100k = verdicts(100_000, *_run(0.030, 0.030, p95=8.0, seed_p95=64.0))
    assert at_100k == ("100,000: update met (30.0 vs 30.0 ms), p95 met (8.0 vs ≤ 20 ms), "
                       "speed-up met (8.0× vs ≥ 8×)")  # fmt: skip
    at_1m = verdicts(1_000_000, *_run(0.1, 0.5, p95=101.0, seed_p95=800.0, build=20.0, seed_build=19.0, rss=1537))
    assert "p95 missed (101.0 vs ≤ 100 ms)" in at_1m
    assert "speed-up missed (7.9× vs ≥ 8×)" in at_1m
    assert "build missed (20.0 vs 19.0 s)" in at_1m
    assert at_1m.endswith("RSS missed (1537 vs ≤ 1536 MiB)")
