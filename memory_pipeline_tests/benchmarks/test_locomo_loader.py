"""The LoCoMo loader on a small hand-written fixture (invented people; LoCoMo's format)."""

import json
from datetime import datetime
from pathlib import Path

import pytest

from memory_pipeline.evaluation.locomo import LocomoFormatError, load_locomo, write_jsonl
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl

FIXTURE = Path(__file__).with_name("locomo_fixture.json")


def test_turns_become_memories() -> None:
    first, second = load_locomo(FIXTURE)
    assert first.sample_id == "conv-t1" and first.speakers == ("Ruth", "Tomas")
    assert len(first.turns) == 12  # session_3 is listed with a date but empty: skipped
    assert {t.session for t in first.turns} == {1, 2, 4}
    turn = first.turns[1]
    assert turn.memory_id == "conv-t1:D1:2"
    assert turn.content == "Tomas: Hey Ruth! Good to see you too! I adopted a beagle named Biscuit last Saturday."
    assert turn.created_at == datetime(2024, 3, 3, 9, 15)
    assert first.turns[3].content.endswith("[shares a photo: a photo of a puppy next to a chewed shoe]")
    assert first.turns[-1].created_at == datetime(2024, 7, 14, 20, 30)
    assert first.last_session_at == datetime(2024, 7, 14, 20, 30)
    assert len(second.turns) == 2 and second.turns[0].memory_id == "conv-t2:D1:1"


def test_questions_and_evidence() -> None:
    conv = load_locomo(FIXTURE)[0]
    by_q = {q.question: q for q in conv.questions}
    assert by_q["What is the name of Tomas's dog?"].evidence == ("conv-t1:D1:2",)
    assert by_q["Which race is Tomas training for?"].evidence == ("conv-t1:D2:3", "conv-t1:D4:2")  # "D2:3; D4:2"
    assert by_q["Would Ruth enjoy a ceramics fair?"].evidence == ("conv-t1:D1:3",)  # "D:1:3"
    adversarial = by_q["What did Ruth's dog learn?"]
    assert adversarial.category == 5 and adversarial.answer == "to fetch"
    assert adversarial.evidence == ("conv-t1:D4:2",)
    assert conv.unknown_evidence == ["D9:9"]


def test_subset_and_missing_conversation() -> None:
    assert [c.sample_id for c in load_locomo(FIXTURE, ["conv-t2"])] == ["conv-t2"]
    with pytest.raises(LocomoFormatError, match=r"no conversation conv-zz \(has conv-t1, conv-t2\)"):
        load_locomo(FIXTURE, ["conv-zz"])


def test_bad_input_names_file_sample_and_field(tmp_path: Path) -> None:
    data = json.loads(FIXTURE.read_text())
    data[1]["conversation"]["session_1_date_time"] = "yesterday-ish"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(LocomoFormatError, match=r"bad.json: sample 1 \(conv-t2\): field 'conversation.session_1_date"):
        load_locomo(bad)
    data[1]["conversation"]["session_1_date_time"] = "10:00 am on 5 January, 2024"
    data[0]["qa"][0]["category"] = 9
    bad.write_text(json.dumps(data))
    with pytest.raises(LocomoFormatError, match=r"sample 0 \(conv-t1\): field 'qa\[0\]'.category"):
        load_locomo(bad)
    bad.write_text("[{")
    with pytest.raises(LocomoFormatError, match="bad.json: invalid JSON"):
        load_locomo(bad)
    with pytest.raises(FileNotFoundError, match="nope.json"):
        load_locomo(tmp_path / "nope.json")


def test_the_project_importer_takes_the_turns(tmp_path: Path) -> None:
    conv = load_locomo(FIXTURE)[0]
    store = MemoryStore(tmp_path / "memory.duckdb")
    summary = import_jsonl(store, write_jsonl(conv, tmp_path / "turns.jsonl"))
    assert summary.memories == 12
    with store.connect() as con:
        row = con.execute(
            "SELECT content, importance, created_at, categories, lifecycle FROM memories WHERE id = 'conv-t1:D2:3'"
        ).fetchone()
    assert row[0] == "Tomas: Congrats! I am training for the Lisbon half marathon in October."
    assert row[1] == 1.0 and row[2] == datetime(2024, 4, 21, 18, 40) and row[4] == "active"
    assert list(row[3]) == ["tomas"]
