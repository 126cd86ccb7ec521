"""Memories dated in the future: one a few weeks ahead holds from its date, so today it ranks after what holds
now; a date more than a year ahead (2099) is a wrong year, refused in one line naming the row and the field."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_pipeline.cli import main
from memory_pipeline.embedding.hashing import hashing_embed
from memory_pipeline.embedding.spec import HASHING
from memory_pipeline.search import build_index, search
from memory_pipeline.search.engine import clear_cache
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl

EMBED = (hashing_embed, HASHING)


def _write(path: Path, rows: list[tuple[str, str, datetime]]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "content": t, "created_at": d.isoformat()}) + "\n"
                            for i, t, d in rows))  # fmt: skip
    return path


def test_a_memory_dated_later_than_now_is_not_current_yet(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    now = datetime.now(UTC).replace(tzinfo=None)
    rows = [("past", "Daily standup is at 09:00.", now - timedelta(days=30)),
            ("ahead", "Daily standup is at 11:00.", now + timedelta(days=30))]  # fmt: skip
    import_jsonl(MemoryStore(ws / "memory.duckdb"), _write(tmp_path / "m.jsonl", rows))
    build_index(ws, *EMBED)
    clear_cache()
    hits = search("When is the daily standup?", 2, home=ws, embedder=EMBED, floor=0.0)
    assert [h.id for h in hits] == ["past", "ahead"]
    assert hits[0].superseded_by == ""
    later = search("When is the daily standup?", 2, home=ws, embedder=EMBED, floor=0.0,
                   as_of=now + timedelta(days=40))  # fmt: skip
    assert later[0].id == "ahead"


def test_an_import_dated_2099_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(ws))
    src = _write(tmp_path / "m.jsonl", [("ok", "The hose is in the shed.", datetime(2026, 9, 1)),
                                        ("odd", "The rake is in the shed.", datetime(2099, 1, 1))])  # fmt: skip
    assert main(["import", str(src)]) != 0
    err = capsys.readouterr().err
    assert "m.jsonl:2" in err and "created_at" in err and "2099-01-01" in err and "Traceback" not in err
