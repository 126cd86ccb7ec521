"""`memory-pipeline doctor --secrets`: secrets an older version stored (written here directly, past redaction) are
found in every place a workspace keeps text — a store row, a raw transcript, a Parquet file, a commit of the
knowledge history, a report, a backup, the run history in DAGSTER_HOME — each reported with where it lies and
its kind, never its text; and a workspace fed every secret shape through every entry point scans clean."""

from __future__ import annotations

import json
import os
import pickle
import re
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memory_pipeline import redaction
from memory_pipeline.cli import main
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl

# fake secrets built from parts, so no scanner takes this file for a leak
GHP = "ghp_" + "Zk8mQ2xR7vLp4TwN9bYc3HdJ6sFa1UeG5oKi"
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQQDOCTORq9"
PEM_BODY = "MIIEowIBAAKCAQEA9zq1xZp4Hn5vQ2yKcN9dL8fR3tW0sE6gU1jB4mA7oP2iV5hY"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
PASS = "Qx7!docTorPass93"
GCP = "AIza" + "SyQ8x1Wm2Lr7Tk1Wv8Zb3Nc6Hj0Pf5Gy2Xe"
NPM = "npm_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"


def _git(home: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(home), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   check=True, capture_output=True)  # fmt: skip


def plant_store(home: Path, dagster: Path) -> None:
    rows = home.parent / "rows.jsonl"
    rows.write_text(json.dumps({"id": "m-1", "content": f"the CI token is {GHP}", "tags": ["ops"],
                                "created_at": "2026-11-01T10:00:00Z"}) + "\n")  # fmt: skip
    os.environ[redaction.SECRETS_ENV] = "keep"  # as a version before the rule stored it: verbatim
    try:
        import_jsonl(MemoryStore(home / "memory.duckdb"), rows)
    finally:
        del os.environ[redaction.SECRETS_ENV]
    con = duckdb.connect(str(home / "memory.duckdb"))
    try:
        con.execute("INSERT INTO consolidation_runs VALUES ('run-7', now(), now(), 'PASS', ?)",
                    [json.dumps({"note": f"export AWS_SECRET_ACCESS_KEY={AWS}"})])  # fmt: skip
    finally:
        con.close()


def plant_raw(home: Path, dagster: Path) -> None:
    raw = home / "raw" / "claude"
    raw.mkdir(parents=True)
    turns = [{"role": "user", "content": "deploy"}, {"role": "tool", "content": f"key:\n{PEM}\n"}]
    (raw / "s-1.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))


def plant_parquet(home: Path, dagster: Path) -> None:
    (home / "sessions").mkdir()
    table = pa.table({"id": ["a", "b"], "text": ["nothing here", f"db password: {PASS}"]})
    pq.write_table(table, home / "sessions" / "day.parquet")


def plant_git(home: Path, dagster: Path) -> None:
    (home / "knowledge").mkdir()
    note = home / "knowledge" / "infra.md"
    note.write_text(f"# infra\nmaps key {GCP}\n")
    _git(home, "init", "-q")
    _git(home, "add", "knowledge")
    _git(home, "commit", "-q", "-m", "knowledge: infra")
    note.write_text("# infra\nmaps key in the vault\n")  # the working tree is clean; the history is not
    _git(home, "commit", "-q", "-am", "knowledge: infra, key moved")


def plant_reports(home: Path, dagster: Path) -> None:
    (home / "reports").mkdir()
    (home / "reports" / "compression-r1.json").write_text(json.dumps({"errors": [f"publish failed for {NPM}"]}))


def plant_backup(home: Path, dagster: Path) -> None:
    (home / "backups").mkdir()
    con = duckdb.connect(str(home / "backups" / "pre-run.duckdb"))
    con.execute("CREATE TABLE memories (id VARCHAR PRIMARY KEY, content VARCHAR)")
    con.execute("INSERT INTO memories VALUES ('old-1', ?)", [f"token {GHP}"])
    con.close()


def plant_dagster(home: Path, dagster: Path) -> None:
    (dagster / "history").mkdir(parents=True)
    con = sqlite3.connect(dagster / "history" / "runs.db")
    con.execute("CREATE TABLE runs (run_id TEXT, run_body TEXT)")
    con.execute("INSERT INTO runs VALUES ('r1', ?)", [json.dumps({"tags": {"note": f"PGPASSWORD={PASS}"}})])
    con.commit()
    con.close()
    logs = dagster / "storage" / "r1" / "compute_logs"
    logs.mkdir(parents=True)
    (logs / "step.err").write_text(f"starting\nusing {GCP}\n")


def plant_step_output(home: Path, dagster: Path) -> None:
    """A step's stored output as Dagster keeps it: a pickle, here of a table sent as an Arrow stream (as the
    store's eligible set is) beside a plain string."""
    sink = pa.BufferOutputStream()
    table = pa.table({"id": ["e1", "e2"], "content": ["fine", f"PGPASSWORD={PASS}"]})
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    out = dagster / "storage" / "r2"
    out.mkdir(parents=True)
    (out / "eligible_memories").write_bytes(pickle.dumps({"frame": sink.getvalue().to_pybytes(), "note": "ok"}))
    (out / "report").write_bytes(pickle.dumps(["fine", f"the maps key {GCP}"]))


# (place, how an old version left a secret there, the lines that must be reported, the secret planted)
PLACES: list[tuple[str, Callable[[Path, Path], None], list[str], str]] = [
    ("store row", plant_store,
     ["memory.duckdb: table memories, column content, id 'm-1': GitHub Token"], GHP),
    ("store JSON column", plant_store,
     ["memory.duckdb: table consolidation_runs, column report, run_id 'run-7': "], AWS),
    ("raw transcript", plant_raw, ["raw/claude/s-1.jsonl: line 2: Private Key"], PEM_BODY),
    ("Parquet file", plant_parquet, ["sessions/day.parquet: row 2, column text: "], PASS),
    ("git history", plant_git, [".git: commit ", ", file knowledge/infra.md, line 2: Google API Key"], GCP),
    ("report", plant_reports, ["reports/compression-r1.json: line 1: npm Token"], NPM),
    ("backup", plant_backup, ["backups/pre-run.duckdb: table memories, column content, id 'old-1': GitHub Token"],
     GHP),
    ("run history database", plant_dagster, ["DAGSTER_HOME/history/runs.db: table runs, column run_body, row 1: "],
     PASS),
    ("stored step output, an Arrow table", plant_step_output,
     ["DAGSTER_HOME/storage/r2/eligible_memories: table at byte ", ", row 2, column content: value of PGPASSWORD"],
     PASS),
    ("stored step output, a string", plant_step_output, ["DAGSTER_HOME/storage/r2/report: byte ",
                                                         ": Google API Key"], GCP),
    ("compute log", plant_dagster, ["DAGSTER_HOME/storage/r1/compute_logs/step.err: line 2: Google API Key"], GCP),
]  # fmt: skip


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    home, dagster = tmp_path / "ws", tmp_path / "dagster_home"
    home.mkdir()
    MemoryStore(home / "memory.duckdb").migrate()
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(dagster))
    monkeypatch.delenv(redaction.SECRETS_ENV, raising=False)
    return home, dagster


def _doctor(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["doctor", "--secrets"])
    out = capsys.readouterr()
    return code, out.out + out.err


def _leaks(secret: str, printed: str) -> list[str]:
    """Any eight characters of the secret that the output shows."""
    return [secret[i : i + 8] for i in range(len(secret) - 7) if secret[i : i + 8] in printed]


@pytest.mark.parametrize(("plant", "expected", "secret"), [p[1:] for p in PLACES], ids=[p[0] for p in PLACES])
def test_a_secret_an_old_version_stored_is_reported_where_it_lies_and_never_shown(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str], plant: Callable[[Path, Path], None],
    expected: list[str], secret: str,
) -> None:  # fmt: skip
    plant(*workspace)
    code, printed = _doctor(capsys)
    lines = printed.splitlines()
    assert code == 1, printed
    assert any(all(part in line for part in expected) for line in lines), printed
    assert _leaks(secret, printed) == []
    assert " secret" in lines[-2] and " found: " in lines[-2]  # the summary, then how to scrub
    assert lines[-1].startswith("to rewrite them in place, stop nights and run `memory-pipeline doctor --secrets")


def test_every_place_at_once_is_one_line_each_and_a_summary(workspace: tuple[Path, Path],
                                                           capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    for plant in dict.fromkeys(p[1] for p in PLACES):
        plant(*workspace)
    code, printed = _doctor(capsys)
    assert code == 1
    for _, _, expected, secret in PLACES:
        assert any(all(part in line for part in expected) for line in printed.splitlines()), expected
        assert _leaks(secret, printed) == []
    summary = printed.splitlines()[-2]
    for area in ("store", "raw/", "sessions/", "git history", "reports/", "backups/", "DAGSTER_HOME"):
        assert f"{area} " in summary, summary


def test_a_clean_workspace_exits_0(workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    home, _ = workspace
    (home / "raw").mkdir()
    (home / "raw" / "s.jsonl").write_text(json.dumps({"content": "the password policy needs 12 characters; "
                                                      "token [redacted GitHub Token]"}) + "\n")  # fmt: skip
    code, printed = _doctor(capsys)
    assert code == 0, printed
    assert printed.splitlines()[-1].startswith("no secrets found (read ")


def test_no_workspace_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "missing"))
    code, printed = _doctor(capsys)
    assert code == 2
    assert printed.strip().splitlines() == [f"error: no workspace at {tmp_path / 'missing'}: set "
                                            "MEMORY_PIPELINE_HOME to a workspace folder"]  # fmt: skip



def test_a_workspace_fed_every_shape_through_every_entry_point_scans_clean(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The CI check that what redaction writes is what the doctor reads as clean: every secret shape of the
    hostile tests through `import`, MCP `remember` and `forget`, `flush`, and Claude Code and Codex sessions
    (`transcripts import`, committed to the knowledge history, its runs recorded in DAGSTER_HOME)."""
    from memory_pipeline_tests.hostile.test_secret_shapes import SHAPES
    from memory_pipeline_tests.hostile.test_secrets_on_the_way_in import CLAUDE, CODEX, SID
    from memory_pipeline_tests.hostile.test_transcript_import_cases import rollout, said
    from memory_pipeline_tests.writes.conftest import mcp_calls

    home, dagster = workspace
    src = home.parent / "src"
    src.mkdir()
    (src / "rows.jsonl").write_text("".join(json.dumps({"id": i, "content": t, "tags": [f"k={k}"],
                                                        "created_at": "2026-11-01T10:00:00Z"}) + "\n"
                                            for i, t, k in SHAPES))  # fmt: skip
    assert main(["import", str(src / "rows.jsonl")]) == 0
    calls = [("remember", {"text": t, "id": f"r-{i}"}) for i, t, _ in SHAPES]
    answers = mcp_calls(home, *calls, ("forget", {"id": "r-npm-token", "reason": SHAPES[0][1]}))
    assert [a.is_error for a in answers] == [False] * len(answers)
    (src / "turns.json").write_text(json.dumps([{"role": "user", "content": t} for _, t, _ in SHAPES]))
    assert main(["flush", str(src / "turns.json")]) == 0
    sessions = src / "sessions"
    sessions.mkdir()
    (sessions / f"{SID}.jsonl").write_text(CLAUDE)
    (sessions / "rollout-codex.jsonl").write_bytes(CODEX)
    items: list[dict[str, object]] = [said("user", "Why does the deploy fail?")]
    for n, (_, text, _) in enumerate(SHAPES):
        items += [{"type": "function_call", "name": "shell", "call_id": f"c{n}",
                   "arguments": json.dumps({"command": ["bash", "-lc", text]})},
                  {"type": "function_call_output", "call_id": f"c{n}", "output": json.dumps({"output": text})}]
    items.append(said("assistant", "Decided: rotate every credential above."))
    (sessions / "rollout-shapes.jsonl").write_bytes(rollout("0199e0d2-dddd-7a30-b5e4-2f8d9c6a1e57", *items))
    assert main(["transcripts", "import", str(sessions)]) == 0
    capsys.readouterr()
    assert (home / ".git").is_dir() and (home / "raw").is_dir()
    code, printed = _doctor(capsys)
    assert code == 0, printed
    read = re.fullmatch(r"no secrets found \(read (\d+) files, (\d+) rows, (\d+) commits\)", printed.splitlines()[-1])
    assert read is not None and all(int(n) > 0 for n in read.groups()), printed
    assert any(dagster.rglob("*.db")), "the runs were recorded in DAGSTER_HOME"
