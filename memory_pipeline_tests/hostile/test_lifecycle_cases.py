"""Hostile lifecycle cases (lost or silently not written): branch pruning, an interrupted flush, a
stale `.git/index.lock`, what a maintenance commit holds, and two monthly runs at once.

Every case: a set-up on a known git workspace, the command(s), the exit code, the one line the output must hold,
and the files, commits and store rows before and after. Fault injection (MEMORY_PIPELINE_CRASH_AT) kills a flush
at an exact point — no timing-based kill; each child process is waited for with a bounded timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from memory_pipeline.cli import main
from memory_pipeline.journals import branches
from memory_pipeline.journals.gitlog import commit_knowledge
from memory_pipeline.settings import REPO_ROOT
from memory_pipeline.store import MemoryStore

TODAY = date(2026, 11, 20)
OLD = "knowledge/projects/old-unread.md"  # unread for 90 days: prune's one candidate
MEMORY = "knowledge/memory/MEMORY.md"
OLD_JOURNALS = ("knowledge/journal/2026-07-01.md", "knowledge/journal/2026-08-02.md")  # monthly 2026-10 archives
SEED = {
    OLD: "# Old project\nThe migration to Kafka was cancelled.\n",
    "knowledge/projects/fresh.md": "# New project\nWe ship the fleet.\n",
    MEMORY: "---\ntype: memory\n---\n\n# Core Memory\n\n## Key Decisions\n- 2026-10-01: Use Postgres\n",
    **{j: f"---\ntype: journal\ndate: {j[-13:-3]}\n---\n\n## {j[-13:-3]}\n- Rotated the keys\n" for j in OLD_JOURNALS},
}
PRUNE = ("prune", "--as-of", TODAY.isoformat())
MONTHLY = ("monthly", "--month", "2026-10")
RUN = "from memory_pipeline.cli import main; import sys; sys.exit(main(sys.argv[1:]))"
CHILD_TIMEOUT_S = 600  # the longest a child process (one journal run) may take before the test fails: minutes on
# two busy cores (a Python + Dagster start each), a bound and not a target


def git(home: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=home, capture_output=True, text=True, check=True,
                          env={**os.environ, **(env or {})})  # fmt: skip
    return done.stdout


def head(home: Path) -> str:
    return git(home, "rev-parse", "HEAD").strip()


def status(home: Path) -> list[str]:
    return sorted(git(home, "status", "--porcelain", "--untracked-files=all").splitlines())


def last_commit_files(home: Path) -> list[str]:
    return sorted(p for p in git(home, "show", "--no-renames", "--name-only", "--format=", "HEAD").splitlines() if p)


def tree(home: Path, *folders: str) -> dict[str, bytes]:
    return {p.relative_to(home).as_posix(): p.read_bytes() for f in folders for p in sorted((home / f).rglob("*"))
            if p.is_file()}  # fmt: skip


def run(args: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    lines = (out + err).splitlines()
    assert not any("Traceback" in ln or "Stack Trace" in ln for ln in lines), out + err
    return code, lines


def has(lines: list[str], text: str) -> bool:
    return any(text in ln for ln in lines)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git workspace: the SEED files, committed, OLD's clock 90 days back."""
    home = tmp_path / "ws"
    for rel, text in SEED.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text, encoding="utf-8")
    stamp = datetime.combine(TODAY - timedelta(days=90), datetime.min.time(), UTC).timestamp()
    os.utime(home / OLD, (stamp, stamp))
    for key, value in {"MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(tmp_path / "dagster_home"),
                       "MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256", "MEMORY_PIPELINE_JOURNAL_GIT": "1"}.items():
        monkeypatch.setenv(key, value)  # fmt: skip
    for key in ("ANTHROPIC_API_KEY", "MEMORY_PIPELINE_LLM", "MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS"):
        monkeypatch.delenv(key, raising=False)
    assert commit_knowledge(home, "memory: seed", tag=None, paths=list(SEED))
    return home


# --- 1. reconstruct --prune-branches keeps a worktree with work in it -------------------------------------------


def old_worktree(home: Path, name: str = "old", days_ago: int = 9) -> Path:
    """extract/NAME whose last commit is `days_ago` days back, checked out in its worktree, with derived output."""
    stamp = (datetime.now(UTC) - timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%S+0000")
    env = {"GIT_COMMITTER_DATE": stamp, "GIT_AUTHOR_DATE": stamp, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}  # fmt: skip
    commit = git(home, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", f"extract: {name}", env=env).strip()
    git(home, "branch", f"extract/{name}", commit)
    where = branches.open_worktree(home, name)
    for rel in ("memory.duckdb", "reports/run.json", ".dagster/history/runs.db", "parquet/x/2026-09-15.parquet"):
        (where / rel).parent.mkdir(parents=True, exist_ok=True)
        (where / rel).write_bytes(b"derived")
    return where


def edit(rel: str, text: str | None) -> Callable[[Path], None]:
    """Set-up in the worktree: write `rel` (None: delete it)."""

    def setup(where: Path) -> None:
        if text is None:
            (where / rel).unlink()
        else:
            (where / rel).parent.mkdir(parents=True, exist_ok=True)
            (where / rel).write_text(text, encoding="utf-8")

    return setup


@dataclass(frozen=True)
class BranchCase:
    name: str
    setup: Callable[[Path], None]
    message: str
    kept: bool


BRANCH_CASES = [
    BranchCase("hand edit to a tracked file", edit(MEMORY, "# edited by hand on the branch\n"),
               "kept extract/old (last commit ", kept=True),  # fmt: skip
    BranchCase("untracked review notes beside the knowledge", edit("review-notes.md", "- journal 09-15 is wrong\n"),
               "has uncommitted or untracked changes (review-notes.md); commit or remove them, then prune again",
               kept=True),  # fmt: skip
    BranchCase("untracked file under knowledge/", edit("knowledge/people/new.md", "# Bo\n"),
               "has uncommitted or untracked changes (knowledge/people/new.md)", kept=True),  # fmt: skip
    BranchCase("a tracked file deleted by hand", edit(OLD, None), f"uncommitted or untracked changes ({OLD})",
               kept=True),  # fmt: skip
    BranchCase("only the run's derived output", lambda where: None, "pruned extract/old (last commit ", kept=False),
]


@pytest.mark.parametrize("case", BRANCH_CASES, ids=lambda c: c.name)
def test_prune_branches_case(case: BranchCase, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    where = old_worktree(home)
    case.setup(where)
    before = tree(where, ".")
    tip = git(home, "rev-parse", "extract/old")
    code, lines = run(("reconstruct", "--prune-branches"), capsys)
    assert code == 0 and has(lines, case.message), lines
    if case.kept:
        assert has(lines, "kept extract/old") and has(lines, f"its worktree {where} has uncommitted")
        assert sum("kept extract/old" in ln for ln in lines) == 1
        assert has(lines, "0 extract/* branch(es) older than 7 days pruned; 1 kept (1 of them old, with uncommitted")
        assert tree(where, ".") == before and git(home, "rev-parse", "extract/old") == tip  # nothing lost
    else:
        assert has(lines, "1 extract/* branch(es) older than 7 days pruned; 0 kept")
        assert not where.exists() and git(home, "branch", "--list", "extract/*") == ""


# --- 3. a stale .git/index.lock; a commit git refuses -------------------------------------------------------------


def stale_lock(home: Path) -> Callable[[], None]:
    (home / ".git" / "index.lock").write_bytes(b"")
    return lambda: None


def held_lock(home: Path) -> Callable[[], None]:
    """A running git in the workspace (waiting on its stdin) and an index.lock: the lock may be that git's."""
    proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=home, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL)  # fmt: skip
    (home / ".git" / "index.lock").write_bytes(b"")

    def stop() -> None:
        proc.kill()
        proc.wait(timeout=10)  # bounded: the process we started, killed

    return stop


def refusing_hook(home: Path) -> Callable[[], None]:
    hook = home / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text("#!/bin/sh\necho 'pre-commit: refused by a hook' >&2\nexit 1\n", encoding="utf-8")
    hook.chmod(0o755)
    return lambda: None


@dataclass(frozen=True)
class LockCase:
    name: str
    args: tuple[str, ...]
    setup: Callable[[Path], Callable[[], None]]
    exit_code: int
    message: str
    committed: tuple[str, ...]  # the new commit's files; () = no commit (HEAD must not move)
    success: str  # the command's success text: present iff a commit was made
    written: bool  # the command's files are moved (even when the commit then fails)


PRUNED = tuple(sorted((OLD, "archive/projects/old-unread.md")))
ARCHIVED = tuple(sorted([*OLD_JOURNALS, *(j.replace("knowledge/", "archive/") for j in OLD_JOURNALS)]))
LOCK_CASES = [
    LockCase("prune, stale index.lock", PRUNE, stale_lock, 0, "note: removed a stale ", PRUNED,
             "1 of 2 knowledge file(s) moved to archive/", True),  # fmt: skip
    LockCase("monthly, stale index.lock", MONTHLY, stale_lock, 0, "(left by an interrupted git command; no git "
             "process holds it)", ARCHIVED, "2026-10: 2 journal(s) archived", True),  # fmt: skip
    LockCase("prune, index.lock held by a running git", PRUNE, held_lock, 2, "index.lock is held by a running git "
             "process (pid ", (), "moved to archive/", False),  # fmt: skip
    LockCase("monthly, index.lock held by a running git", MONTHLY, held_lock, 2, "wait for it to finish and run "
             "this again", (), "journal(s) archived", False),  # fmt: skip
    LockCase("prune, a commit git refuses", PRUNE, refusing_hook, 1, "error: 1 knowledge file(s) moved to archive/ "
             "but not committed: git commit failed: pre-commit: refused by a hook", (), "(still searchable",
             True),  # fmt: skip
    LockCase("monthly, a commit git refuses", MONTHLY, refusing_hook, 1, "error: 2026-10: files changed but not "
             "committed: git commit failed: pre-commit: refused by a hook", (), "moved lines in archive/",
             True),  # fmt: skip
]


@pytest.mark.parametrize("case", LOCK_CASES, ids=lambda c: c.name)
def test_index_lock_case(case: LockCase, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stop = case.setup(home)
    before, start = tree(home, "knowledge", "archive"), head(home)
    try:
        code, lines = run(case.args, capsys)
    finally:
        stop()
    assert code == case.exit_code and has(lines, case.message), lines
    assert has(lines, case.success) == bool(case.committed)  # never a success text without its commit
    if case.committed:
        assert head(home) != start and last_commit_files(home) == sorted(case.committed)
        assert not (home / ".git" / "index.lock").exists()
    else:
        assert head(home) == start
    assert (tree(home, "knowledge", "archive") != before) == case.written  # held: refused before writing anything
    if case.written:  # moved, never lost: every seed file is in knowledge/ or archive/
        after = tree(home, "knowledge", "archive")
        assert all(after.get(rel, after.get(rel.replace("knowledge/", "archive/", 1))) == SEED[rel].encode()
                   for rel in SEED if rel != MEMORY)  # fmt: skip


# --- 4. a maintenance commit holds exactly what it changed ----------------------------------------------------


def hand_edit(home: Path) -> None:
    (home / MEMORY).write_text(SEED[MEMORY] + "- 2026-11-19: a hand-written decision\n", encoding="utf-8")


def staged_hand_edit(home: Path) -> None:
    hand_edit(home)
    git(home, "add", MEMORY)


def untracked_note(home: Path) -> None:
    (home / "knowledge/people/new.md").parent.mkdir(parents=True, exist_ok=True)
    (home / "knowledge/people/new.md").write_text("# Bo\n", encoding="utf-8")


def prune_without_git(home: Path) -> None:
    os.environ["MEMORY_PIPELINE_JOURNAL_GIT"] = "0"  # restored by the fixture's monkeypatch
    try:
        assert main(list(PRUNE)) == 0
    finally:
        os.environ["MEMORY_PIPELINE_JOURNAL_GIT"] = "1"


@dataclass(frozen=True)
class ScopeCase:
    name: str
    setup: Callable[[Path], None]
    args: tuple[str, ...]
    message: str
    committed: tuple[str, ...]
    left: tuple[str, ...]  # `git status --porcelain` after: what is not the command's stays out of its commit


SCOPE_CASES = [
    ScopeCase("prune with a hand edit to MEMORY.md", hand_edit, PRUNE, "1 of 2 knowledge file(s) moved", PRUNED,
              (f" M {MEMORY}",)),  # fmt: skip
    ScopeCase("prune with the hand edit staged", staged_hand_edit, PRUNE, "1 of 2 knowledge file(s) moved", PRUNED,
              (f"M  {MEMORY}",)),  # fmt: skip
    ScopeCase("prune with an untracked note", untracked_note, PRUNE, "1 of 3 knowledge file(s) moved", PRUNED,
              ("?? knowledge/people/new.md",)),  # fmt: skip
    ScopeCase("monthly after a prune with git off", prune_without_git, MONTHLY, "2026-10: 2 journal(s) archived",
              ARCHIVED, (f" D {OLD}", "?? archive/projects/old-unread.md")),  # fmt: skip
    ScopeCase("monthly with a hand edit to MEMORY.md", hand_edit, MONTHLY, "2026-10: 2 journal(s) archived",
              ARCHIVED, (f" M {MEMORY}",)),  # fmt: skip
]


@pytest.mark.parametrize("case", SCOPE_CASES, ids=lambda c: c.name)
def test_commit_scope_case(case: ScopeCase, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case.setup(home)
    start = head(home)
    kept = {rel: (home / rel).read_bytes() for rel in (MEMORY, "knowledge/people/new.md") if (home / rel).exists()}
    code, lines = run(case.args, capsys)
    assert code == 0 and has(lines, case.message), lines
    assert git(home, "rev-list", "--count", f"{start}..HEAD").strip() == "1"
    assert last_commit_files(home) == sorted(case.committed)
    assert status(home) == sorted(case.left)
    assert all((home / rel).read_bytes() == data for rel, data in kept.items())  # the hand's files untouched


# --- 5. monthly twice: a run that changed nothing never replaces the month's report ------------------------------


def month_reports(home: Path) -> tuple[dict, list[dict]]:
    folder = home / "reports" / "monthly"
    month = json.loads((folder / "2026-10.json").read_text(encoding="utf-8"))
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((folder / "2026-10").glob("*.json"))]
    return month, runs


def test_a_second_monthly_that_finds_nothing_keeps_the_month_report(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, first = run(MONTHLY, capsys)
    assert code == 0 and has(first, "2 journal(s) archived") and has(first, "the month's: reports/monthly/2026-10.json")
    month, runs = month_reports(home)
    assert month["journals_archived"] == 2 and len(runs) == 1 and runs[0] == month
    code, second = run(MONTHLY, capsys)
    assert code == 0 and has(second, "2026-10: 0 journal(s) archived") and not has(second, "the month's")
    after, runs = month_reports(home)
    assert after == month  # the no-op run's report did not overwrite the one that did the work
    assert sorted(r["journals_archived"] for r in runs) == [0, 2] and len({r["run"] for r in runs}) == 2


@pytest.mark.slow  # two CLI processes, each importing Dagster (~10 s)
def test_two_monthly_runs_at_once_keep_the_report_of_the_one_that_did_the_work(home: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", RUN, *MONTHLY], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]  # fmt: skip
    try:  # read one after the other: a run blocked on a full pipe meanwhile goes on when its turn comes
        outs = [p.communicate(timeout=CHILD_TIMEOUT_S) for p in procs]  # bounded: each run's exit
    finally:
        for p in procs:  # stopped whatever happened (a timeout used to leave them running)
            if p.poll() is None:
                p.kill()
                p.wait(timeout=60)
    assert [p.returncode for p in procs] == [0, 0], outs
    month, runs = month_reports(home)
    assert len(runs) == 2 and sum(r["journals_archived"] for r in runs) == 2  # each journal archived once
    assert month["journals_archived"] == 2 and month in runs
    archived = {j: (home / j.replace("knowledge/", "archive/")).read_text(encoding="utf-8") for j in OLD_JOURNALS}
    assert archived == {j: SEED[j] for j in OLD_JOURNALS}


# --- 2. an interrupted flush is finished by the retry -------------------------------------------------------------

TURNS = [{"role": "user", "content": "We decided to use Postgres for the fleet's Dagster instance."}]


def rows(home: Path, session_id: str) -> int:
    if not (home / "memory.duckdb").is_file():
        return 0
    with MemoryStore(home / "memory.duckdb").connect() as con:
        found = con.execute("SELECT count(*) FROM memories WHERE session_id = ?", [session_id]).fetchone()
    return int(found[0]) if found else 0


def flush_state(home: Path, session_id: str) -> dict[str, object]:
    journals = sorted((home / "knowledge" / "journal").glob("2*.md")) if (home / "knowledge/journal").is_dir() else []
    text = "".join(p.read_text(encoding="utf-8") for p in journals if p.name not in {Path(j).name for j in SEED})
    return {"transcripts": len(list((home / "raw").rglob(f"*-{session_id}-*.md"))), "journal": "Postgres" in text,
            "memory_md": "Postgres for the fleet's" in (home / MEMORY).read_text(encoding="utf-8"),
            "rows": rows(home, session_id), "record": (home / ".flushes" / f"{session_id}.json").is_file()}  # fmt: skip


def killed_at(point: str) -> Callable[[Path, Path], tuple[int, str]]:
    def interrupt(home: Path, turns: Path) -> tuple[int, str]:
        env = {**os.environ, "MEMORY_PIPELINE_CRASH_AT": point, "PYTHONPATH": str(REPO_ROOT)}
        done = subprocess.run([sys.executable, "-c", RUN, "flush", str(turns)], env=env, capture_output=True,
                              text=True, timeout=CHILD_TIMEOUT_S, check=False)  # fmt: skip
        return done.returncode, done.stdout + done.stderr

    return interrupt


def corrupt_store(home: Path, turns: Path) -> tuple[int, str]:
    (home / "memory.duckdb").write_bytes(b"not a DuckDB file")
    done = subprocess.run([sys.executable, "-c", RUN, "flush", str(turns)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, timeout=CHILD_TIMEOUT_S,
                          check=False)  # fmt: skip
    (home / "memory.duckdb").rename(home.parent / "damaged.duckdb")  # the repair: the damaged store moved aside
    return done.returncode, done.stdout + done.stderr


@dataclass(frozen=True)
class FlushCase:
    name: str
    interrupt: Callable[[Path, Path], tuple[int, str]]
    exit_code: int
    message: str  # the interrupted flush's one line ("" when it was killed)
    left: dict[str, object] = field(default_factory=dict)  # its state after (besides one transcript, no record)


FLUSH_CASES = [
    FlushCase("killed right after the transcript", killed_at("flush_after_transcript"), -9, "",
              {"journal": False, "memory_md": False, "rows": 0}),  # fmt: skip
    FlushCase("killed after the journal, before its record", killed_at("flush_before_record"), -9, "",
              {"journal": True, "memory_md": True}),  # fmt: skip
    FlushCase("a corrupt store fails the journal step", corrupt_store, 1, "error: flush: the journal step for ",
              {"journal": False, "memory_md": False}),  # fmt: skip
]


@pytest.mark.slow  # a flush in a child process (killed or failing) and the retry's journal run (~25 s)
@pytest.mark.parametrize("case", FLUSH_CASES, ids=lambda c: c.name)
def test_interrupted_flush_case(case: FlushCase, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from memory_pipeline.journals.flush import parse_turns, session_id_of

    sid = session_id_of(parse_turns(TURNS))
    turns = home.parent / "turns.json"
    turns.write_text(json.dumps(TURNS), encoding="utf-8")
    code, said = case.interrupt(home, turns)
    assert code == case.exit_code, said
    lines = said.splitlines()
    if case.message:
        [line] = [ln for ln in lines if ln.strip()]  # one line, no Dagster step-failure trace
        assert line.startswith(case.message) and "cannot open memory store" in line and "flush the same turns" in line
    state = flush_state(home, sid)
    assert {k: state[k] for k in case.left} == case.left
    assert state["transcripts"] == 1 and state["record"] is False
    code, lines = run(("flush", str(turns)), capsys)
    assert code == 0 and has(lines, "finished the interrupted flush of 1 turn(s)"), lines
    done = flush_state(home, sid)
    assert done.pop("rows") != 0 and done == {"transcripts": 1, "journal": True, "memory_md": True, "record": True}
    assert status(home) == []  # committed: transcript, journal and MEMORY.md
    code, lines = run(("flush", str(turns)), capsys)  # now it is complete: the same turns write nothing
    assert code == 0 and has(lines, "already flushed: raw/conversations/") and has(lines, "nothing written")


@pytest.mark.slow  # one journal run (~15 s)
def test_flush_with_a_stale_index_lock_commits_and_says_so(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    turns = home.parent / "turns.json"
    turns.write_text(json.dumps(TURNS), encoding="utf-8")
    stale_lock(home)
    start = head(home)
    code, lines = run(("flush", str(turns)), capsys)
    assert code == 0 and has(lines, "note: removed a stale ") and has(lines, "flushed 1 turn(s)"), lines
    assert head(home) != start and status(home) == []
    assert "Postgres" in git(home, "show", "HEAD:knowledge/memory/MEMORY.md")


def test_flush_with_a_held_index_lock_writes_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    turns = home.parent / "turns.json"
    turns.write_text(json.dumps(TURNS), encoding="utf-8")
    stop = held_lock(home)
    start = head(home)
    try:
        code, lines = run(("flush", str(turns)), capsys)
    finally:
        stop()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "held by a running git" in lines[0]
    assert not (home / "raw").exists() and head(home) == start and not (home / ".flushes").exists()
