"""Usage decay (seed 004 §9): ×0.95 per day bucket, +1 per inclusion; recording via API and bulk import."""

import json
from datetime import date, datetime
from pathlib import Path

import pytest

from memory_pipeline.graph.usage import UsageState, decayed_as_of, record, replay
from memory_pipeline.graph.usage_store import import_usage, record_inclusions
from memory_pipeline.store.records import ImportRejected
from memory_pipeline_tests.graph.helpers import make_workspace, memory

D0 = date(2026, 10, 1)


def day(n: int) -> date:
    return date.fromordinal(D0.toordinal() + n)


def test_decay_arithmetic_over_day_buckets() -> None:
    s = replay([(day(0), 1), (day(0), 1), (day(1), 1), (day(3), 1)])
    # end of day 0: 2; day 1: 2×0.95 + 1 = 2.9; day 3: 2.9×0.95² + 1 = 3.61725
    assert s.total == 4 and s.day == day(3)
    assert s.decayed == pytest.approx(3.61725, abs=1e-9)
    assert decayed_as_of(s, day(5)) == pytest.approx(3.61725 * 0.95**2, abs=1e-9)
    assert decayed_as_of(s, day(3)) == s.decayed  # same bucket: no decay yet
    assert decayed_as_of(UsageState(), day(9)) == 0.0


def test_a_late_event_equals_processing_in_day_order() -> None:
    in_order = replay([(day(0), 1), (day(2), 3), (day(6), 1)])
    late = record(record(record(UsageState(), day(6), 1), day(0), 1), day(2), 3)
    assert late.total == in_order.total == 5
    assert late.day == in_order.day
    assert late.decayed == pytest.approx(in_order.decayed, abs=1e-9)
    with pytest.raises(ValueError, match="≥ 1"):
        record(UsageState(), day(0), 0)


def test_record_and_bulk_import_update_the_store_idempotently(tmp_path: Path) -> None:
    store = make_workspace(tmp_path / "ws", [memory("m1", "first", 10), memory("m2", "second", 10)])
    record_inclusions(store, ["m1"], datetime(2026, 10, 1, 9))
    record_inclusions(store, ["m1", "m2"], datetime(2026, 10, 2, 23, 59))
    usage = tmp_path / "usage.jsonl"
    usage.write_text(
        "\n".join(
            json.dumps(e)
            for e in [
                {"memory_id": "m2", "at": "2026-10-04T08:00:00Z", "count": 2},
                {"memory_id": "m2", "at": "2026-10-04T08:00:00Z", "count": 2},  # a second, identical inclusion
            ]
        )
        + "\n"
    )
    first = import_usage(store, usage)
    assert (first.events, first.duplicates) == (2, 0)
    again = import_usage(store, usage)  # re-importing the same file changes nothing
    assert (again.events, again.duplicates) == (0, 2)
    with store.connect() as con:
        rows = dict(
            (r[0], r[1:])
            for r in con.execute(
                "SELECT id, included_count_total, included_count_decay, usage_day FROM memories ORDER BY id"
            ).fetchall()
        )
    assert rows["m1"][0] == 2 and rows["m1"][1] == pytest.approx(1.95) and rows["m1"][2] == date(2026, 10, 2)
    # m2: 1 on Oct 2, then 4 on Oct 4 → 1×0.95² + 4
    assert rows["m2"][0] == 5 and rows["m2"][1] == pytest.approx(0.9025 + 4) and rows["m2"][2] == date(2026, 10, 4)


def test_a_bad_usage_file_is_rejected_whole_naming_line_and_field(tmp_path: Path) -> None:
    store = make_workspace(tmp_path / "ws", [memory("m1", "first", 10)])
    bad = tmp_path / "usage.csv"
    bad.write_text("memory_id,at,count\nm1,2026-10-01T00:00:00Z,1\nm1,yesterday,1\nghost,2026-10-01T00:00:00Z,1\n")
    with pytest.raises(ImportRejected, match=r"usage\.csv:3: field 'at'"):
        import_usage(store, bad)
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text('{"memory_id": "m1", "at": "2026-10-01"}\n{"memory_id": "ghost", "at": "2026-10-01"}\n')
    with pytest.raises(ImportRejected, match=r"unknown\.jsonl:2: field 'memory_id': no memory 'ghost'"):
        import_usage(store, unknown)
    with store.connect() as con:  # nothing half-written
        assert con.execute("SELECT count(*) FROM usage_events").fetchall()[0][0] == 0
        assert con.execute("SELECT included_count_total FROM memories").fetchall()[0][0] == 0


def test_usage_cli_records_and_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from memory_pipeline.cli import main

    store = make_workspace(tmp_path / "ws", [memory("m1", "first", 10)])
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "ws"))
    assert main(["usage", "record", "m1", "--at", "2026-10-01T12:00:00Z", "--count", "2"]) == 0
    assert "recorded 1 inclusion(s) of 1 memories on 2026-10-01" in capsys.readouterr().out
    assert main(["usage", "record", "nope"]) == 1
    assert "no memory 'nope'" in capsys.readouterr().err
    usage = tmp_path / "u.csv"
    usage.write_text("memory_id,at\nm1,2026-10-02T00:00:00Z\n")
    assert main(["usage", "import", str(usage)]) == 0 and main(["usage", "import", str(usage)]) == 0
    assert "0 inclusion event(s) for 0 memories (1 already recorded, ignored)" in capsys.readouterr().out
    with store.connect() as con:
        total, decayed = con.execute("SELECT included_count_total, included_count_decay FROM memories").fetchall()[0]
    assert total == 3 and decayed == pytest.approx(2 * 0.95 + 1)
