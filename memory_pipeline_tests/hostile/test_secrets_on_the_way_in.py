"""Secrets in imported sessions and flushed turns are redacted before anything is written: a Claude Code session
whose Bash call exports an AWS secret key and whose tool result prints a GitHub token and an RSA private key, a
Codex rollout with a PGPASSWORD and a DATABASE_URL password — none of them is in any file of the workspace
afterwards, git's objects included; each is a marker naming its kind."""

from __future__ import annotations

import json
import subprocess
import zlib
from pathlib import Path

import pytest

from memory_pipeline.cli import main
from memory_pipeline_tests.hostile.test_transcript_import_cases import rollout, said

AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEYq9"
GHP = "ghp_" + "R4nd0mT0k3nV4lu3ForT3st1ngAbCdEf1234"
PEM_BODY = "MIIEowIBAAKCAQEA7bq1xZp4Hn5vQ2yKcN9dL8fR3tW0sE6gU1jB4mA7oP2iV5hY"
PEM = (f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\nq8Xz3Lk0Wm9Vb2Nc7Rt5Yh1Jg6Fd4Sa8Qp0Oi2Uy7Te3Rw\n"
       "-----END RSA PRIVATE KEY-----")
PG = "Pg9xK2mQ7vLr4TzW"
DB = "Db7yH3nR8sKq5VwX"
SECRETS = (AWS, GHP, PEM_BODY, PG, DB)
SID = "5b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d"


def _cc(line: dict[str, object], n: int) -> dict[str, object]:
    return {"parentUuid": None, "isSidechain": False, "cwd": "/srv/app", "sessionId": SID, "version": "2.0.61",
            "uuid": f"u-{n}", "timestamp": f"2026-10-14T09:1{n}:00.000Z", **line}  # fmt: skip


CLAUDE = "".join(json.dumps(_cc(line, n)) + "\n" for n, line in enumerate([
    {"type": "user", "message": {"role": "user", "content": "List the bucket and check the deploy key."}},
    {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "Bash",
         "input": {"command": f"export AWS_SECRET_ACCESS_KEY={AWS} && aws s3 ls"}}]}},
    {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": f"token {GHP}\n{PEM}\n"}]}},
    {"type": "assistant", "message": {"id": "m2", "role": "assistant", "content": [
        {"type": "text", "text": "Decided: rotate the deploy key; the bucket lists fine."}]}},
]))  # fmt: skip
CODEX = rollout(
    "0199e0d2-aaaa-7a30-b5e4-2f8d9c6a1e57",
    said("user", "Why does the migration fail?"),
    {"type": "function_call", "name": "shell", "call_id": "c1",
     "arguments": json.dumps({"command": ["bash", "-lc", f"PGPASSWORD={PG} psql -h db -U app -c 'select 1'"]})},
    {"type": "function_call_output", "call_id": "c1", "output": f"DATABASE_URL=postgres://app:{DB}@db:5432/app"},
    said("assistant", "Decided: run the migration as the app role."),
)  # fmt: skip


def _everything(home: Path) -> bytes:
    """Every file's bytes under the workspace, git's objects inflated, and the history as patches."""
    out = []
    for p in home.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            try:
                data += zlib.decompress(data)
            except zlib.error:
                pass
            out.append(data)
    if (home / ".git").exists():
        log = subprocess.run(["git", "-C", str(home), "log", "-p", "--all"], capture_output=True, check=False)
        out.append(log.stdout)
    return b"\n".join(out)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(ws))
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "1")
    monkeypatch.delenv("MEMORY_PIPELINE_SECRETS", raising=False)
    return ws


def test_imported_sessions_keep_no_secret_anywhere_in_the_workspace(tmp_path: Path, home: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / f"{SID}.jsonl").write_text(CLAUDE)
    (src / "rollout-codex.jsonl").write_bytes(CODEX)
    assert main(["transcripts", "import", str(src)]) == 0
    found = _everything(home)
    assert b"[redacted " in found
    assert [s for s in SECRETS if s.encode() in found] == []


def test_flushed_turns_keep_no_secret(tmp_path: Path, home: Path) -> None:
    turns = [{"role": "user", "content": f"export AWS_SECRET_ACCESS_KEY={AWS}"},
             {"role": "assistant", "content": f"The token is {GHP}; PGPASSWORD={PG}"}]  # fmt: skip
    (tmp_path / "turns.json").write_text(json.dumps(turns))
    assert main(["flush", str(tmp_path / "turns.json")]) == 0
    found = _everything(home)
    assert b"The token is [redacted " in found
    assert [s for s in (AWS, GHP, PG) if s.encode() in found] == []
