"""Every text field a memory, a transcript or a write call carries is redacted, not only the text: an import
row's tags, categories, source and session id; `remember`'s tags; `forget`'s reason (stored, and printed by
`forgotten list`); a Codex session's git remote and tool names — directly, over MCP and over the fleet gateway.
A redacted `remember` answers as one that was not: its marker is whole, and the same call again is "already
remembered"."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import duckdb
import pytest

from memory_pipeline import redaction
from memory_pipeline.cli import main
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline_tests.fleet.gateway_helpers import app_for, call, fleet, result, serving
from memory_pipeline_tests.hostile.test_secrets_on_the_way_in import _everything
from memory_pipeline_tests.hostile.test_transcript_import_cases import said
from memory_pipeline_tests.writes.conftest import mcp_calls

GHP = "ghp_" + "R4nd0mT0k3nV4lu3ForT3st1ngAbCdEf1234"
HOOK = ("https://discord.com/api/webhooks/1234567890123456789/"
        + "Hk3-pQ9zLm2xY7wV1bN5cR8tG4jF6dS0aE3qW9eR2tY7uI1oP5aS8dF4gH6jK0")
GCP = "AIza" + "SyD4x9Qm2Lr7Tk1Wv8Zb3Nc6Hj0Pf5Gy2Ue"
PASS = "Hunt3r2Pass"


@pytest.fixture(autouse=True)
def _redacting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(redaction.SECRETS_ENV, raising=False)


def _row(home: Path, mid: str) -> dict[str, object]:
    con = duckdb.connect(str(home / "memory.duckdb"), read_only=True)
    try:
        cur = con.execute("SELECT * FROM memories WHERE id = ?", [mid])
        names = [d[0] for d in cur.description]
        row = cur.fetchone()
    finally:
        con.close()
    assert row is not None
    return dict(zip(names, row, strict=True))


def test_an_import_rows_tags_categories_source_and_session_id_are_redacted(tmp_path: Path) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_text(json.dumps({"id": "m1", "content": "Rotated the deploy credentials", "tags": ["deploy", GHP],
                               "categories": [f"ops {GCP}"], "source": HOOK, "session_id": f"DB_PASS={PASS}",
                               "created_at": "2026-11-01T10:00:00Z"}) + "\n")  # fmt: skip
    ws = tmp_path / "ws"
    ws.mkdir()
    import_jsonl(MemoryStore(ws / "memory.duckdb"), src)
    row = _row(ws, "m1")
    assert row["tags"] == ["deploy", "[redacted GitHub Token]"]
    assert row["categories"] == ["ops [redacted Google API Key]"]
    assert "[redacted Discord Webhook]" in str(row["source"])
    assert row["session_id"] == "DB_PASS=[redacted value of DB_PASS]"
    found = _everything(ws)
    assert [s for s in (GHP, GCP, HOOK, PASS) if s.encode() in found] == []


def test_an_id_holding_a_secret_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_text(json.dumps({"id": GHP, "content": "x", "created_at": "2026-11-01T10:00:00Z"}) + "\n")
    (tmp_path / "ws").mkdir()
    with pytest.raises(ValueError, match=r"field 'id': holds a secret \(GitHub Token\); use another id") as err:
        import_jsonl(MemoryStore(tmp_path / "ws" / "memory.duckdb"), src)
    assert GHP not in str(err.value)


def test_remember_tags_and_forget_reason_are_redacted_and_forgotten_list_shows_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "ws"
    home.mkdir()
    done, gone = mcp_calls(home, ("remember", {"text": "The staging bucket is eu-west-1", "id": "b1",
                                               "tags": ["infra", f"key={GCP}"]}),
                           ("forget", {"id": "b1", "reason": f"leaked, the hook was {HOOK}"}))  # fmt: skip
    assert not done.is_error and not gone.is_error, gone.content[0].text
    assert HOOK not in json.dumps(gone.structured_content)  # the answer shows what was stored
    tags = _row(home, "b1")["tags"]
    assert isinstance(tags, list) and tags[0] == "infra" and tags[1].startswith("key=[redacted ")
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    assert main(["forgotten", "list"]) == 0
    printed = capsys.readouterr().out
    assert "leaked, the hook was" in printed and "[redacted Discord Webhook]" in printed and HOOK not in printed
    found = _everything(home)
    assert GCP.encode() not in found and HOOK.encode() not in found


def test_a_redacted_remember_stores_one_whole_marker_and_its_retry_is_already_remembered(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    home.mkdir()
    args = {"text": "db password: hunter2xyz99", "id": "pw-1"}
    first, again = mcp_calls(home, ("remember", args), ("remember", args))
    assert not first.is_error and first.structured_content["created"] is True
    assert _row(home, "pw-1")["content"] == "db password: [redacted value of password]"
    assert not again.is_error, again.content[0].text
    assert again.structured_content["created"] is False
    assert again.structured_content["note"] == "already remembered with this text: nothing written"


def test_a_codex_sessions_git_remote_and_tool_names_are_redacted(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    home = tmp_path / "ws"
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "1")
    remote = f"https://oauth2:{PASS}@gitlab.example.com/acme/app.git"
    at = "2026-10-15T14:03:11Z"
    lines = [{"timestamp": at, "type": "session_meta", "payload": {
        "id": "0199e0d2-cccc-7a30-b5e4-2f8d9c6a1e57", "cwd": "/src/app", "cli_version": "1",
        "git": {"branch": "main", "repository_url": remote}}},
        {"timestamp": at, "type": "response_item", "payload": said("user", "Deploy the app.")},
        {"timestamp": at, "type": "response_item", "payload": {"type": "function_call", "name": f"mcp__{GHP}",
                                                               "call_id": "c1", "arguments": "{}"}},
        {"timestamp": at, "type": "response_item", "payload": said("assistant", "Decided: deploy on Friday.")}]
    src = tmp_path / "src"
    src.mkdir()
    (src / "rollout-codex.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["transcripts", "import", str(src)]) == 0
    found = _everything(home)
    assert b"[redacted " in found and GHP.encode() not in found and PASS.encode() not in found


def test_the_gateway_redacts_remember_tags_and_forget_reasons(tmp_path: Path) -> None:
    keys = fleet(tmp_path, ["alice"])
    app = app_for(tmp_path)

    async def run() -> None:
        async with serving(app) as http:
            done = result(await call(http, keys["alice"], "remember", {
                "text": f"the root password for db-01 is {PASS}!", "id": "g-1", "tags": [GHP]}))
            assert done["structuredContent"]["created"] is True
            gone = result(await call(http, keys["alice"], "forget", {"id": "g-1", "reason": f"token {GCP}"}))
            assert not gone["isError"], gone

    anyio.run(run)
    found = _everything(tmp_path)
    assert [s for s in (PASS, GHP, GCP) if s.encode() in found] == []
