"""Validity as a function of the store's events: a fact stated at 16:45, then at 10:15 (a night marks the
supersession), then every order of forgetting the current version, remembering it again, re-stating the old
value, the operator's undo and the night's rollback. Whatever the order, no memory reads as superseded by a
forgotten one, history before the edits still answers as of then, and the last statement holds now."""

from __future__ import annotations

import itertools
import json
from datetime import datetime
from pathlib import Path

import pytest

from memory_pipeline.embedding.hashing import hashing_embed
from memory_pipeline.embedding.spec import HASHING
from memory_pipeline.search import build_index, search
from memory_pipeline.search.engine import clear_cache
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline.store.records import parse_record
from memory_pipeline.store.remember import _apply
from memory_pipeline.store.spool import record_json
from memory_pipeline.store.validity import (
    Supersession,
    ValidityError,
    apply,
    list_superseded,
    rollback_runs,
    superseded,
    undo,
)
from memory_pipeline.store.validity_events import mark_at

EMBED = (hashing_embed, HASHING)
OLD, NEW = "Daily standup is at 16:45.", "Daily standup is at 10:15."
T_OLD, T_NEW, T_NIGHT = datetime(2026, 9, 1, 9), datetime(2026, 10, 1, 9), datetime(2026, 10, 2, 3)
MID_OCTOBER = datetime(2026, 10, 15, 12)
EDITS = ("forget new", "remember new", "restate old", "undo old", "rollback night")


def _store(tmp_path: Path) -> MemoryStore:
    ws = tmp_path / "ws"
    ws.mkdir()
    lines = [{"id": "old", "content": OLD, "created_at": T_OLD.isoformat()},
             {"id": "new", "content": NEW, "created_at": T_NEW.isoformat()}]  # fmt: skip
    (tmp_path / "v.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    store = MemoryStore(ws / "memory.duckdb")
    import_jsonl(store, tmp_path / "v.jsonl")
    with store.transaction() as con:
        apply(con, [Supersession("old", "new", T_NEW, "daily standup")], "night-1", T_NIGHT)
    return store


def _remember(store: MemoryStore, mid: str, text: str, created: datetime, at: datetime) -> None:
    record = parse_record({"id": mid, "content": text, "created_at": created.isoformat()}, "test")
    with store.transaction() as con:
        _apply(con, {"op": "remember", "record": record_json(record), "at": at.isoformat()})


def _edit(store: MemoryStore, edit: str, at: datetime) -> bool:
    """One edit at `at`, as the store takes it; False when the store refuses it (nothing changed)."""
    if edit == "forget new":
        with store.transaction() as con:
            return _apply(con, {"op": "forget", "id": "new", "reason": "wrong", "event": at.isoformat(),
                                "at": at.isoformat()}) == "forgotten"  # fmt: skip
    if edit == "remember new":
        _remember(store, "new", NEW, T_NEW, at)
    elif edit == "restate old":
        _remember(store, "old", OLD, T_OLD, at)
    elif edit == "undo old":
        try:
            undo(store, "old", "operator:test")
        except ValidityError:
            return False
    else:
        with store.transaction() as con:
            rollback_runs(con, ["night-1"], at, "rb-1")
    return True


def _state(store: MemoryStore) -> tuple[dict[str, list], set[str]]:
    with store.connect() as con:
        known = superseded(con)
        live = {str(r[0]) for r in con.execute("SELECT id FROM memories WHERE lifecycle = 'active'").fetchall()}
    return known.spans, live


@pytest.mark.parametrize("edits", [p for n in range(1, 4) for p in itertools.permutations(EDITS, n)],
                         ids=lambda p: "+".join(x.replace(" ", "-") for x in p))  # fmt: skip
def test_every_order_of_edits_keeps_validity_consistent(tmp_path: Path, edits: tuple[str, ...]) -> None:
    store = _store(tmp_path)
    done: list[str] = []
    for i, edit in enumerate(edits):
        if _edit(store, edit, datetime(2026, 11, 1 + i, 9)):
            done.append(edit)
    spans, live = _state(store)
    for mid, v in spans.items():
        assert mid in live and all(sp.by in live for sp in v), (mid, v)
    listed = list_superseded(store)
    assert all(r.id in live and r.superseded_by in live and r.current for r in listed)
    taken_back = "undo old" in done or "rollback night" in done
    if "new" in live and not taken_back:  # history: in mid-October 10:15 held
        assert (sp := mark_at(spans.get("old", []), MID_OCTOBER)) is not None and sp.by == "new"
    statements = [e for e in done if e in ("remember new", "restate old")]
    last = {"remember new": "new", "restate old": "old"}[statements[-1]] if statements else "new"
    if last in live:  # the last statement holds now
        assert mark_at(spans.get(last, []), None) is None
    if "new" not in live:  # the version before a forgotten one holds again
        assert mark_at(spans.get("old", []), None) is None


def _search_home(store: MemoryStore) -> Path:
    home = store.path.parent
    build_index(home, *EMBED)
    clear_cache()
    return home


def _answer(home: Path, as_of: datetime | None = None) -> list[tuple[str, str]]:
    hits = search("When is the daily standup?", 2, home=home, embedder=EMBED, floor=0.0, as_of=as_of)
    return [(h.id, h.superseded_by) for h in hits]


def test_restating_an_old_value_keeps_its_history(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _remember(store, "old", OLD, T_OLD, datetime(2026, 11, 1, 9))
    home = _search_home(store)
    assert _answer(home)[0] == ("old", "")
    assert _answer(home, MID_OCTOBER)[0] == ("new", "")
    assert ("old", "new") in _answer(home, MID_OCTOBER)


def test_forgetting_the_current_version_leaves_no_mark_naming_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _edit(store, "forget new", datetime(2026, 11, 1, 9))
    assert list_superseded(store) == []
    assert _answer(_search_home(store)) == [("old", "")]


def test_undo_clears_a_mark_search_shows_before_any_night(tmp_path: Path) -> None:
    store = _store(tmp_path)
    with store.transaction() as con:
        rollback_runs(con, ["night-1"], datetime(2026, 11, 1), "rb-1")
    home = _search_home(store)
    assert ("old", "new") in _answer(home)  # read-time: two values of one fact, the later holds
    assert undo(store, "old", "operator:test") == "new"
    clear_cache()
    assert ("old", "") in _answer(home)
