"""Optional: the workspace's transcripts and knowledge as a git repository (seed 001 §3.2, §3.4).

Only when `git` is on PATH and MEMORY_PIPELINE_JOURNAL_GIT is not "0"; a failure is logged, never raised —
the pipeline never needs git. Commits carry the seed's types (conversation:, memory:, extract:, maintenance:);
journals get `memory/daily/YYYY-MM-DD` tags (never from a branch's worktree, see branches.py). Only raw/,
knowledge/ and archive/ are tracked.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from memory_pipeline.journals.commit_messages import KnowledgeChange, template

_IGNORE = "/*\n!/raw/\n!/knowledge/\n!/archive/\n!/.gitignore\n*.tmp*\n"


def git_enabled() -> bool:
    return os.environ.get("MEMORY_PIPELINE_JOURNAL_GIT", "1") != "0" and shutil.which("git") is not None


def _git(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_AUTHOR_NAME": "memory-pipeline", "GIT_AUTHOR_EMAIL": "memory-pipeline@localhost",
           "GIT_COMMITTER_NAME": "memory-pipeline", "GIT_COMMITTER_EMAIL": "memory-pipeline@localhost"}
    return subprocess.run(["git", *args], cwd=home, env=env, capture_output=True, text=True, timeout=60, check=False)


def commit_knowledge(home: Path, message: str, tag: str | None, log: Any = None) -> bool:
    """Commit raw/, knowledge/ and archive/ if anything changed; True if a commit was made."""
    if not git_enabled():
        return False
    try:
        with open(home / ".git-memory.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # backfill steps in several processes commit one at a time
            if not (home / ".git").exists():
                (home / ".gitignore").write_text(_IGNORE, encoding="utf-8")
                if _git(home, "init", "-q").returncode != 0:
                    return False
            new = _git(home, "ls-files", "--others", "--exclude-standard", "raw").stdout.split("\n")
            if any(new):
                _git(home, "add", "raw", ".gitignore")
                files = tuple(p for p in new if p)
                _git(home, "commit", "-q", "-m", template(KnowledgeChange("conversation", f"{len(files)} new "
                                                                          "transcript(s)", files=files)))  # fmt: skip
            _git(home, "add", "-A", "knowledge", "archive") if (home / "archive").exists() else _git(
                home, "add", "-A", "knowledge"
            )
            if _git(home, "diff", "--cached", "--quiet").returncode == 0:
                return False
            done = _git(home, "commit", "-q", "-m", message)
            if done.returncode != 0:
                raise RuntimeError(done.stderr.strip())
            if tag and (home / ".git").is_dir():  # not in an extract/NAME worktree: tags are the repo's, main's
                _git(home, "tag", "-f", tag)
            return True
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        if log is not None:
            log.warning(f"git commit of the knowledge folder skipped: {exc}")
        return False
