"""A/B reconstruction on `extract/NAME` branches (seed 001 §3.3, §3.4, §8.7, §10.4)."""

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_pipeline.cli import main
from memory_pipeline.evaluation.retention import compare
from memory_pipeline.journals import branches
from memory_pipeline.journals.gitlog import commit_knowledge
from memory_pipeline.store import MemoryStore
from memory_pipeline_tests.journals.test_backfill import _workspace

DAYS = ["--from", "2026-09-15", "--to", "2026-09-15", "--in-process", "--no-weekly"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return _workspace(tmp_path, monkeypatch, git=True)


def git(home: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=home, capture_output=True, text=True, check=True,
                          env={**os.environ, **(env or {})})  # fmt: skip
    return done.stdout


def snapshot(home: Path) -> dict[str, bytes]:
    """Every file of the workspace except git's own metadata and the branches' worktrees."""
    skip = (home / ".git", home / ".branches")
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and not any(p.is_relative_to(s) for s in skip)
    }


def sources(home: Path) -> set[str]:
    with MemoryStore(home / "memory.duckdb").connect() as con:
        return {r[0] for r in con.execute("SELECT DISTINCT source FROM memories").fetchall()}


def extract_branches(home: Path) -> list[str]:
    return git(home, "branch", "--list", "--format=%(refname:short)", "extract/*").split()


def old_branch(home: Path, name: str, days_ago: int) -> None:
    """extract/NAME with one commit whose committer date is `days_ago` days back."""
    stamp = (datetime.now(UTC) - timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%S+0000")
    git(home, "branch", f"extract/{name}")
    tree = git(home, "rev-parse", f"extract/{name}^{{tree}}").strip()
    parent = git(home, "rev-parse", f"extract/{name}").strip()
    env = {"GIT_COMMITTER_DATE": stamp, "GIT_AUTHOR_DATE": stamp, "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}  # fmt: skip
    commit = git(home, "commit-tree", tree, "-p", parent, "-m", f"extract: {name}", env=env).strip()
    git(home, "update-ref", f"refs/heads/extract/{name}", commit)


def test_a_branch_reconstruction_leaves_main_byte_identical_and_adopt_brings_it_in(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The retention line's scores are 0 here (the sample is not LoCoMo's conversation); the retention test
    below checks the scoring itself."""
    assert main(["reconstruct", *DAYS]) == 0  # main: all extractors, git on
    assert "tagged memory/extract/decisions@3+facts@3+lessons@3+people@3+procedures@2" in capsys.readouterr().out
    log = git(home, "log", "--reverse", "--format=%B%x00").split("\x00")
    assert log[0].strip().startswith("conversation: ") and "new transcript(s)\n\nFiles:\n- raw/conversations/" in log[0]
    [journal] = [m.strip() for m in log if m.strip().startswith("extract: journal 2026-09-15")]
    assert "\n\nFiles:\n- knowledge/journal/2026-09-15.md\n\nSessions: " in journal  # the §3.2 template
    old_branch(home, "stale", days_ago=9)
    old_branch(home, "recent", days_ago=2)
    before, head, tags = snapshot(home), git(home, "rev-parse", "HEAD"), git(home, "tag", "--list")
    assert "memory.duckdb" in before and "knowledge/journal/2026-09-15.md" in before

    assert main(["reconstruct", "--branch", "dec", "--extractor", "decisions", *DAYS]) == 0
    out = capsys.readouterr().out
    assert snapshot(home) == before  # files and memory.duckdb byte-identical
    assert git(home, "rev-parse", "HEAD") == head and git(home, "tag", "--list") == tags
    assert "pruned extract/stale" in out and "extract/recent" not in out
    assert extract_branches(home) == ["extract/dec", "extract/recent"]
    stat = out.split("-- knowledge archive:\n", 1)[1]
    assert "knowledge/journal/2026-09-15.md" in stat and "1 file changed" in stat
    assert "retention comparison skipped: no --questions FILE" in out
    assert "(message by template)" in out
    tip = git(home, "log", "-1", "--format=%B", "extract/dec")
    assert tip.startswith("extract: decisions@3 over 2026-09-15..2026-09-15\n")
    assert "Extractors: decisions@3" in tip and "Range: 2026-09-15..2026-09-15" in tip
    branch_journal = git(home, "show", "extract/dec:knowledge/journal/2026-09-15.md")
    assert branch_journal != before["knowledge/journal/2026-09-15.md"].decode()
    assert sources(home / ".branches" / "dec") == {"extract:decisions@3"}  # the branch's own store

    # the same branch again with another extractor: a fresh store, so only that extractor's memories
    questions = _locomo(home.parent)
    assert main(["reconstruct", "--branch", "dec", "--extractor", "facts", "--questions", str(questions), *DAYS]) == 0
    assert "retention (answer support@10, 2 question(s)): main 0.0 %, branch 0.0 %" in capsys.readouterr().out
    assert sources(home / ".branches" / "dec") == {"extract:facts@3"} and snapshot(home) == before
    subject = git(home, "log", "-1", "--format=%s", "extract/dec").strip()
    assert subject == "extract: facts@3 over 2026-09-15..2026-09-15"
    assert git(home, "show", "extract/dec:knowledge/journal/2026-09-15.md") != branch_journal
    branch_journal = git(home, "show", "extract/dec:knowledge/journal/2026-09-15.md")

    assert main(["reconstruct", "--adopt", "dec"]) == 0
    out = capsys.readouterr().out
    assert (home / "knowledge" / "journal" / "2026-09-15.md").read_text() == branch_journal
    assert "tagged memory/extract/facts@3" in out
    assert "memory/extract/facts@3" in git(home, "tag", "--list", "memory/extract/*").split()
    assert git(home, "log", "-1", "--format=%s").startswith("extract: adopt extract/dec (facts@3)")
    assert git(home, "branch", "--list", "extract/dec") == "" and not (home / ".branches" / "dec").exists()
    assert (home / "memory.duckdb").read_bytes() == before["memory.duckdb"]  # the store is main's (see notes)


def test_prune_deletes_week_old_extract_branches_only(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (home / "knowledge").mkdir()
    (home / "knowledge" / "a.md").write_text("- a\n")
    assert commit_knowledge(home, "memory: a", tag=None, paths=["knowledge/a.md"])
    old_branch(home, "old", days_ago=8)
    old_branch(home, "fresh", days_ago=6)
    git(home, "branch", "explore-keep")  # not extract/*: never pruned
    assert main(["reconstruct", "--prune-branches"]) == 0
    out = capsys.readouterr().out
    assert "pruned extract/old" in out and "1 extract/* branch(es) older than 7 days pruned; 1 kept" in out
    assert extract_branches(home) == ["extract/fresh"]
    assert "explore-keep" in git(home, "branch", "--list")


def test_an_extractor_change_tags_memory_extract(home: Path) -> None:
    (home / "knowledge").mkdir()
    (home / "knowledge" / "a.md").write_text("- a\n")
    assert commit_knowledge(home, "memory: a", tag=None, paths=["knowledge/a.md"])
    assert branches.tag_extractors(home, "decisions@1") == "memory/extract/decisions@1"
    assert branches.tag_extractors(home, "decisions@1") is None  # same set: no new tag
    (home / "knowledge" / "a.md").write_text("- b\n")
    assert commit_knowledge(home, "memory: b", tag=None, paths=["knowledge/a.md"])
    assert branches.tag_extractors(home, "decisions@3") == "memory/extract/decisions@3"  # a version bump
    assert branches.last_extract_tag(home) == "memory/extract/decisions@3"
    assert git(home, "rev-parse", "memory/extract/decisions@3^{commit}") == git(home, "rev-parse", "HEAD")
    assert git(home, "rev-parse", "memory/extract/decisions@1^{commit}") == git(home, "rev-parse", "HEAD~1")


@pytest.mark.parametrize("args", [["--branch", "../x"], ["--branch", ""], ["--adopt", "../x"],
                                  ["--branch", "a/b"], ["--branch", "x..y"]])  # fmt: skip
def test_a_bad_branch_name_is_one_error_line_and_writes_nothing(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    (home / "knowledge").mkdir()
    (home / "knowledge" / "a.md").write_text("- a\n")
    assert commit_knowledge(home, "memory: a", tag=None, paths=["knowledge/a.md"])
    refs = git(home, "for-each-ref")
    before = snapshot(home)
    assert main(["reconstruct", *args, "--in-process"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "branch name" in err[0]
    assert snapshot(home) == before and git(home, "for-each-ref") == refs and not (home / ".branches").exists()


def test_without_git_the_branch_commands_say_so_in_one_line_and_reconstruct_works(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"  # a PATH without git
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    for args in (["--branch", "x"], ["--adopt", "x"], ["--prune-branches"]):
        assert main(["reconstruct", *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: reconstruct --") and "needs git on PATH" in err[0]
    assert main(["reconstruct", "--from", "2026-09-15", "--to", "2026-09-15", "--extractor", "decisions",
                 "--in-process", "--no-weekly"]) == 0  # fmt: skip
    assert (home / "knowledge" / "journal" / "2026-09-15.md").exists() and not (home / ".git").exists()
    assert "memory/extract" not in capsys.readouterr().err  # the optional tag says nothing without git


def _locomo(tmp_path: Path) -> Path:
    sample = {
        "sample_id": "t-1",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo", "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "We picked Postgres for the fleet."}],
        },
        "qa": [
            {"question": "Which database was picked for the fleet?", "answer": "Postgres", "evidence": ["D1:1"],
             "category": 1},
            {"question": "Who is the broker?", "answer": "Redis", "evidence": ["D1:1"], "category": 4},
            {"question": "Trick?", "adversarial_answer": "nothing", "evidence": [], "category": 5},
        ],
    }  # fmt: skip
    path = tmp_path / "questions.json"
    path.write_text(json.dumps([sample]))
    return path


def test_the_retention_comparison_scores_answer_support_on_main_and_the_branch(tmp_path: Path) -> None:
    main_home, branch_home = tmp_path / "main", tmp_path / "branch"
    for h, text in ((main_home, "- We picked Postgres for the fleet.\n- Redis is the broker.\n"),
                    (branch_home, "- We picked a database for the fleet.\n- Redis is the broker.\n")):  # fmt: skip
        (h / "knowledge" / "journal").mkdir(parents=True)
        (h / "knowledge" / "journal" / "2023-05-08.md").write_text("# 2023-05-08\n" + text)
    result = compare(main_home, branch_home, _locomo(tmp_path))
    assert (result.main, result.branch, result.questions) == (1.0, 0.5, 2)
    assert result.line() == "retention (answer support@10, 2 question(s)): main 100.0 %, branch 50.0 %"


def test_an_adoption_that_conflicts_is_aborted_and_changes_nothing(home: Path) -> None:
    (home / "knowledge").mkdir()
    (home / "knowledge" / "a.md").write_text("- a\n")
    assert commit_knowledge(home, "memory: a", tag=None, paths=["knowledge/a.md"])
    where = branches.open_worktree(home, "x")
    (where / "knowledge" / "a.md").write_text("- from the branch\n")
    branches.record(where, "extract: x\n")
    (home / "knowledge" / "a.md").write_text("- from main\n")
    assert commit_knowledge(home, "memory: main moved on", tag=None, paths=["knowledge/a.md"])
    head, before = git(home, "rev-parse", "HEAD"), snapshot(home)
    conflict = r"cannot merge extract/x into \w+: CONFLICT \(content\): .*knowledge/a.md; nothing changed"
    with pytest.raises(branches.BranchError, match=conflict):
        branches.adopt(home, "x", "extract: adopt x\n")
    assert git(home, "rev-parse", "HEAD") == head and snapshot(home) == before
    assert git(home, "status", "--porcelain") == "" and not (home / ".git" / "MERGE_HEAD").exists()
    assert branches.exists(home, "x")  # kept: nothing was adopted


def test_questions_without_a_branch_is_refused(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reconstruct", "--from", "2026-09-15", "--to", "2026-09-15", "--questions", "q.json"]) == 2
    assert capsys.readouterr().err.strip() == "error: --questions compares a branch with main: give --branch NAME too"


def test_transcripts_not_yet_committed_are_committed_on_main_before_branching(home: Path) -> None:
    (home / "knowledge").mkdir()
    (home / "knowledge" / "a.md").write_text("- a\n")
    assert commit_knowledge(home, "memory: a", tag=None, paths=["knowledge/a.md"])  # commits the sample transcripts too
    new = home / "raw" / "conversations" / "2026" / "11" / "20" / "late.md"
    new.parent.mkdir(parents=True)
    new.write_text("---\nsession_id: late\n---\n")
    before = snapshot(home)
    assert branches.commit_pending_transcripts(home)
    assert not branches.commit_pending_transcripts(home)  # nothing left
    assert snapshot(home) == before  # git's metadata only
    assert git(home, "log", "-1", "--format=%B") == (
        "conversation: 1 new transcript(s)\n\nFiles:\n- raw/conversations/2026/11/20/late.md\n\n"
    )
    where = branches.open_worktree(home, "late")
    assert (where / "raw" / "conversations" / "2026" / "11" / "20" / "late.md").read_text() == new.read_text()
    assert git(home, "status", "--porcelain") == ""  # the worktree under .branches/ is ignored by main


def test_branch_adopt_and_prune_are_one_at_a_time(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["reconstruct", "--branch", "a", "--adopt", "a"])
    assert exit_.value.code == 2 and "not allowed with argument --branch" in capsys.readouterr().err
    assert not (home / ".branches").exists()
