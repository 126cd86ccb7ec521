"""A value said to start later ("Flat rent is £1,250 a month from January") holds from then, not before: as of a
day before the start the older value answers and is not marked; on or after it the newer answers and the older
no longer holds since the start — before any night and after one (the night records the start as `valid_until`),
and now, when the start is still ahead: search and the compiled prompt agree."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from memory_pipeline.context.gate import Gate
from memory_pipeline.context.search_adapter import default_search
from memory_pipeline.context.service import compile_for_agent
from memory_pipeline.embedding.hashing import hashing_embed
from memory_pipeline.embedding.spec import HASHING
from memory_pipeline.search import build_index, search
from memory_pipeline.search.engine import clear_cache
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline.store.validity import apply, fact_rows

EMBED = (hashing_embed, HASHING)
RENT = [("old", "Flat rent is £1,150 a month.", datetime(2026, 8, 1, 9)),
        ("new", "Flat rent is £1,250 a month from January.", datetime(2026, 11, 10, 9)),
        ("hose", "The garden hose is in the shed.", datetime(2026, 8, 3, 9))]  # fmt: skip
QUESTION = "What is the flat rent?"


def _workspace(tmp_path: Path, rows: list[tuple[str, str, datetime]], night: bool) -> Path:
    """A store of `rows`, the night's version plan applied (`night`), the index built."""
    from memory_pipeline.abstraction.versions import plan

    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "m.jsonl").write_text("".join(json.dumps({"id": i, "content": t, "created_at": d.isoformat()}) + "\n"
                                              for i, t, d in rows))  # fmt: skip
    store = MemoryStore(ws / "memory.duckdb")
    import_jsonl(store, tmp_path / "m.jsonl")
    if night:
        with store.transaction() as con:
            made = plan(fact_rows(con)).supersessions
            assert [(s.memory_id, s.superseded_by) for s in made] == [("old", "new")]
            apply(con, made, "test-run", rows[1][2] + timedelta(days=1))
    build_index(ws, *EMBED)
    clear_cache()
    return ws


@pytest.mark.parametrize("night", [True, False], ids=["after-a-night", "before-any-night"])
def test_as_of_before_the_start_answers_the_older_value_and_after_it_the_newer(tmp_path: Path, night: bool) -> None:
    ws = _workspace(tmp_path, RENT, night)
    for before in ("2026-11-20", "2026-12-31"):
        hits = search(QUESTION, 3, home=ws, embedder=EMBED, floor=0.0, as_of=before)
        assert hits[0].id == "old" and hits[0].superseded_by == "", before
        assert all(h.id != "new" or h.superseded_by == "" for h in hits)
    for after in ("2027-01-01", "2027-02-01"):
        hits = {h.id: h for h in search(QUESTION, 3, home=ws, embedder=EMBED, floor=0.0, as_of=after)}
        assert next(iter(hits)) == "new", after
        assert (hits["old"].superseded_by, hits["old"].valid_until[:10]) == ("new", "2027-01-01")


@pytest.mark.parametrize("night", [True, False], ids=["after-a-night", "before-any-night"])
def test_the_prompt_never_says_the_older_value_stopped_holding_before_the_start(tmp_path: Path, night: bool) -> None:
    ws = _workspace(tmp_path, RENT, night)
    then, _ = compile_for_agent(ws, QUESTION, budget_tokens=1000, gate=Gate(),
                                search=default_search(ws, EMBED, floor=0.0, as_of=datetime(2026, 12, 15)))  # fmt: skip
    assert "£1,150" in then.prompt and "no longer holds" not in then.prompt
    later, _ = compile_for_agent(ws, QUESTION, budget_tokens=1000, gate=Gate(),
                                 search=default_search(ws, EMBED, floor=0.0, as_of=datetime(2027, 1, 15)))  # fmt: skip
    assert "no longer holds since 2027-01-01" in later.prompt
    assert later.prompt.index("£1,250") < later.prompt.index("£1,150")


@pytest.mark.parametrize("night", [True, False], ids=["after-a-night", "before-any-night"])
def test_a_start_still_ahead_leaves_the_older_value_current_now(tmp_path: Path, night: bool) -> None:
    # the texts are the same every day ("from next month"), so the hashing embedder ranks them the same every day
    now = datetime.now(UTC).replace(tzinfo=None)
    start = date(now.year + now.month // 12, now.month % 12 + 1, 1)
    rows = [("old", "Flat rent is £1,150 a month.", now - timedelta(days=120)),
            ("new", "Flat rent is £1,250 a month from next month.", now),
            ("hose", "The garden hose is in the shed.", now - timedelta(days=100)),
            ("gym", "The gym opens at 6:30 on weekdays from next month.", now)]  # fmt: skip
    ws = _workspace(tmp_path, rows, night)
    hits = search(QUESTION, 3, home=ws, embedder=EMBED, floor=0.0)
    assert [h.id for h in hits][:2] == ["old", "new"] and hits[0].superseded_by == ""  # the coming value next
    out, _ = compile_for_agent(ws, QUESTION, budget_tokens=1000, gate=Gate(),
                               search=default_search(ws, EMBED, floor=0.0))  # fmt: skip
    assert "£1,150" in out.prompt and "no longer holds" not in out.prompt
    after = datetime.combine(start, datetime.min.time()) + timedelta(days=1)
    ahead = {h.id: h for h in search(QUESTION, len(rows), home=ws, embedder=EMBED, floor=0.0,
                                     as_of=after.isoformat(timespec="seconds"))}  # fmt: skip
    assert next(iter(ahead)) == "new" and ahead["old"].valid_until[:10] == start.isoformat()
    # a value said to start later that replaces nothing keeps its place: it is what is known of the gym
    assert search("When does the gym open on weekdays?", 3, home=ws, embedder=EMBED, floor=0.0)[0].id == "gym"


def test_a_supersession_recorded_from_when_the_newer_was_said_still_holds_the_older_until_the_start(
    tmp_path: Path,
) -> None:
    from memory_pipeline.store.validity import Supersession

    ws = _workspace(tmp_path, RENT, night=False)
    with MemoryStore(ws / "memory.duckdb").transaction() as con:  # as a night before starts were read recorded it
        apply(con, [Supersession("old", "new", RENT[1][2], "flat rent")], "older-run", RENT[1][2])
    clear_cache()
    hits = search(QUESTION, 3, home=ws, embedder=EMBED, floor=0.0, as_of="2026-12-15")
    assert hits[0].id == "old" and hits[0].superseded_by == ""
    hits = {h.id: h for h in search(QUESTION, 3, home=ws, embedder=EMBED, floor=0.0, as_of="2027-01-15")}
    assert next(iter(hits)) == "new" and hits["old"].valid_until[:10] == "2027-01-01"
