import json
from datetime import datetime
from pathlib import Path

import pytest

from memory_pipeline.cli import main
from memory_pipeline.evaluation.locomo_transcripts import (
    LocomoError,
    default_locomo_path,
    locomo_to_transcripts,
    parse_locomo_datetime,
)
from memory_pipeline.journals.sample_transcripts import generate_sessions
from memory_pipeline.journals.transcript import parse_transcript
from memory_pipeline.settings import REPO_ROOT

LOCOMO = default_locomo_path()
needs_locomo = pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not present")
SAMPLE_ROOT = REPO_ROOT / "data" / "sample"


def test_committed_sample_transcripts_are_exactly_what_the_generator_writes() -> None:
    generated = dict(generate_sessions())
    committed = {p.relative_to(SAMPLE_ROOT): p for p in (SAMPLE_ROOT / "raw" / "conversations").rglob("*.md")}
    assert set(committed) == set(generated)
    for rel, path in committed.items():
        assert path.read_bytes() == generated[rel].encode("utf-8"), rel


def test_sample_covers_45_days_80_sessions_projects_people_and_tools() -> None:
    sessions = [parse_transcript(text, str(p)) for p, text in generate_sessions()]
    assert len(sessions) >= 80 and len({t.started.date() for t in sessions}) >= 45
    assert len({t.frontmatter["project"] for t in sessions}) >= 5
    assert len({p for t in sessions for p in t.frontmatter["people"]}) >= 5
    assert sum(len(turn.tools) for t in sessions for turn in t.turns) >= 150
    assert generate_sessions() == generate_sessions()  # deterministic


def test_locomo_date_parsing() -> None:
    assert parse_locomo_datetime("1:56 pm on 8 May, 2023") == datetime.fromisoformat("2023-05-08T13:56:00+00:00")
    assert parse_locomo_datetime("12:09 am on 13 September, 2023").hour == 0
    with pytest.raises(ValueError, match="not a LoCoMo date_time"):
        parse_locomo_datetime("yesterday")


@needs_locomo
def test_locomo_import_one_transcript_per_non_empty_session_with_its_real_date(tmp_path: Path) -> None:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    sample = next(s for s in data if s["sample_id"] == "conv-26")
    written = locomo_to_transcripts(LOCOMO, tmp_path / "raw" / "conversations", ["conv-26"])
    sessions = {k for k, v in sample["conversation"].items() if k.startswith("session_") and isinstance(v, list) and v}
    assert len(written) == len(sessions) == 19
    by_number = {}
    for path in written:
        t = parse_transcript(path.read_text(encoding="utf-8"), str(path.relative_to(tmp_path)))
        by_number[t.frontmatter["session"]] = (path, t)
        assert t.frontmatter["conversation"] == "conv-26" and t.participants == ("Caroline", "Melanie")
    path, first = by_number[1]
    assert first.started == datetime(2023, 5, 8, 13, 56)
    assert path.relative_to(tmp_path).as_posix().startswith("raw/conversations/2023/05/08/1356-lcm_conv26_s01-")
    turns = sample["conversation"]["session_1"]
    assert [t.ref for t in first.turns] == [t["dia_id"] for t in turns]
    assert [t.role for t in first.turns] == [t["speaker"] for t in turns]
    assert first.turns[0].text == turns[0]["text"]
    with_image = next(i for i, t in enumerate(turns) if t.get("img_url"))
    assert first.turns[with_image].attachments[0].path == turns[with_image]["img_url"][0]
    # importing again writes nothing new and changes nothing
    before = {p: p.read_bytes() for p in written}
    assert locomo_to_transcripts(LOCOMO, tmp_path / "raw" / "conversations", ["conv-26"]) == written
    assert {p: p.read_bytes() for p in written} == before


def test_locomo_skips_empty_sessions_and_names_bad_input(tmp_path: Path) -> None:
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "9:05 am on 2 January, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "## not a heading\nsecond line"}],
            "session_2_date_time": "9:05 am on 3 January, 2023", "session_2": [],
            "session_3_date_time": "9:05 am on 4 January, 2023",
        },
    }
    data = tmp_path / "l.json"
    data.write_text(json.dumps([sample]))
    written = locomo_to_transcripts(data, tmp_path / "raw")
    assert len(written) == 1
    t = parse_transcript(written[0].read_text(), written[0].name)
    assert t.turns[0].text == "\\## not a heading\nsecond line"  # escaped, not a new turn
    sample["conversation"]["session_2"] = [{"speaker": "Zed", "dia_id": "D2:1", "text": "hi"}]
    data.write_text(json.dumps([sample]))
    with pytest.raises(LocomoError, match="session_2 turn 0: bad speaker"):
        locomo_to_transcripts(data, tmp_path / "raw2")
    assert not (tmp_path / "raw2").exists()  # validated before anything is written
    with pytest.raises(LocomoError, match="no conversation"):
        locomo_to_transcripts(data, tmp_path / "raw3", ["conv-missing"])


@needs_locomo
def test_cli_import_locomo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "ws"))
    assert main(["import", "locomo", str(LOCOMO)]) == 0
    assert len(list((tmp_path / "ws" / "raw" / "conversations").rglob("*.md"))) == 136
    assert "136 LoCoMo session transcript(s)" in capsys.readouterr().out
    assert main(["import", "nothing", "extra"]) == 2
