"""Git as memory (seed 001 §3.4, §3.6): when was something first learned, how a file changed, what it said then.

The workspace's knowledge is a git repository when git is on PATH (`gitlog.commit_knowledge`): journals are
tagged `memory/daily/YYYY-MM-DD`, MEMORY.md rollups `memory/weekly/YYYY-Www`, and journal commits carry a
`Sessions:` trailer. These read it back with `git log -S`, `git log --follow` and `git show TAG:PATH`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from memory_pipeline.errors import UserError
from memory_pipeline.journals.gitlog import _git

# Each commit starts with a record separator (\x1e), so a header is never read as a file name of the commit
# before it: with --name-only git puts the next header right after the file list, with no blank line between.
_FORMAT = "%x1e%H%x1f%ad%x1f%s%x1f%(trailers:key=Sessions,valueonly,separator=%x2c )"


class HistoryError(UserError):
    """No git, no knowledge history, or an unknown tag/path; the message says which and what to do."""


@dataclass(frozen=True)
class Change:
    commit: str
    date: str
    subject: str
    sessions: str
    files: tuple[str, ...] = ()


def _require_repo(home: Path) -> None:
    if shutil.which("git") is None:
        raise HistoryError("history needs git on PATH (install git); everything else works without it")
    if not (home / ".git").exists():
        raise HistoryError(f"{home}: no knowledge history yet (git is enabled when MEMORY_PIPELINE_JOURNAL_GIT "
                           "is not 0; journals commit once the journal pipeline has run)")  # fmt: skip


def _changes(home: Path, *args: str) -> list[Change]:
    done = _git(home, "log", f"--format={_FORMAT}", "--date=iso-strict", "--name-only", *args)
    if done.returncode != 0:
        raise HistoryError(f"git log failed: {done.stderr.strip().splitlines()[0] if done.stderr.strip() else '?'}")
    out: list[Change] = []
    for record in done.stdout.split("\x1e")[1:]:
        header, _, rest = record.partition("\n")
        commit, date, subject, sessions = (header.split("\x1f") + ["", "", "", ""])[:4]
        files = tuple(line for line in rest.split("\n") if line.strip())
        out.append(Change(commit, date, subject, sessions.strip(), files))
    return out


def first_learned(home: Path, phrase: str) -> Change | None:
    """The oldest commit that added or removed `phrase` in the knowledge (`git log -S`), with its files."""
    _require_repo(home)
    if not phrase.strip():
        raise HistoryError("history: give a phrase to look for")
    changes = _changes(home, "--reverse", "-S", phrase, "--", "knowledge", "archive")
    return changes[0] if changes else None


def file_history(home: Path, path: str) -> list[Change]:
    """Every commit that changed `path` (workspace-relative), newest first, with the sessions it came from."""
    _require_repo(home)
    return _changes(home, "--follow", "--", path)


def at(home: Path, ref: str, path: str) -> str:
    """`path` as it was at tag or commit `ref` (point-in-time recall)."""
    _require_repo(home)
    done = _git(home, "show", f"{ref}:{path}")
    if done.returncode != 0:
        tags = _git(home, "tag", "--list", "memory/*").stdout.split()
        hint = f"; tags: {', '.join(tags[-5:])}" if tags else ""
        raise HistoryError(f"{path} at {ref}: not in the knowledge history{hint}")
    return done.stdout
