"""An index update prints no library warning: DuckDB 2 warned "Arrow output on a DB-API result makes an extra copy"
(with the source line) on every read of an update's rows, and `demo` and `run` showed it. The cause is fixed (the
rows are read through a relation), so no filter is needed: here every warning is recorded, none ignored."""

from __future__ import annotations

import warnings
from pathlib import Path

import duckdb

from memory_pipeline.search import build_index
from memory_pipeline.search.documents import few_rows_arrow
from memory_pipeline_tests.search.test_segments import MODEL, add_rows, encode, texts


def _recorded(action: object) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # before any filter the package or pytest's configuration may have added
        action() if callable(action) else None
    return [f"{w.filename}:{w.lineno}: {w.message}" for w in caught]


def test_an_index_update_reading_new_rows_warns_nothing(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(30, seed=3))
    build_index(home, encode, MODEL, full=True)
    add_rows(home, 100, texts(5, seed=4))  # the update reads these through its few-rows path

    stats: list[int] = []
    caught = _recorded(lambda: stats.append(build_index(home, encode, MODEL).added))
    assert stats == [5]
    assert caught == []


def test_few_rows_after_an_unfinished_result_reads_and_warns_nothing() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT range AS a FROM range(10)")
    assert con.execute("SELECT count(*) FROM t").fetchone() == (10,)  # left unread to its end
    rows: list[int] = []
    caught = _recorded(lambda: rows.extend(few_rows_arrow(con, "SELECT a FROM t WHERE a > ?", [6]).column("a")
                                           .to_pylist()))  # fmt: skip
    assert rows == [7, 8, 9]
    assert caught == []
