"""Hostile input for `transcripts import`, one table row per case: a bad file is one line naming it and why, the
other files of the folder still import, and nothing is a raw traceback."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.cli import main
from memory_pipeline.journals.transcript import FILENAME
from memory_pipeline_tests.journals.test_transcript_import import CC_MAIN, CODEX, transcripts

CODEX_ID = "cx_0199e0d24c1b7a30b5e42f8d9c6a1e57"
CC_ID = "cc_3f2a9c1e7b4d4e8a9c2f5d6e7f8a9b0c"


def rollout(sid: str, *items: dict[str, object], at: str = "2026-10-15T14:03:11Z") -> bytes:
    """A Codex rollout: session_meta with `sid`, then each item as `{timestamp, type, payload}`."""
    lines = [{"timestamp": at, "type": "session_meta", "payload": {"id": sid, "cwd": "/src/app", "cli_version": "1"}}]
    lines += [{"timestamp": at, "type": str(i.pop("line", "response_item")), "payload": i} for i in map(dict, items)]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def said(role: str, text: str) -> dict[str, object]:
    kind = "input_text" if role == "user" else "output_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def log(sid: str, text: str, at: str = "2026-10-16T09:00:00Z") -> bytes:
    rows = [{"session_id": sid, "role": "user", "content": text, "timestamp": at},
            {"session_id": sid, "role": "assistant", "content": f"Noted: {text}", "timestamp": at}]  # fmt: skip
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


DEEP = (b'{"type": "user", "sessionId": "s", "message": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
DESKTOP = rollout(
    "0199f1aa-desk-top0-0000-000000000001",
    {"line": "turn_context", "model": "gpt-5"},
    {"line": "event_msg", "type": "user_message", "message": "Which port does the staging proxy listen on?"},
    {"line": "event_msg", "type": "token_count", "info": None},
    {"line": "event_msg", "type": "agent_message", "message": "Decided: the staging proxy listens on 8443."},
)
FIRST_RELEASE = "".join(json.dumps(line) + "\n" for line in [
    {"id": "0198aa00-0000-7000-8000-00000000f1r5", "timestamp": "2025-05-20T10:15:00.000Z", "instructions": None},
    {"record_type": "state"},
    said("user", "Why is the nightly export slow?"),
    {"type": "function_call", "name": "shell", "arguments": '{"command":["du","-sh","exports"]}', "call_id": "c1"},
    {"type": "function_call_output", "call_id": "c1", "output": "41G exports"},
    said("assistant", "Lesson learned: prune old exports before the nightly run."),
]).encode()  # fmt: skip


@dataclass(frozen=True)
class Case:
    name: str
    files: dict[str, bytes]  # file name in the source folder → bytes
    code: int
    errors: list[str]  # the stderr lines ({src} is the folder)
    summary: str  # in the summary line
    sessions: set[str] | Callable[[set[str]], bool]  # the transcripts' session ids, or a check of them
    args: Callable[[Path], list[str]] = lambda src: [str(src)]
    texts: tuple[str, ...] = ()  # in the transcripts' turns


CASES = [
    Case("a 500-character session id is imported under a shortened id; the next file too",
         {"a-long.jsonl": rollout("x" * 500, said("user", "Long ids?"), said("assistant", "Shortened.")),
          "b-codex.jsonl": CODEX.read_bytes()},
         0, [], "2 file(s): 2 new transcript(s)",
         lambda ids: CODEX_ID in ids and any(i.startswith("cx_xxxx") and len(i) <= 100 for i in ids)),
    Case("100,000-deep nested JSON is one line naming the file; the file after it imports",
         {"a-deep.jsonl": DEEP, "b-codex.jsonl": CODEX.read_bytes()},
         1, ["error: {src}/a-deep.jsonl:1: JSON nested too deeply to read (more levels than Python's parser "
             "allows); file not imported"],
         "2 file(s): 1 new transcript(s), 0 updated, 0 unchanged; 1 failed", {CODEX_ID}),
    Case("ids that differ only in characters an id cannot hold are two sessions",
         {"a.jsonl": log("abc", "deploys freeze on Fridays"), "b.jsonl": log("a/b/c", "the VPN moved to vpn2")},
         0, [], "2 file(s): 2 new transcript(s), 0 updated, 0 unchanged",
         lambda ids: len(ids) == 2 and "msg_abc" in ids and all(FILENAME.match(f"0900-{i}-x.md") for i in ids)),
    Case("ids alike in one file are two sessions too",
         {"both.jsonl": log("abc", "deploys freeze on Fridays") + log("a/b/c", "the VPN moved to vpn2")},
         0, [], "1 file(s): 2 new transcript(s), 0 updated, 0 unchanged", lambda ids: len(ids) == 2,
         texts=("deploys freeze on Fridays", "the VPN moved to vpn2")),
    Case("a Codex Desktop rollout (text only in event_msg) is imported",
         {"rollout-desktop.jsonl": DESKTOP}, 0, [], "1 file(s): 1 new transcript(s)",
         {"cx_0199f1aadesktop00000000000000001"},
         texts=("Which port does the staging proxy listen on?", "Decided: the staging proxy listens on 8443.")),
    Case("a first-release Codex rollout (no envelope) is read as Codex, not as a message log",
         {"rollout-2025-05-20T10-15-00-old.jsonl": FIRST_RELEASE}, 0, [], "1 file(s): 1 new transcript(s)",
         {"cx_0198aa0000007000800000000000f1r5"},
         texts=("Why is the nightly export slow?", "Lesson learned: prune old exports before the nightly run.")),
    Case("a byte-order mark before the first line is not an error",
         {"bom.jsonl": b"\xef\xbb\xbf" + CODEX.read_bytes(),
          "bom.json": b"\xef\xbb\xbf" + json.dumps({"session_id": "bom1", "messages": [
              {"role": "user", "content": "BOM?", "timestamp": "2026-10-16T09:00:00Z"}]}).encode()},
         0, [], "2 file(s): 2 new transcript(s)", {CODEX_ID, "msg_bom1"}),
    Case("an empty file says it is empty; not an error",
         {"empty.jsonl": b"", "b-codex.jsonl": CODEX.read_bytes()},
         0, ["warning: {src}/empty.jsonl: the file is empty; nothing to import"],
         "2 file(s): 1 new transcript(s), 0 updated, 0 unchanged, 1 empty", {CODEX_ID}),
    Case("a session dated 2099 is imported with a warning",
         {"future.jsonl": log("f1", "far ahead", at="2099-03-01T10:00:00Z")},
         0, ["warning: {src}/future.jsonl: session f1 starts 2099-03-01 10:00 UTC, in the future (a wrong clock or "
             "time zone in the source?); imported on that day, whose journal waits until then"],
         "1 file(s): 1 new transcript(s)", {"msg_f1"}),
    Case("a named pipe given as PATH is named as one, never opened",
         {}, 1, ["error: {src}/pipe.jsonl: not a regular file or folder (a named pipe); not imported"],
         "0 file(s): 0 new transcript(s), 0 updated, 0 unchanged; 1 failed", set(),
         args=lambda src: [_fifo(src / "pipe.jsonl")]),
]  # fmt: skip


def _fifo(path: Path) -> str:
    os.mkfifo(path)
    return str(path)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "ws"
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    return home


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_transcript_import_case(
    case: Case, tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name, data in case.files.items():
        (src / name).write_bytes(data)
    code = main(["transcripts", "import", *case.args(src), "--no-journals"])
    out, err = capsys.readouterr()
    assert (code, err.splitlines()) == (case.code, [e.format(src=src) for e in case.errors]), out
    assert case.summary in out and "Traceback" not in out + err
    ids = set(transcripts(workspace / "raw")) if (workspace / "raw").exists() else set()
    assert case.sessions(ids) if callable(case.sessions) else ids == case.sessions, ids
    turns = [t.text for s in transcripts(workspace / "raw").values() for t in s.turns] if ids else []
    assert all(text in turns for text in case.texts), turns
    if case.code == 0 and ids:  # importing the same folder again writes nothing and fails nothing
        assert main(["transcripts", "import", *case.args(src), "--no-journals"]) == 0
        assert f"{len(ids)} unchanged" in capsys.readouterr().out


def test_a_folder_still_imports_unchanged_after_a_file_is_removed(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two files hold one session (an earlier copy and the whole): the session is the whole, and importing the
    folder again — with both, or after the whole one is removed — writes nothing and fails nothing."""
    src = tmp_path / "src"
    src.mkdir()
    lines = CC_MAIN.read_text(encoding="utf-8").splitlines(keepends=True)
    (src / "a-copy.jsonl").write_text("".join(lines[:5]), encoding="utf-8")
    shutil.copyfile(CC_MAIN, src / "b-whole.jsonl")
    assert main(["transcripts", "import", str(src), "--no-journals"]) == 0
    whole = transcripts(workspace / "raw")[CC_ID]
    capsys.readouterr()
    assert main(["transcripts", "import", str(src), "--no-journals"]) == 0
    assert "2 unchanged; nothing written" in capsys.readouterr().out
    (src / "b-whole.jsonl").unlink()
    assert main(["transcripts", "import", str(src), "--no-journals"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "1 file(s): 0 new transcript(s), 0 updated, 1 unchanged; nothing written" in out
    assert transcripts(workspace / "raw")[CC_ID].turns == whole.turns


def test_a_sensor_tick_over_a_folder_with_a_bad_file_imports_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_pipeline.defs.journals.agent_transcripts import agent_transcripts_sensor
    from memory_pipeline.resources import MemoryStoreResource

    watched = tmp_path / "sessions"
    watched.mkdir()
    (watched / "a-deep.jsonl").write_bytes(DEEP)
    (watched / "b-long.jsonl").write_bytes(rollout("y" * 500, said("user", "Long?"), said("assistant", "Fine.")))
    shutil.copyfile(CODEX, watched / "c-codex.jsonl")
    an_hour_ago = time.time() - 3600
    for f in watched.iterdir():
        os.utime(f, (an_hour_ago, an_hour_ago))
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    monkeypatch.setenv("MEMORY_PIPELINE_TRANSCRIPT_SOURCES", str(watched))
    resources = {"store": MemoryStoreResource(home=str(tmp_path / "ws"))}
    with dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(), resources=resources) as context:
        result = agent_transcripts_sensor(context)
    assert isinstance(result, dg.SensorResult)
    assert [r.partition_key for r in result.run_requests or []] == ["2026-10-15"]  # both good sessions' day
    assert len(transcripts(tmp_path / "ws" / "raw")) == 2
