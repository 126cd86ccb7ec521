"""The runs an import launches: its days in as few ranged runs as the transcripts allow."""

from datetime import date

from memory_pipeline.journals.imports.cli import bridged, runs_of_days


def test_days_apart_are_one_run_when_the_days_between_hold_no_transcripts() -> None:
    days = [date(2026, 10, 13), date(2026, 10, 15), date(2026, 10, 18), date(2026, 10, 21)]
    spans = runs_of_days(days)
    assert len(spans) == 4
    assert bridged(spans, lambda d: d in days) == [(date(2026, 10, 13), date(2026, 10, 21))]


def test_a_day_between_with_transcripts_of_its_own_keeps_the_runs_apart() -> None:
    days = [date(2026, 10, 13), date(2026, 10, 15), date(2026, 10, 18)]
    untouched = date(2026, 10, 17)  # has sessions this import did not change: not extracted again
    assert bridged(runs_of_days(days), lambda d: d in days or d == untouched) == [
        (date(2026, 10, 13), date(2026, 10, 15)),
        (date(2026, 10, 18), date(2026, 10, 18)),
    ]
