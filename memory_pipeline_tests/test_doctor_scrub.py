"""`memory-pipeline doctor --secrets --scrub`: secrets an older version stored (planted past redaction, as in
test_doctor_secrets) are rewritten in place with today's redaction — store rows, raw transcripts, Parquet files,
reports, backups, the run history and every commit of the knowledge history — keeping everything else (rows,
ids, the other text, the commits and their messages); no object of the repository keeps the secret; the store is
never rewritten under a night; a failure half-way leaves each place whole, and a second scrub finishes."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
from datetime import timedelta
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from memory_pipeline import faults
from memory_pipeline.cli import main
from memory_pipeline.store.db import utcnow
from memory_pipeline_tests.test_doctor_secrets import (
    AWS,
    GCP,
    GHP,
    NPM,
    PASS,
    PEM_BODY,
    _git,
    plant_backup,
    plant_dagster,
    plant_git,
    plant_parquet,
    plant_raw,
    plant_reports,
    plant_step_output,
    plant_store,
)
from memory_pipeline_tests.test_doctor_secrets import workspace as workspace  # noqa: F401 — the fixture

SECRETS = (GHP, AWS, PEM_BODY, PASS, GCP, NPM)
PLANTS = (plant_store, plant_raw, plant_parquet, plant_git, plant_reports, plant_backup, plant_dagster)


def plant_everything(home: Path, dagster: Path) -> None:
    for plant in PLANTS:
        plant(home, dagster)
    ops = home / "knowledge" / "ops.md"  # a secret the newest commit and the working tree still hold
    ops.write_text(f"# ops\nnpm publishes with {NPM}\nask ops first\n")
    _git(home, "add", "knowledge/ops.md")
    _git(home, "commit", "-q", "-m", "knowledge: ops")
    assert main(["search", "--rebuild", "CI token"]) == 0  # a search index built while the store held the secret


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["doctor", "--secrets", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def _out(home: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(home), *args], check=True, capture_output=True, text=True).stdout


def _history(home: Path) -> list[str]:
    return _out(home, "log", "--all", "--format=%s").splitlines()


def _every_object(home: Path) -> bytes:
    """Every object the repository's store holds, reachable or not."""
    return subprocess.run(["git", "-C", str(home), "cat-file", "--batch-all-objects", "--batch"], check=True,
                          capture_output=True).stdout  # fmt: skip


def _files_holding(root: Path, secret: str) -> list[str]:
    """Files under `root` (git's compressed objects aside: `_every_object` reads those) whose bytes hold it."""
    return [str(p) for p in root.rglob("*") if p.is_file() and ".git" not in p.parts
            and secret.encode() in p.read_bytes()]  # fmt: skip


def _store_rows(path: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_scrub_rewrites_every_place_keeps_the_rest_and_leaves_no_copy(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    home, dagster = workspace
    plant_everything(home, dagster)
    ids_before = _store_rows(home / "memory.duckdb", "SELECT id FROM memories ORDER BY id")
    history = _history(home)
    capsys.readouterr()
    code, printed = _run(capsys)
    assert code == 1 and "index/ " in printed.splitlines()[-2], printed

    code, printed = _run(capsys, "--scrub")

    assert code == 0, printed
    assert printed.splitlines()[-1].startswith("no secrets found (read "), printed
    assert "scrubbed memory.duckdb: 2 secrets" in printed and "scrubbed .git: " in printed
    assert "rebuilt the search index (index/) from the scrubbed workspace" in printed.splitlines()
    assert all(secret[:12] not in printed for secret in SECRETS)
    # the store: the same rows and ids, the marker where the secret was, the rest of the text as it was
    assert _store_rows(home / "memory.duckdb", "SELECT id FROM memories ORDER BY id") == ids_before
    assert _store_rows(home / "memory.duckdb", "SELECT content, tags FROM memories") == [
        ("the CI token is [redacted GitHub Token]", ["ops"])]
    (report,) = _store_rows(home / "memory.duckdb", "SELECT report FROM consolidation_runs WHERE run_id = 'run-7'")[0]
    assert json.loads(report)["note"].startswith("export AWS_SECRET_ACCESS_KEY=[redacted ")
    # files: raw transcripts, reports, Parquet, a backup, the run history
    turns = [json.loads(line) for line in (home / "raw" / "claude" / "s-1.jsonl").read_text().splitlines()]
    assert turns[0] == {"role": "user", "content": "deploy"} and "[redacted Private Key]" in turns[1]["content"]
    assert json.loads((home / "reports" / "compression-r1.json").read_text()) == {
        "errors": ["publish failed for [redacted npm Token]"]}
    table = pq.read_table(home / "sessions" / "day.parquet").to_pydict()
    assert table["id"] == ["a", "b"] and table["text"][0] == "nothing here"
    assert table["text"][1].startswith("db password: [redacted ")
    assert _store_rows(home / "backups" / "pre-run.duckdb", "SELECT * FROM memories") == [
        ("old-1", "token [redacted GitHub Token]")]
    con = sqlite3.connect(dagster / "history" / "runs.db")
    assert json.loads(con.execute("SELECT run_body FROM runs").fetchone()[0]) == {
        "tags": {"note": "PGPASSWORD=[redacted value of PGPASSWORD]"}}
    con.close()
    assert (dagster / "storage" / "r1" / "compute_logs" / "step.err").read_text() == \
        "starting\nusing [redacted Google API Key]\n"  # fmt: skip
    # git: the same commits and messages, the marker in the old versions, the working tree and index in step
    assert _history(home) == history
    assert "maps key [redacted Google API Key]" in _out(home, "show", "HEAD~2:knowledge/infra.md")
    assert _out(home, "show", "HEAD:knowledge/ops.md") == "# ops\nnpm publishes with [redacted npm Token]\n" \
        "ask ops first\n"  # fmt: skip
    assert _out(home, "status", "--porcelain", "--untracked-files=no") == ""
    assert _out(home, "reflog", "--all") == "" or all(s not in _out(home, "reflog", "--all") for s in SECRETS)
    objects = _every_object(home)
    listing = _out(home, "rev-list", "--all", "--objects").split()
    assert listing and all(secret.encode() not in objects for secret in SECRETS)
    # the rebuilt index finds the memory, with the marker; no file keeps a copy, not even in a database's free space
    capsys.readouterr()
    assert main(["search", "CI token"]) == 0
    assert "the CI token is [redacted GitHub Token]" in capsys.readouterr().out
    for root in (home, dagster):
        assert all(_files_holding(root, secret) == [] for secret in SECRETS), root


def test_the_scan_ends_with_how_to_scrub(workspace: tuple[Path, Path],  # noqa: F811
                                          capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    plant_raw(*workspace)
    code, printed = _run(capsys)
    assert code == 1
    last = printed.splitlines()[-1]
    assert "memory-pipeline doctor --secrets --scrub" in last and "stop nights" in last
    assert "no copy of the old text is kept" in last


def test_what_cannot_be_rewritten_safely_is_named_with_what_to_do(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    home, dagster = workspace
    plant_step_output(home, dagster)
    before = (dagster / "storage" / "r2" / "report").read_bytes()
    code, printed = _run(capsys, "--scrub")
    assert code == 1
    assert ("not scrubbed: DAGSTER_HOME/storage/r2/report: a stored step output cannot be rewritten safely: "
            "delete the file, or delete run r2 with `dagster run delete r2`") in printed.splitlines()
    assert (dagster / "storage" / "r2" / "report").read_bytes() == before


def test_the_store_is_not_rewritten_while_a_night_holds_it(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    home, dagster = workspace
    plant_store(home, dagster)
    plant_raw(home, dagster)
    raw = (home / "raw" / "claude" / "s-1.jsonl").read_bytes()
    con = duckdb.connect(str(home / "memory.duckdb"))
    con.execute("INSERT INTO leases VALUES ('consolidation', 'night-1', ?, ?, ?, ?)",
                [os.getpid(), socket.gethostname(), utcnow(), utcnow() + timedelta(hours=1)])  # fmt: skip
    con.close()
    code, printed = _run(capsys, "--scrub")
    assert code == 1
    assert printed.strip().splitlines() == [
        f"error: cannot scrub now: a night holds the memory store (night-1, pid {os.getpid()} on "
        f"{socket.gethostname()} since {printed.split(' since ')[1].split(' UTC')[0]} UTC); scrub when it has "
        "finished"]  # fmt: skip
    assert (home / "raw" / "claude" / "s-1.jsonl").read_bytes() == raw
    assert _store_rows(home / "memory.duckdb", "SELECT content FROM memories") == [(f"the CI token is {GHP}",)]


def _state(home: Path, dagster: Path) -> dict[str, str]:
    """What each place holds, as text a secret can be looked for in."""
    con = sqlite3.connect(dagster / "history" / "runs.db")
    runs = str(con.execute("SELECT * FROM runs").fetchall())
    con.close()
    return {
        "store": str(_store_rows(home / "memory.duckdb", "SELECT content FROM memories")
                     + _store_rows(home / "memory.duckdb", "SELECT report FROM consolidation_runs")),
        "backup": str(_store_rows(home / "backups" / "pre-run.duckdb", "SELECT * FROM memories")),
        "raw": (home / "raw" / "claude" / "s-1.jsonl").read_text(),
        "report": (home / "reports" / "compression-r1.json").read_text(),
        "parquet": str(pq.read_table(home / "sessions" / "day.parquet").to_pydict()),
        "runs": runs,
        "git": _out(home, "rev-list", "--all", "--objects"),
    }  # fmt: skip


@pytest.mark.parametrize("point", ["scrub_database", "scrub_replace", "scrub_git"])
def test_a_failure_half_way_leaves_each_place_whole_and_a_second_scrub_finishes(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,  # noqa: F811
    point: str,
) -> None:  # fmt: skip
    home, dagster = workspace
    plant_everything(home, dagster)
    old = _state(home, dagster)
    monkeypatch.setenv(faults.FAIL_ENV, point)

    code, printed = _run(capsys, "--scrub")

    assert code == 1, printed
    assert "not scrubbed: " in printed and "No space left on device" in printed
    new = _state(home, dagster)
    untouched = [place for place in old if new[place] == old[place]]
    assert untouched, "the failure stopped at least one place"
    for place in set(old) - set(untouched):  # the others: fully scrubbed, no half
        assert all(secret not in new[place] for secret in SECRETS), place
    assert not [p for p in home.rglob("*.scrub*") if ".git" not in p.parts], "no temporary file is left"
    monkeypatch.delenv(faults.FAIL_ENV)

    code, printed = _run(capsys, "--scrub")

    assert code == 0, printed
    assert printed.splitlines()[-1].startswith("no secrets found")
    assert all(secret.encode() not in _every_object(home) for secret in SECRETS)


def test_a_commit_made_while_the_history_is_rewritten_is_kept(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:  # fmt: skip
    """A transcript import that commits while the scrub rewrites the history: the refs do not move (the new
    commit stays on its branch) and the next scrub rewrites the history with it."""
    from memory_pipeline.operator import secrets_scrub

    home, dagster = workspace
    plant_git(home, dagster)

    def meanwhile(name: str) -> None:
        if name == "scrub_git":
            (home / "knowledge" / "late.md").write_text("# late\nwritten during the scrub\n")
            _git(home, "add", "knowledge/late.md")
            _git(home, "commit", "-q", "-m", "knowledge: late")

    monkeypatch.setattr(secrets_scrub, "fail_point", meanwhile)
    code, printed = _run(capsys, "--scrub")
    assert code == 1 and "not scrubbed: .git: " in printed, printed
    assert _history(home)[0] == "knowledge: late"
    monkeypatch.setattr(secrets_scrub, "fail_point", lambda name: None)

    code, printed = _run(capsys, "--scrub")

    assert code == 0, printed
    assert _history(home) == ["knowledge: late", "knowledge: infra, key moved", "knowledge: infra"]
    assert GCP.encode() not in _every_object(home)
    assert _out(home, "for-each-ref", "refs/scrubbed/") == ""


def test_a_file_written_while_it_is_scrubbed_keeps_what_was_written(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:  # fmt: skip
    from memory_pipeline.operator import secrets_scrub

    home, dagster = workspace
    plant_raw(home, dagster)
    raw = home / "raw" / "claude" / "s-1.jsonl"
    late = json.dumps({"role": "user", "content": "a turn written during the scrub"}) + "\n"

    def meanwhile(name: str) -> None:
        if name == "scrub_replace" and late not in raw.read_text():
            with raw.open("a") as f:
                f.write(late)
            os.utime(raw, ns=(1, 1))  # a clock too coarse to tell would still see another time

    monkeypatch.setattr(secrets_scrub, "fail_point", meanwhile)
    code, printed = _run(capsys, "--scrub")
    assert code == 1
    assert "not scrubbed: raw/claude/s-1.jsonl: s-1.jsonl changed while it was scrubbed: run the scrub again" in printed
    assert raw.read_text().endswith(late) and PEM_BODY in raw.read_text()

    code, printed = _run(capsys, "--scrub")

    assert code == 0, printed
    assert raw.read_text().endswith(late) and PEM_BODY not in raw.read_text()
