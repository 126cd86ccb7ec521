"""Unrelated notes full of numbers, ids and times are never versions of one another, on their own or beside the
current-facts set."""

from __future__ import annotations

import json
from datetime import datetime, time

import pytest

from benchmarks.current_facts import DATA, records
from benchmarks.unrelated_notes import unrelated_notes
from memory_pipeline.abstraction.versions import plan
from memory_pipeline.store.validity import FactRow


def _rows() -> list[FactRow]:
    return [FactRow(f"u-{i}", t, datetime.combine(d, time(9)), None) for i, (t, d) in enumerate(unrelated_notes())]


def test_the_notes_are_many_distinct_and_carry_values() -> None:
    notes = [t for t, _ in unrelated_notes()]
    assert len(notes) >= 500 and len(set(notes)) == len(notes)
    assert sum(any(c.isdigit() for c in t) for t in notes) == len(notes)
    assert unrelated_notes() == unrelated_notes()  # deterministic


@pytest.mark.parametrize("seed", [1, 3, 4, 5, 7])
def test_no_unrelated_note_is_marked_superseded(seed: int) -> None:
    notes = unrelated_notes(3000, seed=seed)
    rows = [FactRow(f"u-{i}", t, datetime.combine(d, time(9)), None) for i, (t, d) in enumerate(notes)]
    assert plan(rows).supersessions == []


def test_beside_the_labelled_facts_only_fact_versions_are_marked() -> None:
    facts = [
        FactRow(r["id"], r["content"], datetime.fromisoformat(r["created_at"].replace("Z", "+00:00")), None)
        for r in records(json.loads(DATA.read_text()))
    ]
    notes = [FactRow(r.id, r.content, r.stated_at.replace(tzinfo=facts[0].stated_at.tzinfo), None) for r in _rows()]
    marked = plan([*facts, *notes]).supersessions
    assert marked and all(s.memory_id.startswith("f-") and s.superseded_by.startswith("f-") for s in marked)
