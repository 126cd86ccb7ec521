"""Sessions written straight into the store's `sessions` table (migration 10), as the journals domain would."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from memory_pipeline.evaluation.locomo_transcripts import default_locomo_path
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.db import utcnow

START = datetime(2026, 1, 1, 10, 0)


@dataclass
class Session:
    session_id: str
    started_at: datetime
    text: str
    title: str = ""
    salience: float | None = None
    tags: list[str] = field(default_factory=list)
    participants: list[str] = field(default_factory=lambda: ["user", "agent"])
    frontmatter: dict = field(default_factory=dict)
    turn_count: int = 4


def session(i: int, text: str | None = None, *, start: datetime = START, **kw: object) -> Session:
    """The i-th (1-based) session, one per day from `start`."""
    body = text or (
        f"We talked about the garden and the tomato seedlings on day {i}. "
        f"I was happy the basil finally sprouted. We planned the watering schedule for week {i}."
    )
    return Session(f"s{i:03d}", start + timedelta(days=i - 1), body, kw.pop("title", f"Session {i}"), **kw)  # type: ignore[arg-type]


def insert_sessions(home: Path, sessions: Sequence[Session]) -> MemoryStore:
    home.mkdir(parents=True, exist_ok=True)
    store = MemoryStore(home / "memory.duckdb")
    store.migrate()
    with store.transaction() as con:
        for s in sessions:
            con.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    s.session_id,
                    s.started_at.date(),
                    s.started_at,
                    s.started_at + timedelta(minutes=30),
                    s.title,
                    s.title.lower().replace(" ", "-"),
                    f"raw/conversations/{s.started_at:%Y/%m/%d/%H%M}-{s.session_id}.md",
                    s.participants,
                    s.tags,
                    s.turn_count,
                    s.text,
                    s.salience,
                    json.dumps(s.frontmatter),
                    utcnow(),
                ],
            )
    return store


LOCOMO = default_locomo_path()


def locomo_sessions(sample: dict) -> list[Session]:
    """One Session per non-empty LoCoMo session (our own loader: see the report for the journals path)."""
    conv = sample["conversation"]
    out = []
    n = 1
    while f"session_{n}_date_time" in conv:
        turns = conv.get(f"session_{n}") or []
        if turns:
            started = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
            text = "\n".join(f"{t['speaker']}: {t['text']}" for t in turns)
            out.append(
                Session(
                    f"{sample['sample_id']}-s{n:02d}",
                    started,
                    text,
                    f"{sample['sample_id']} session {n}",
                    participants=[conv["speaker_a"], conv["speaker_b"]],
                    turn_count=len(turns),
                )
            )
        n += 1
    return out
