"""Offline extraction from coding sessions: tables, code, help text, tool output and plans are not memories;
an explicit decision is a decision, a lesson a lesson."""

import json
from datetime import datetime
from pathlib import Path

import pytest

from memory_pipeline.journals.extractors import EXTRACTORS
from memory_pipeline.journals.imports.importer import import_paths
from memory_pipeline.journals.prose import is_proposal, prose_lines
from memory_pipeline.journals.transcript import Transcript, Turn, parse_transcript

START = datetime(2026, 10, 14, 9, 0)


def kept(text: str, role: str = "agent") -> dict[str, list[str]]:
    """kind → contents the offline extractors keep from `text` said in a one-turn session."""
    turn = Turn("09:00", role, tuple(text.split("\n")), at=START, line=8, text=text)
    t = Transcript("<test>", "s1", START, START, "test", "test", {}, (turn,))
    found = {e.kind: [c.content for c in e.find(t)] for e in EXTRACTORS.values()}
    return {kind: contents for kind, contents in found.items() if contents}


DROPPED = [
    ("table row", "| Code rendering | ✅ <pre><code> blocks render, always | ❌ inline code loses spans |"),
    ("table", "| Option | Default |\n|---|---|\n| --retries | 5, never fewer than 1 in Production |"),
    ("fenced code", "```python\ndef retry(fn, tries=6):\n    # we decided to always back off\n    return fn()\n```"),
    ("indented code", "Here:\n\n    if status == 429:\n        We decided to sleep(int(headers['Retry-After']))"),
    ("code line", "const Decision = { status: 'accepted', tries: 6 }; // we decided this in review"),
    ("usage line", "usage: deploy.py [-h] [--env ENV] [--dry-run] [--retries N] target"),
    ("option line", "  -h, --help            show this help message and exit, always"),
    ("help section", "Options:\n  --verbose   Always print every request made to Stripe.\n  --help  Show this."),
    ("stack trace", 'Traceback (most recent call last):\n  File "/srv/app/worker.py", line 88, in retry\n'
                    '    raise TimeoutError("Stripe did not answer in 30 s")\nTimeoutError: Stripe did not answer'),
    ("JS stack", "    at Object.<anonymous> (/home/dev/app/src/index.js:42:13)"),
    ("tool result", "Tool result: Found 3 files\nsrc/payments/retry.py\ntests/test_webhooks.py"),
    ("lint output", "src/payments/retry.py:41:5: F841 Local variable `delay` is assigned to but never used"),
    ("JSON", '{"id": "evt_1Nq2", "type": "invoice.paid", "attempts": 6, "decision": "retry", "livemode": false}'),
    ("file listing", "-rw-r--r--  1 dev staff 2048 Oct 14 09:12 README.md\ndrwxr-xr-x  5 dev staff 160 Oct 14 lib"),
    ("HTML", '<div class="alert"><p>We decided to always show the banner in Production</p></div>'),
    ("plan of play", "Let's start with the normal game of chess and then we will try the variant with 960 openings."),
    ("plan", "I'll start by reading payments/retry.py and then we will run the tests on Python 3.12."),
    ("pytest summary", "============================= 12 passed, 1 failed in 3.42s =============================="),
]


@pytest.mark.parametrize("text", [t for _, t in DROPPED], ids=[name for name, _ in DROPPED])
def test_coding_session_noise_is_not_a_memory(text: str) -> None:
    assert kept(text) == {}


KEPT = [
    ("## Webhook retries\n\nDecided: exponential backoff, 6 tries, capped at 60 s between attempts.", "decision",
     "Webhook retries: exponential backoff, 6 tries, capped at 60 s between attempts."),
    ("Decision: feature flags live in config/flags.toml, not in environment variables.", "decision",
     "Feature flags live in config/flags.toml, not in environment variables."),
    ("Decided: migrations run in a separate job before the deploy, never at app startup.", "decision",
     "Migrations run in a separate job before the deploy, never at app startup."),
    ("We decided against Redis for the rate limiter; the token bucket stays in Postgres.", "decision",
     "We decided against Redis for the rate limiter; the token bucket stays in Postgres."),
    ("Lesson: always run the migration against a copy of production data before merging.", "lesson",
     "Always run the migration against a copy of production data before merging."),
    ("Turns out pytest-xdist reorders fixtures, so the shared tmp directory has to be per worker.", "lesson",
     "Turns out pytest-xdist reorders fixtures, so the shared tmp directory has to be per worker."),
    ("The payments API returns 429 with a Retry-After header of 30 seconds under load.", "fact",
     "The payments API returns 429 with a Retry-After header of 30 seconds under load."),
]


@pytest.mark.parametrize(("text", "kind", "content"), KEPT, ids=[k[0][:40] for k in KEPT])
def test_decisions_lessons_and_facts_are_kept_as_what_they_are(text: str, kind: str, content: str) -> None:
    assert kept(text) == {kind: [content]}


def test_prose_around_noise_is_still_read() -> None:
    text = ("I ran the suite:\n\n```\n$ pytest -q\n12 passed\n```\n\n| a | b |\n|---|---|\n\n"
            "Decided: the webhook worker retries 6 times, capped at 60 s between attempts.")
    assert kept(text) == {"decision": ["The webhook worker retries 6 times, capped at 60 s between attempts."]}
    assert list(prose_lines("- Decided: keep it\n    - nested item\n    code = 1")) == ["- Decided: keep it",
                                                                                  "- nested item"]


@pytest.mark.parametrize(("sentence", "proposal"), [
    ("Let's start with the normal game of chess.", True),
    ("I'll run the tests again.", True),
    ("Maybe we should switch to httpx later.", True),
    ("Letters from the bank arrive on Mondays.", False),
    ("We decided to drop Python 3.9.", False),
])  # fmt: skip
def test_proposals_are_told_from_decisions(sentence: str, proposal: bool) -> None:
    assert is_proposal(sentence) is proposal


REPLY = """Here's the comparison:

| Code rendering | ✅ <pre><code> blocks | ❌ inline spans |
|---|---|---|
| Tables | ✅ always | ✅ always |

```python
def retry(fn, tries=6):
    # we decided: never retry a 400
    return fn()
```

**Webhook retry policy**

Decided: exponential backoff, 6 tries, capped at 60 s between attempts.

Lesson learned: the provider's sandbox never sends Retry-After, so the tests must fake it.

Let's start with the normal game of chess and then we will try the variant."""


def test_a_claude_code_reply_through_the_import_keeps_its_decision_and_lesson_only(tmp_path: Path) -> None:
    base = {"sessionId": "11111111-2222-4333-8444-555555555555", "cwd": "/srv/app", "isSidechain": False}
    records = [
        {**base, "type": "user", "uuid": "u1", "timestamp": "2026-10-14T09:00:00.000Z",
         "message": {"role": "user", "content": "Add backoff to the webhook retries."}},
        {**base, "type": "assistant", "uuid": "u2", "parentUuid": "u1", "timestamp": "2026-10-14T09:01:00.000Z",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": REPLY}]}},
    ]  # fmt: skip
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "session.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert import_paths([tmp_path / "src"], tmp_path / "ws").errors == []
    [path] = (tmp_path / "ws").rglob("*.md")
    t = parse_transcript(path.read_text(encoding="utf-8"), path)
    found = {e.kind: [c.content for c in e.find(t)] for e in EXTRACTORS.values()}
    assert {kind: contents for kind, contents in found.items() if contents} == {
        "decision": ["Webhook retry policy: exponential backoff, 6 tries, capped at 60 s between attempts."],
        "lesson": ["Webhook retry policy: the provider's sandbox never sends Retry-After, so the tests must fake it."],
    }
