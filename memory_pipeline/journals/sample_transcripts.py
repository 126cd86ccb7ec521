"""Deterministic sample transcripts for the demo and tests: Helios and Matthew, seven and a half weeks.

`python -m memory_pipeline.journals.sample_transcripts data/sample` writes
`data/sample/raw/conversations/YYYY/MM/DD/*.md`. The same seed always gives byte-identical files (a test checks
the committed copy), dates are fixed (not relative to now) so the committed files never change. The people,
projects and phrasings live in `memory_pipeline/sample/transcripts.json`; this module only draws from them.
"""

from __future__ import annotations

import argparse
import random
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_pipeline.journals.transcript import Turn, format_transcript, slugify, transcript_path
from memory_pipeline.sample import parse_sample_file

SEED = 20260914
START = date(2026, 9, 14)
DAYS = 52


@dataclass(frozen=True)
class Project:
    slug: str
    tags: tuple[str, ...]
    asks: tuple[str, ...]
    findings: tuple[tuple[str, str, str], ...]  # (tool, command, result) with a fact sentence after
    facts: tuple[str, ...]
    options: tuple[tuple[str, str], ...]  # (choice, reason)
    lessons: tuple[str, ...]
    procedures: tuple[tuple[str, tuple[str, ...]], ...]
    files: tuple[str, ...]


def _project(p: dict[str, Any]) -> Project:
    return Project(
        slug=str(p["slug"]),
        tags=tuple(p["tags"]),
        asks=tuple(p["asks"]),
        findings=tuple((str(f["tool"]), str(f["command"]), str(f["result"])) for f in p["findings"]),
        facts=tuple(p["facts"]),
        options=tuple((str(o["choice"]), str(o["reason"])) for o in p["options"]),
        lessons=tuple(p["lessons"]),
        procedures=tuple((str(q["name"]), tuple(q["steps"])) for q in p["procedures"]),
        files=tuple(p["files"]),
    )


@dataclass(frozen=True)
class _Templates:
    models: tuple[str, ...]
    channels: tuple[str, ...]
    people: dict[str, tuple[str, ...]]
    projects: tuple[Project, ...]
    openers_decide: tuple[str, ...]
    decision_forms: tuple[str, ...]
    lesson_forms: tuple[str, ...]
    wraps: tuple[str, ...]


def _templates(d: dict[str, Any]) -> _Templates:
    words = ("openers_decide", "decision_forms", "lesson_forms", "wraps")
    return _Templates(
        models=tuple(d["models"]),
        channels=tuple(d["channels"]),
        people={name: tuple(traits) for name, traits in d["people"].items()},
        projects=tuple(map(_project, d["projects"])),
        **{key: tuple(d[key]) for key in words},
    )


_T = parse_sample_file("transcripts.json", _templates)
MODELS, CHANNELS, PEOPLE, PROJECTS = _T.models, _T.channels, _T.people, _T.projects


def _session_id(rng: random.Random) -> str:
    return "ses_" + "".join(rng.choice("0123456789abcdef") for _ in range(8))


def _clock(at: datetime) -> str:
    return f"{at:%H:%M}"


def generate_sessions(seed: int = SEED, start: date = START, days: int = DAYS) -> list[tuple[Path, str]]:
    """(relative path under the workspace, transcript text) for every sample session, in time order."""
    rng = random.Random(seed)
    people = list(PEOPLE)
    out: list[tuple[Path, str]] = []
    for d in range(days):
        day = start + timedelta(days=d)
        weekend = day.weekday() >= 5
        count = rng.choice((0, 1, 1) if weekend else (1, 2, 2, 2, 3))
        hours = sorted(rng.sample(range(8, 22), count))
        if d == 22:
            hours[-1] = 23  # a Tuesday whose last session runs past midnight
        for hour in hours:
            project = rng.choice(PROJECTS)
            minute = 50 if hour == 23 else rng.choice((5, 15, 30, 45, 50))
            started = datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)
            out.append(_session(rng, project, people, started))
    return out


def _session(rng: random.Random, project: Project, people: list[str], started: datetime) -> tuple[Path, str]:
    sid = _session_id(rng)
    at = started
    turns: list[Turn] = []

    def turn(role: str, lines: list[str], kind: str | None = None, gap: tuple[int, int] = (1, 6)) -> None:
        nonlocal at
        turns.append(Turn(hhmm=_clock(at), role=role, lines=tuple(lines), kind=kind))
        at += timedelta(minutes=rng.randint(*gap))

    ask = rng.choice(project.asks)
    tool, command, result = rng.choice(project.findings)
    fact = rng.choice(project.facts).format(n=rng.randint(3, 90))
    choice, reason = rng.choice(project.options)
    person = rng.choice(people)
    trait = rng.choice(PEOPLE[person])
    changes: list[dict[str, str]] = []
    turn("user", [ask])
    turn("agent", [f"> [tool:{tool}] {command} → {result}", "", f"{fact}. I checked the details below.",
                   f"The main issue is in {project.slug}: the current setup does not hold up under load."], gap=(2, 9))
    turn("user", [f"{person.split()[0]} {trait}, so keep that in mind. What do you propose?"])
    alternative = rng.choice([o for o in project.options if o[0] != choice])[0]
    turn("agent", [f"Two options: {choice}, or {alternative}.",
                   f"I recommend the first one because {reason}."], gap=(2, 8))
    turn("user", [rng.choice(_T.openers_decide)])
    decision = rng.choice(_T.decision_forms).format(choice=choice, reason=reason)
    target = rng.choice(project.files)
    turn("agent", [f"> [tool:write] {target} — recorded the decision", "", decision])
    if rng.random() < 0.6:
        lesson = rng.choice(project.lessons)
        turn("agent", [rng.choice(_T.lesson_forms).format(lesson=lesson[0].lower() + lesson[1:])])
    if rng.random() < 0.45:
        name, steps = rng.choice(project.procedures)
        turn("user", [f"Can you write down how to {name}?"])
        turn("agent", [f"To {name}:", *(f"{i}. {s[0].upper()}{s[1:]}." for i, s in enumerate(steps, 1))], gap=(3, 9))
    if rng.random() < 0.2:
        turn("user", [f"> [attachment:attachments/{started:%Y-%m-%d}/{project.slug}-screenshot.png] dashboard",
                      "Here is the dashboard from this morning."])
    turn("agent", [f"> [knowledge:updated] {target} — {choice}"], kind="memory", gap=(0, 2))
    changes.append({"path": target, "action": "updated", "summary": f"Decided to {choice}"})
    journal = f"knowledge/journal/{started:%Y-%m-%d}.md"
    changes.append({"path": journal, "action": "appended", "summary": "Logged the session"})
    turn("user", [rng.choice(_T.wraps)])
    turn("agent", [f"> [tool:write] {journal} — appended session summary"], gap=(0, 1))
    ended = at
    topic = f"{project.slug} {choice.split(',')[0]}"
    title = re.split(r"[?!]|\. ", ask)[0].rstrip(".")
    slug = slugify(f"{project.slug} {title}", 40)
    tokens_in = rng.randint(4_000, 60_000)
    meta = {
        "session_id": sid,
        "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "ended": ended.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "model": rng.choice(MODELS),
        "channel": rng.choice(CHANNELS),
        "topic": topic,
        "project": project.slug,
        "tags": list(project.tags),
        "people": [person],
        "salience": round(rng.uniform(0.2, 0.95), 2),
        "tokens_in": tokens_in,
        "tokens_out": rng.randint(tokens_in // 8, tokens_in // 3),
        "knowledge_changes": changes,
    }
    path = transcript_path(Path("raw/conversations"), started, sid, slug)
    return path, format_transcript(meta, title, turns)


def write_sample_transcripts(root: Path, seed: int = SEED) -> list[Path]:
    """Write every sample transcript under `root` (a workspace or `data/sample`); returns the paths written."""
    written = []
    for rel, text in generate_sessions(seed):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path, help="folder that receives raw/conversations/…")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    paths = write_sample_transcripts(args.root, args.seed)
    print(f"{len(paths)} transcripts under {args.root / 'raw' / 'conversations'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
