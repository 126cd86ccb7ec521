"""A session that runs past midnight stays one transcript, in its start day's folder (the day's journal reads its
folder), and every turn after the start day names its day in its heading — so a reader sees when it was said,
and a session resumed the next night at a later hour is not read as the same evening."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

from memory_pipeline.journals.imports.importer import import_paths
from memory_pipeline.journals.transcript import parse_transcript, read_day, render

MIDNIGHT = Path(__file__).resolve().parents[1] / "fixtures" / "transcript_imports" / "midnight"


def test_turns_after_midnight_name_their_day_and_the_session_stays_on_its_start_day(tmp_path: Path) -> None:
    report = import_paths([MIDNIGHT], tmp_path)
    assert report.errors == [] and {w.day for w in report.written} == {date(2026, 11, 29)}
    [cc, cx] = sorted(tmp_path.rglob("*.md"), key=lambda p: p.name.split("-")[1])
    assert cc.parent == cx.parent == tmp_path / "2026" / "11" / "29"
    for path, times in (
        (cc, [(29, 23, 55), (29, 23, 57), (30, 0, 5), (30, 0, 6), (1, 0, 30), (1, 0, 31)]),
        (cx, [(29, 23, 50), (29, 23, 52), (30, 0, 12), (30, 0, 12), (30, 23, 58), (30, 23, 58)]),
    ):
        text = path.read_text(encoding="utf-8")
        transcript = parse_transcript(text, path)
        month = {29: 11, 30: 11, 1: 12}
        assert [t.at for t in transcript.turns] == [datetime(2026, month[d], d, h, m) for d, h, m in times]
        assert render(transcript) == text  # the dated headings round-trip
        assert transcript.turns[0].day is None and transcript.turns[-1].day is not None
    assert "\n## 2026-11-30 00:12 — user\nLesson learned: the ECB feed" in cx.read_text(encoding="utf-8")
    assert "\n## 2026-12-01 00:30 — user\n" in cc.read_text(encoding="utf-8")
    assert "\n## 23:55 — user\n" in cc.read_text(encoding="utf-8")  # the start day's turns stay bare
    assert len(read_day(tmp_path, date(2026, 11, 29))[0]) == 2 and read_day(tmp_path, date(2026, 11, 30))[0] == []


def test_a_bare_heading_after_midnight_still_rolls_over_and_a_bad_date_is_one_line() -> None:
    head = "---\nsession_id: s1\nstarted: 2026-11-29T23:50:00Z\n---\n\n"
    old = parse_transcript(head + "## 23:50 — user\nhi\n\n## 00:10 — agent\nhello\n")  # an older transcript
    assert [t.at for t in old.turns] == [datetime(2026, 11, 29, 23, 50), datetime(2026, 11, 30, 0, 10)]
    for heading, problem in (("2026-11-31 00:10", "bad date 2026-11-31"), ("2026-11-28 00:10", "before the")):
        try:
            parse_transcript(head + f"## 23:50 — user\nhi\n\n## {heading} — agent\nhello\n", "t.md")
        except ValueError as exc:
            assert str(exc).startswith("t.md:9: ") and problem in str(exc)
        else:
            raise AssertionError(f"{heading} was read")
