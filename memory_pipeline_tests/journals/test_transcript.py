from datetime import date, datetime
from pathlib import Path

import pytest

from memory_pipeline.journals.sample_transcripts import generate_sessions
from memory_pipeline.journals.transcript import (
    TranscriptError,
    Turn,
    format_transcript,
    parse_transcript,
    read_day,
    render,
)

SEED_PATH = "raw/conversations/2026/02/16/1845-ses_a1b2c3d4-autopoiesis-restructuring.md"
SEED_EXAMPLE = """---
session_id: ses_a1b2c3d4
started: 2026-02-16T18:45:00Z
ended: 2026-02-16T19:32:00Z
model: claude-opus-4.6
channel: webchat
topic: autopoiesis restructuring
tags: [coding, architecture, git]
tokens_in: 45230
tokens_out: 12840
knowledge_changes:
  - path: knowledge/projects/autopoiesis/context.md
    action: updated
    summary: Added migration plan from SQLite to files
  - path: knowledge/journal/2026-02-16.md
    action: appended
    summary: Logged architecture decision
---

# Autopoiesis Restructuring

## 18:45 — user
Read all open issues and give me a summary.

## 18:45 — agent
> [tool:exec] gh issue list --repo autopoiesis --state open → 12 results

Here are all 12 open issues:

1. **#34** — Migrate memory from SQLite to files
2. **#35** — Implement conversation serialization

## 18:52 — agent [memory]
> [knowledge:updated] knowledge/projects/autopoiesis/context.md — added migration plan

## 19:30 — user
> [attachment:attachments/2026-02-16/board.png] whiteboard photo
That's a wrap. Good session.
"""


def test_the_seed_example_parses_with_every_field_and_round_trips() -> None:
    t = parse_transcript(SEED_EXAMPLE, SEED_PATH)
    assert (t.session_id, t.slug, t.title) == ("ses_a1b2c3d4", "autopoiesis-restructuring", "Autopoiesis Restructuring")
    assert t.started == datetime(2026, 2, 16, 18, 45) and t.ended == datetime(2026, 2, 16, 19, 32)
    assert t.tags == ("coding", "architecture", "git") and t.frontmatter["tokens_in"] == 45230
    assert t.frontmatter["knowledge_changes"][1]["summary"] == "Logged architecture decision"
    assert [turn.role for turn in t.turns] == ["user", "agent", "agent", "user"]
    tool = t.turns[1].tools[0]
    assert (tool.tool, tool.result) == ("exec", "12 results")
    assert tool.summary == "gh issue list --repo autopoiesis --state open"
    assert t.turns[2].memory and t.turns[2].knowledge[0].path == "knowledge/projects/autopoiesis/context.md"
    assert t.turns[3].attachments[0].path == "attachments/2026-02-16/board.png"
    assert t.turns[3].text == "That's a wrap. Good session."
    assert "> [tool" not in t.text and "user: Read all open issues" in t.text
    assert render(t) == SEED_EXAMPLE


def test_every_sample_transcript_round_trips_byte_for_byte() -> None:
    for path, text in generate_sessions():
        t = parse_transcript(text, str(path))
        assert render(t) == text
        again = parse_transcript(render(t), str(path))
        assert again == t


def test_structured_turns_survive_format_and_parse() -> None:
    turns = [Turn("23:58", "user", ("late question",)), Turn("00:03", "agent", ("<!-- dia_id: D1:2 -->", "answer"))]
    text = format_transcript({"session_id": "ses_x", "started": "2026-03-01T23:58:00Z"}, "Late", turns)
    t = parse_transcript(text, "raw/conversations/2026/03/01/2358-ses_x-late.md")
    assert t.turns[1].at == datetime(2026, 3, 2, 0, 3)  # crossed midnight
    assert t.turns[1].ref == "D1:2" and t.turns[1].text == "answer"
    assert t.ended == datetime(2026, 3, 2, 0, 3)


GOOD_HEAD = "---\nsession_id: ses_ok\nstarted: 2026-02-16T18:45:00Z\n---\n\n# T\n\n"


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("", 1, "missing YAML frontmatter"),
        ("session_id: x\n", 1, "missing YAML frontmatter"),
        ("---\nsession_id: ses_ok\n", 1, "never closed"),
        ("---\nsession_id: [unclosed\n---\n## 10:00 — user\nhi\n", 2, "invalid YAML"),
        ("---\n- a list\n---\n## 10:00 — user\nhi\n", 2, "must be a mapping"),
        ("---\nstarted: 2026-02-16T18:45:00Z\n---\n## 10:00 — user\nhi\n", 2, "'session_id' is required"),
        ("---\nsession_id: ses_ok\nstarted: yesterday\n---\n## 10:00 — user\nhi\n", 3, "not an ISO-8601"),
        ("---\nsession_id: ses_ok\nstarted: 2026-02-16T18:45:00Z\nended: 2026-02-16T17:00:00Z\n---\n"
         "## 18:45 — user\nx\n", 4, "before 'started'"),
        ("---\nsession_id: ses_ok\nstarted: 2026-02-16T18:45:00Z\ntags: nope\n---\n## 18:45 — user\nx\n", 4,
         "expected a list"),
        ("---\nsession_id: ses_ok\nstarted: 2026-02-16T18:45:00Z\nsalience: high\n---\n## 18:45 — user\nx\n", 4,
         "'salience' must be a number"),
        (GOOD_HEAD, 8, "no turns"),
        (GOOD_HEAD + "stray text\n## 18:45 — user\nhi\n", 8, "text before the first turn"),
        (GOOD_HEAD + "## 18:45 - user\nhi\n", 8, "bad turn heading"),
        (GOOD_HEAD + "## 25:10 — user\nhi\n", 8, "bad time 25:10"),
        (GOOD_HEAD + "## 18:45 — robot\nhi\n", 8, "unknown role 'robot'"),
        (GOOD_HEAD + "## 18:45 — agent\nok\n> [tool:exec gh issue list → 3\n", 10, "malformed [tool:…] line"),
        (GOOD_HEAD + "## 18:45 — agent\n> [knowledge:updated]\n", 9, "malformed [knowledge:…] line"),
    ],
)
def test_rejects_name_the_path_and_line(text: str, line: int, problem: str) -> None:
    with pytest.raises(TranscriptError) as err:
        parse_transcript(text, "raw/conversations/2026/02/16/1845-ses_ok-x.md")
    assert err.value.line == line, str(err.value)
    assert problem in err.value.problem
    assert str(err.value).startswith(f"raw/conversations/2026/02/16/1845-ses_ok-x.md:{line}: ")


def test_file_name_must_agree_with_the_session_id() -> None:
    with pytest.raises(TranscriptError, match="differs from the file name"):
        parse_transcript(SEED_EXAMPLE, "raw/conversations/2026/02/16/1845-ses_other-autopoiesis.md")


def test_a_broken_transcript_is_reported_and_the_others_still_parse(tmp_path: Path) -> None:
    folder = tmp_path / "raw" / "conversations" / "2026" / "02" / "16"
    folder.mkdir(parents=True)
    (folder / "1845-ses_a1b2c3d4-autopoiesis-restructuring.md").write_text(SEED_EXAMPLE, encoding="utf-8")
    (folder / "2000-ses_bad-broken.md").write_text(GOOD_HEAD.replace("ses_ok", "ses_bad") + "## 20:00 — robot\nx\n")
    (folder / "2100-ses_a1b2c3d4-duplicate.md").write_text(SEED_EXAMPLE.replace("1845", "2100"), encoding="utf-8")
    parsed, rejected = read_day(tmp_path / "raw" / "conversations", date(2026, 2, 16), workspace=tmp_path)
    assert [t.session_id for t in parsed] == ["ses_a1b2c3d4"]
    assert parsed[0].path == "raw/conversations/2026/02/16/1845-ses_a1b2c3d4-autopoiesis-restructuring.md"
    problems = {Path(r.path).name: (r.line, r.problem) for r in rejected}
    assert problems["2000-ses_bad-broken.md"][0] == 8 and "unknown role" in problems["2000-ses_bad-broken.md"][1]
    assert "already used" in problems["2100-ses_a1b2c3d4-duplicate.md"][1]
