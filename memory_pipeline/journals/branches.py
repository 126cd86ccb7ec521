"""A/B reconstruction on `extract/NAME` branches of the knowledge repository (seed 001 §3.3, §3.4, §8.7, §10.4).

A branch reconstruction runs in a `git worktree` of the workspace repository on `extract/NAME`, checked out in
`<home>/.branches/NAME` (ignored by the workspace's .gitignore, which tracks only raw/, knowledge/ and archive/).
That directory is the run's whole workspace: its own memory.duckdb (built from scratch by the replay), Parquet,
reports and DAGSTER_HOME (`.dagster`), so the main workspace's files and store are never opened for writing.
Only main's git metadata changes: the new branch ref and, first, a `conversation:` commit of transcripts not yet
committed (so the branch sees every transcript).

`extract/*` branches whose last commit is older than 7 days are pruned (branch and worktree): they hold derived
output only, and the transcripts they were built from are immutable and stay on main, so a pruned branch can be
rebuilt at any time — except a worktree with uncommitted or untracked changes (a hand edit, review notes), which
is kept with its branch and named. `memory/extract/<label>` tags mark the commit after an extractor change (§3.4).
Everything here needs git; without it, `require_git` says so in one line.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from memory_pipeline.errors import UserError
from memory_pipeline.journals.commit_messages import KnowledgeChange, template
from memory_pipeline.journals.gitlog import _git

PREFIX = "extract/"
TAG_PREFIX = "memory/extract/"
MAX_AGE = timedelta(days=7)
BRANCHES_DIR = ".branches"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_DAY_DIR = re.compile(r"^\d{4}/\d{2}/\d{2}$")


class BranchError(UserError):
    """A bad branch name, no git, no knowledge repository, a merge that cannot be done: the message says which."""


def check_name(name: str | None) -> str:
    """NAME of `extract/NAME`: letters, digits, `.`, `_`, `-` (no `/`, no `..`), at most 64 characters."""
    if name is None or not name.strip():
        raise BranchError("a branch name is required (letters, digits, '.', '_', '-'), e.g. --branch decisions-v2")
    if not _NAME.match(name) or ".." in name or name.endswith((".", ".lock")):
        raise BranchError(
            f"bad branch name {name!r}: use letters, digits, '.', '_', '-' (no '/', no '..'), at most 64 characters"
        )
    return name


def require_git(home: Path, what: str = "reconstruct --branch") -> None:
    if shutil.which("git") is None:
        raise BranchError(f"{what} needs git on PATH (install git); everything else works without it")
    if os.environ.get("MEMORY_PIPELINE_JOURNAL_GIT", "1") == "0":
        raise BranchError(f"{what} needs the knowledge repository, and MEMORY_PIPELINE_JOURNAL_GIT=0 turns git off")
    if not (home / ".git").is_dir():
        raise BranchError(f"{home}: no knowledge repository yet (run the journal pipeline with git on first)")


def branch_dir(home: Path, name: str) -> Path:
    return home / BRANCHES_DIR / name


def _ok(home: Path, *args: str) -> str:
    done = _git(home, *args)
    if done.returncode != 0:
        first = (done.stderr.strip() or done.stdout.strip() or "?").splitlines()[0]
        raise BranchError(f"git {args[0]} failed: {first}")
    return done.stdout


def main_branch(home: Path) -> str:
    """The branch checked out in the workspace itself (`main`, or `master` for an older git's default)."""
    return _ok(home, "symbolic-ref", "--short", "HEAD").strip()


def exists(home: Path, name: str) -> bool:
    return _git(home, "rev-parse", "--verify", "--quiet", f"refs/heads/{PREFIX}{name}").returncode == 0


def commit_pending_transcripts(home: Path) -> bool:
    """Commit transcripts not yet in the repository on main (`conversation:`), so a branch sees all of them.
    Only git's metadata changes; no file of the workspace is written. True if a commit was made."""
    new = [p for p in _ok(home, "ls-files", "--others", "--exclude-standard", "raw").splitlines() if p]
    if not new:
        return False
    change = KnowledgeChange("conversation", f"{len(new)} new transcript(s)", files=tuple(new))
    with open(home / ".git-memory.lock", "a") as lock:  # the journal pipeline's commits take the same lock
        fcntl.flock(lock, fcntl.LOCK_EX)
        _ok(home, "add", "--", *new)
        _ok(home, "commit", "-q", "-m", template(change), "--", *new)
    return True


def open_worktree(home: Path, name: str) -> Path:
    """`<home>/.branches/NAME` checked out on `extract/NAME` (created from main's HEAD when new)."""
    where = branch_dir(home, name)
    _git(home, "worktree", "prune")
    if (where / ".git").is_file():
        return where
    if where.exists():
        raise BranchError(f"{where} exists and is not the worktree of {PREFIX}{name}; move it away")
    where.parent.mkdir(parents=True, exist_ok=True)
    if exists(home, name):
        _ok(home, "worktree", "add", "-q", str(where), f"{PREFIX}{name}")
    else:
        _ok(home, "worktree", "add", "-q", "-b", f"{PREFIX}{name}", str(where), "HEAD")
    return where


# what a branch run writes in its worktree besides the tracked files: derived output, never a reason to keep it
DERIVED = frozenset({"memory.duckdb", "memory.duckdb.wal", "parquet", "reports", ".dagster", "backups", "spool",
                     "index", ".git-memory.lock", ".flushes", "dagster.yaml"})  # fmt: skip


def local_changes(where: Path) -> list[str]:
    """What a worktree holds that its branch does not: modified, deleted or untracked files, and ignored files
    that are not the run's derived output (`DERIVED`, temp files) — e.g. a hand edit under knowledge/ or a
    `review-notes.md` beside it. Worktree-relative paths; [] when clean."""
    done = _git(where, "status", "--porcelain", "-z", "--ignored", "--untracked-files=all")
    if done.returncode != 0:
        return [f"(git status failed: {(done.stderr.strip() or '?').splitlines()[0]})"]
    out: list[str] = []
    entries = iter(done.stdout.split("\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":
            next(entries, None)  # the rename's source
        if code == "!!" and (path.split("/", 1)[0] in DERIVED or ".tmp" in Path(path).name):
            continue
        out.append(path.rstrip("/"))
    return out


def remove(home: Path, name: str) -> list[str]:
    """Delete `extract/NAME` and its worktree (derived output only) — unless the worktree has local changes
    (`local_changes`): then nothing is deleted and those changes are returned ([] when it was deleted)."""
    where = branch_dir(home, name)
    if (where / ".git").is_file() and (changes := local_changes(where)):
        return changes
    if where.exists():
        _git(home, "worktree", "remove", "--force", str(where))
        if where.exists():
            shutil.rmtree(where)
    _git(home, "worktree", "prune")
    if exists(home, name):
        _ok(home, "branch", "-D", f"{PREFIX}{name}")
    return []


@dataclass(frozen=True)
class Branch:
    name: str
    last_commit: datetime


@dataclass(frozen=True)
class Kept:
    """An old branch not pruned: its worktree has changes the branch does not (worktree-relative paths)."""

    branch: Branch
    changes: tuple[str, ...]

    def line(self, home: Path) -> str:
        shown = ", ".join(self.changes[:5]) + (f" and {len(self.changes) - 5} more" if len(self.changes) > 5 else "")
        return (f"kept {PREFIX}{self.branch.name} (last commit {self.branch.last_commit:%Y-%m-%d}): its worktree "
                f"{branch_dir(home, self.branch.name)} has uncommitted or untracked changes ({shown}); commit or "
                "remove them, then prune again")  # fmt: skip


def branches(home: Path) -> list[Branch]:
    out = _ok(home, "for-each-ref", "--format=%(refname:short)%09%(committerdate:unix)", f"refs/heads/{PREFIX}")
    found = []
    for line in out.splitlines():
        ref, _, stamp = line.partition("\t")
        found.append(Branch(ref.removeprefix(PREFIX), datetime.fromtimestamp(int(stamp), UTC)))
    return found


def prune(home: Path, now: datetime | None = None, max_age: timedelta = MAX_AGE) -> tuple[list[Branch], list[Kept]]:
    """Delete the `extract/*` branches (and worktrees) whose last commit is older than `max_age`; a branch whose
    worktree has uncommitted or untracked changes is kept. (pruned, kept)."""
    now = now or datetime.fromtimestamp(time.time(), UTC)
    pruned: list[Branch] = []
    kept: list[Kept] = []
    for b in branches(home):
        if now - b.last_commit <= max_age:
            continue
        changes = remove(home, b.name)
        if changes:
            kept.append(Kept(b, tuple(changes)))
        else:
            pruned.append(b)
    return pruned, kept


def diff_stat(home: Path, name: str) -> str:
    """`git diff --stat main extract/NAME -- knowledge archive` (what the branch's extractors changed)."""
    return _ok(home, "diff", "--stat", main_branch(home), f"{PREFIX}{name}", "--", "knowledge", "archive")


def changed_files(home: Path, name: str) -> list[str]:
    out = _ok(home, "diff", "--name-only", main_branch(home), f"{PREFIX}{name}", "--", "knowledge", "archive")
    return [p for p in out.splitlines() if p]


def trailers(home: Path, ref: str) -> dict[str, str]:
    """The trailers (`Key: value`) of the commit `ref`."""
    out = _ok(home, "log", "-1", "--format=%(trailers:only,unfold)", ref)
    pairs = (line.partition(": ") for line in out.splitlines() if ": " in line)
    return {k: v for k, _, v in pairs}


def adopt(home: Path, name: str, message: str) -> str:
    """Merge `extract/NAME` into the workspace's branch (`--no-ff`, `message`); the merge commit's id. A merge
    that conflicts or would overwrite uncommitted files is aborted: nothing changes, the error says why."""
    if not exists(home, name):
        raise BranchError(f"no branch {PREFIX}{name} (see `git -C {home} branch --list 'extract/*'`)")
    done = _git(home, "merge", "--no-ff", "-m", message, f"{PREFIX}{name}")
    if done.returncode != 0:
        _git(home, "merge", "--abort")
        said = [line.strip() for line in (done.stdout + "\n" + done.stderr).splitlines() if line.strip()]
        reason = next((line for line in said if line.startswith(("CONFLICT", "error:"))), said[0] if said else "?")
        raise BranchError(f"cannot merge {PREFIX}{name} into {main_branch(home)}: {reason}; nothing changed")
    return _ok(home, "rev-parse", "HEAD").strip()


def extractor_label(versions: Iterable[tuple[str, str]]) -> str:
    """`decisions@1+facts@1`: the extractor set and versions of a reconstruction (a valid tag name part)."""
    return "+".join(f"{n}@{v}" for n, v in sorted(versions))


def last_extract_tag(home: Path, ref: str = "HEAD") -> str | None:
    """The nearest `memory/extract/*` tag on `ref`'s history (`git describe`), or None."""
    done = _git(home, "describe", "--tags", "--abbrev=0", "--match", f"{TAG_PREFIX}*", ref)
    return done.stdout.strip() or None if done.returncode == 0 else None


def tag_extractors(home: Path, label: str, ref: str = "HEAD") -> str | None:
    """Tag `ref` `memory/extract/<label>` when the last such tag on its history names another extractor set;
    the new tag's name, or None (unchanged, or the tag already exists elsewhere — tags never move)."""
    last = last_extract_tag(home, ref)
    tag = f"{TAG_PREFIX}{label}"
    if last == tag or _git(home, "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}").returncode == 0:
        return None
    _ok(home, "tag", "-a", "-m", f"extract: extractor set {label}", tag, ref)
    return tag


def transcript_days(home: Path) -> tuple[date, date] | None:
    """The first and last day with a transcript folder (raw/conversations/YYYY/MM/DD), or None."""
    root = home / "raw" / "conversations"
    days = []
    for p in root.glob("*/*/*"):
        rel = p.relative_to(root).as_posix()
        if p.is_dir() and _DAY_DIR.match(rel) and any(p.glob("*.md")):
            try:
                days.append(date.fromisoformat(rel.replace("/", "-")))
            except ValueError:
                continue
    return (min(days), max(days)) if days else None


def record(where: Path, message: str) -> str:
    """The branch's closing commit in its worktree: whatever the run left uncommitted under knowledge/ and
    archive/, and the extractors and range as trailers — made even when nothing is left (`--allow-empty`), so
    the branch's tip always says how it was built. The commit's id."""
    _ok(where, "add", "-A", "--", *[d for d in ("knowledge", "archive") if (where / d).exists()])
    _ok(where, "commit", "-q", "--allow-empty", "-m", message)
    return _ok(where, "rev-parse", "HEAD").strip()


def staged_against(where: Path, base: str) -> list[str]:
    """Files under knowledge/ and archive/ that differ between `base` and the worktree (staged first)."""
    _ok(where, "add", "-A", "--", *[d for d in ("knowledge", "archive") if (where / d).exists()])
    out = _ok(where, "diff", "--cached", "--name-only", base, "--", "knowledge", "archive")
    return [p for p in out.splitlines() if p]
