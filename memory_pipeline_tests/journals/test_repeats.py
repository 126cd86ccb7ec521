"""MEMORY.md and the journals say a decision once, with its dates; a changed one names the old."""

from datetime import date

from memory_pipeline.journals import knowledge, repeats

WORDINGS = (
    "Hire the platform contractor for six months first because the budget is approved only until March.",
    "We will hire the platform contractor for six months first, because the budget is approved only until March.",
    "Hire the platform contractor for six months first since the budget is approved only until March.",
    "Hire the platform contractor for six months first: the budget is approved only until March.",
)
DAYS = (date(2026, 10, 26), date(2026, 10, 27), date(2026, 11, 1), date(2026, 11, 2))  # two weeks
WEEK = (date(2026, 10, 25), date(2026, 10, 26), date(2026, 10, 28), date(2026, 10, 31))  # Sunday … Saturday


def week_of_journals(texts: tuple[str, ...], days: tuple[date, ...]) -> list[tuple[date, dict[str, list[str]]]]:
    other = "Split the slow integration tests into a nightly job: PR feedback should stay under five minutes."
    return [(d, {"hiring": [f"Decided: {t}"], "ci": [f"Decided: {other}"]}) for d, t in zip(days, texts, strict=True)]


def test_a_decision_reworded_on_four_days_is_one_entry_with_four_dates() -> None:
    merged = knowledge.merge_memory([], knowledge.week_entries(week_of_journals(WORDINGS, WEEK)), WEEK[-1])
    text = knowledge.memory_md_text(merged, WEEK[-1])
    hiring = [line for line in text.splitlines() if "platform contractor" in line and "active on" not in line]
    assert hiring == [f"- 2026-10-31: {WORDINGS[3]} (also 10-25, 10-26, 10-28)"]
    again = knowledge.merge_memory(knowledge.parse_memory_md(text), [], WEEK[-1])  # next week reads it back
    assert knowledge.memory_md_text(again, WEEK[-1]) == text


def test_repeats_across_weeks_keep_every_date() -> None:
    first = knowledge.merge_memory([], knowledge.week_entries(week_of_journals(WORDINGS[:2], DAYS[:2])), DAYS[1])
    text = knowledge.memory_md_text(first, DAYS[1])
    later = knowledge.week_entries(week_of_journals(WORDINGS[2:], DAYS[2:]))
    text = knowledge.memory_md_text(knowledge.merge_memory(knowledge.parse_memory_md(text), later, DAYS[3]), DAYS[3])
    assert f"- 2026-11-02: {WORDINGS[3]} (also 10-26, 10-27, 11-01)" in text.splitlines()


def test_a_changed_decision_replaces_the_old_one_which_stays_visible() -> None:
    changed = "Hire the platform contractor for twelve months: the budget is approved until September."
    entries = knowledge.week_entries(week_of_journals((WORDINGS[0], changed), DAYS[:2]))
    text = knowledge.memory_md_text(knowledge.merge_memory([], entries, DAYS[1]), DAYS[1])
    lines = [line for line in text.splitlines() if "platform contractor" in line and "active on" not in line]
    assert lines == [f"- 2026-10-27: {changed} (supersedes 10-26: {WORDINGS[0]})"]
    (entry,) = [e for e in knowledge.parse_memory_md(text) if e.text == changed]
    assert entry.supersedes == f"2026-10-26: {WORDINGS[0]}"


def test_different_decisions_stay_apart() -> None:
    kept = repeats.collapse(
        [
            repeats.Dated(DAYS[0], WORDINGS[0]),
            repeats.Dated(DAYS[1], "Archive journals after 90 days instead of deleting them."),
            repeats.Dated(DAYS[2], "Use Postgres advisory locks for the job queue."),
        ]
    )
    assert len(kept) == 3 and all(not k.earlier and not k.supersedes for k in kept)


def test_a_journal_says_a_repeated_decision_once() -> None:
    items = [
        knowledge.JournalItem("hiring", "decision", t, (f"2026-10-26T0{i}:00", "s", "decision", t))
        for i, t in enumerate(WORDINGS)
    ]
    text = knowledge.journal_text(date(2026, 10, 26), ["s"], items)
    assert [line for line in text.splitlines() if line.startswith("- ")] == [f"- Decided: {WORDINGS[3]}"]


def test_the_200_line_cap_still_holds_with_repeats_and_many_decisions() -> None:
    many = [
        knowledge.Entry("Key Decisions", date(2026, 3, 1), f"Adopt tool number {i} for team {i}", f"t{i}")
        for i in range(300)
    ]
    many += [knowledge.Entry("Key Decisions", DAYS[i], WORDINGS[i], WORDINGS[i].lower()) for i in range(4)]
    lessons = [knowledge.Entry("Lessons Learned", date(2026, 3, 2), f"Lesson {i}: check {i} twice", f"l{i}")
               for i in range(200)]  # fmt: skip
    merged = knowledge.merge_memory([], many + lessons, date(2026, 11, 7))
    text = knowledge.memory_md_text(merged, date(2026, 11, 7))
    assert knowledge.line_count(text) <= knowledge.MEMORY_LINE_CAP
    assert f"line_count: {knowledge.line_count(text)}" in text


def test_decisions_about_distinct_subjects_are_not_versions_of_one_another() -> None:
    decisions = [f"Decided: worker w{i} times out after {30 + 15 * (i % 3)} seconds" for i in range(5000)]
    assert repeats.collapse_bullets(decisions) == decisions  # none kept over another worker's
    kept = repeats.collapse(repeats.Dated(DAYS[i % 4], t) for i, t in enumerate(decisions))
    assert sorted(k.text for k in kept) == sorted(decisions) and not any(k.supersedes for k in kept)


def test_a_changed_decision_about_one_subject_still_supersedes_among_others() -> None:
    bullets = [
        "Decided: worker w1 times out after 30 seconds",
        "Decided: worker w2 times out after 30 seconds",
        "Decided: worker w1 times out after 90 seconds",
    ]
    assert repeats.collapse_bullets(bullets) == [
        "Decided: worker w1 times out after 90 seconds (supersedes: Decided: worker w1 times out after 30 seconds)",
        "Decided: worker w2 times out after 30 seconds",
    ]
