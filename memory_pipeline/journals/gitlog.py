"""Optional: the workspace's transcripts and knowledge as a git repository (seed 001 §3.2, §3.4).

Only when `git` is on PATH and MEMORY_PIPELINE_JOURNAL_GIT is not "0"; the pipeline never needs git, so a failed
commit is never raised — but it is never silent either: `commit_knowledge` returns a `CommitOutcome` whose
`error` says why a commit that should have happened did not (the CLI prints it and exits non-zero, an asset logs
it). Commits carry the seed's types (conversation:, memory:, extract:, maintenance:); journals get
`memory/daily/YYYY-MM-DD` tags (never from a branch's worktree, see branches.py). Only raw/, knowledge/ and
archive/ are tracked, and each commit stages exactly the paths its caller changed (`paths`), so a hand edit or
another command's uncommitted change is never swept into it.

A `.git/index.lock` left by a git killed mid-commit makes every later git write fail: `check_index_lock`
removes it when no git process is running in the workspace (Linux: /proc; elsewhere: when it is older than
`STALE_LOCK_AGE_S`), and otherwise says what to do in one line (`GitLockError`).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.journals.commit_messages import KnowledgeChange, template

_IGNORE = "/*\n!/raw/\n!/knowledge/\n!/archive/\n!/.gitignore\n*.tmp*\n"
STALE_LOCK_AGE_S = 600  # without /proc: an index.lock this old is taken as left behind


class GitLockError(UserError):
    """`.git/index.lock` is held by a running git (or cannot be removed): the message says what to do."""


@dataclass(frozen=True)
class CommitOutcome:
    """What `commit_knowledge` did: `made` a commit; `error` — why a commit that was due did not happen (empty
    when there was nothing to commit, or git is off); `notes` — e.g. a stale index.lock removed first."""

    made: bool = False
    error: str = ""
    notes: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.made


def git_enabled() -> bool:
    return os.environ.get("MEMORY_PIPELINE_JOURNAL_GIT", "1") != "0" and shutil.which("git") is not None


def _git(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_AUTHOR_NAME": "memory-pipeline", "GIT_AUTHOR_EMAIL": "memory-pipeline@localhost",
           "GIT_COMMITTER_NAME": "memory-pipeline", "GIT_COMMITTER_EMAIL": "memory-pipeline@localhost"}
    return subprocess.run(["git", *args], cwd=home, env=env, capture_output=True, text=True, timeout=60, check=False)


def _lit(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`git` with file names taken literally (a `*` or `:` in a file name is no pattern)."""
    return _git(home, "--literal-pathspecs", *args)


def _first_line(done: subprocess.CompletedProcess[str]) -> str:
    said = (done.stderr.strip() or done.stdout.strip() or f"exit code {done.returncode}").splitlines()
    return said[0].removeprefix("fatal: ").removeprefix("error: ")


@contextmanager
def serialised(home: Path) -> Iterator[None]:
    """The workspace's commit lock: the pipeline's git writes (in any process) happen one at a time."""
    with open(Path(home) / ".git-memory.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def git_processes_in(home: Path) -> list[int] | None:
    """Ids of running `git` processes whose working directory is `home` or inside it; None without /proc."""
    proc = Path("/proc")
    if not (proc / "self" / "cwd").exists():
        return None
    root = os.path.realpath(home)
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if (entry / "comm").read_text(encoding="utf-8").strip() != "git":
                continue
            cwd = os.readlink(entry / "cwd")
        except OSError:  # ended meanwhile, or another user's process (which cannot hold our lock)
            continue
        if cwd == root or cwd.startswith(root + os.sep):
            found.append(int(entry.name))
    return sorted(found)


def _clear_stale_index_lock(home: Path) -> str:
    """With the commit lock held: remove a `.git/index.lock` no git process holds; the note to show ("" when
    there was none). GitLockError when a git process may still hold it."""
    lock = Path(home) / ".git" / "index.lock"
    if not lock.exists():
        return ""
    holders = git_processes_in(home)
    if holders:
        raise GitLockError(f"{lock} is held by a running git process (pid {', '.join(map(str, holders))}): wait "
                           "for it to finish and run this again (if it is stuck, stop it and remove the file)")
    if holders is None:
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            return ""
        if age < STALE_LOCK_AGE_S:
            raise GitLockError(f"{lock} exists ({int(age)} s old) and a git command may still hold it: if no git "
                               "is running in the workspace, remove the file and run this again")
    try:
        lock.unlink(missing_ok=True)
    except OSError as exc:
        raise GitLockError(f"{lock}: a stale lock that cannot be removed ({exc.strerror}); remove it by hand "
                           "and run this again") from None
    return f"note: removed a stale {lock} (left by an interrupted git command; no git process holds it)"


def check_index_lock(home: Path) -> str:
    """Before a command that commits: a stale `.git/index.lock` is removed (the note line to print, "" when
    there was nothing to do); one held by a running git raises GitLockError. Nothing to check without git."""
    home = Path(home)
    if not git_enabled() or not (home / ".git").is_dir():
        return ""
    with serialised(home):
        return _clear_stale_index_lock(home)


def _tracked(home: Path, paths: Sequence[str]) -> set[str]:
    done = _lit(home, "ls-files", "-z", "--", *paths)
    return set(done.stdout.split("\0")) if done.returncode == 0 else set()


def _commit_new_transcripts(home: Path) -> str:
    """Transcripts not yet in the repository, as one `conversation:` commit of exactly those files; an error."""
    listed = _lit(home, "ls-files", "-z", "--others", "--exclude-standard", "--", "raw")
    files = tuple(p for p in listed.stdout.split("\0") if p)
    if not files:
        return ""
    paths = [*files, ".gitignore"] if ".gitignore" not in _tracked(home, [".gitignore"]) else list(files)
    for args in (("add", "--", *paths),
                 ("commit", "-q", "-m", template(KnowledgeChange("conversation", f"{len(files)} new transcript(s)",
                                                                 files=files)), "--", *paths)):  # fmt: skip
        done = _lit(home, *args)
        if done.returncode != 0:
            return f"git {args[0]} of {len(files)} new transcript(s) failed: {_first_line(done)}"
    return ""


def commit_knowledge(
    home: Path, message: str, tag: str | None, log: Any = None, *, paths: Sequence[str]
) -> CommitOutcome:
    """Commit exactly `paths` (workspace-relative; written, moved or deleted files) if any of them changed —
    after a `conversation:` commit of transcripts not yet in the repository. Anything else in the tree (a hand
    edit, another command's uncommitted change) stays out of the commit."""
    if not git_enabled():
        return CommitOutcome()
    home = Path(home)
    notes: list[str] = []

    def failed(error: str) -> CommitOutcome:
        if log is not None:
            log.warning(f"git commit of the knowledge folder failed: {error}")
        return CommitOutcome(False, error, tuple(notes))

    try:
        with serialised(home):  # backfill steps in several processes commit one at a time
            if not (home / ".git").exists():
                (home / ".gitignore").write_text(_IGNORE, encoding="utf-8")
                if (done := _git(home, "init", "-q")).returncode != 0:
                    return failed(f"git init failed: {_first_line(done)}")
            try:
                note = _clear_stale_index_lock(home)
            except GitLockError as exc:
                return failed(str(exc))
            if note:
                notes.append(note)
                if log is not None:
                    log.warning(note)
            if error := _commit_new_transcripts(home):
                return failed(error)
            tracked = _tracked(home, [*paths, ".gitignore"])
            own = [*paths, *([".gitignore"] if ".gitignore" not in tracked else [])]  # written by the init above
            mine = sorted({p for p in own if (home / p).exists() or p in tracked})
            if not paths or not mine:
                return CommitOutcome(notes=tuple(notes))
            if (done := _lit(home, "add", "-A", "--", *mine)).returncode != 0:
                return failed(f"git add failed: {_first_line(done)}")
            if _lit(home, "diff", "--cached", "--quiet", "--", *mine).returncode == 0:
                return CommitOutcome(notes=tuple(notes))  # nothing of ours changed
            before = _git(home, "rev-parse", "-q", "--verify", "HEAD").stdout.strip()
            if (done := _lit(home, "commit", "-q", "-m", message, "--", *mine)).returncode != 0:
                return failed(f"git commit failed: {_first_line(done)}")
            if _git(home, "rev-parse", "-q", "--verify", "HEAD").stdout.strip() == before:
                return failed("git commit reported success but HEAD did not move")
            if tag and (home / ".git").is_dir():  # not in an extract/NAME worktree: tags are the repo's, main's
                _git(home, "tag", "-f", tag)
            return CommitOutcome(True, "", tuple(notes))
    except (OSError, subprocess.SubprocessError) as exc:
        return failed(f"{exc.__class__.__name__}: {exc}")
