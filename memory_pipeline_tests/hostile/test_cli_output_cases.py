"""What the CLI prints never acts on the terminal, a reader that leaves early is no error, and no advice loops.

- Content with `\\x1b]0;…\\x07\\x1b[2J` (a window title and a cleared screen) went to the terminal raw from `search`
  and `context`: every command's stdout now shows such characters as `\\uXXXX`, also valid inside `--json`.
- `status | head -1` ended in a BrokenPipeError traceback.
- `import` of an empty file into a new workspace left no store, and `run` then asked for that import again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_pipeline.cli import main
from memory_pipeline.terminal import visible

ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil"
TEXT = f"The staging VPN endpoint is vpn-stg.example.org {ESCAPES} port 1194"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    src = tmp_path / "in.jsonl"
    other = "The production VPN endpoint is vpn.example.org"
    rows = [{"id": "m-esc", "content": TEXT, "created_at": "2026-10-01T09:00:00Z"},
            {"id": "m-2", "content": other, "created_at": "2026-10-02T09:00:00Z"}]  # fmt: skip
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(ws))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hashing-bow-256")
    assert main(["import", str(src)]) == 0
    return ws


@pytest.mark.parametrize(
    "argv",
    [["search", "staging VPN endpoint", "-k", "2"], ["search", "staging VPN endpoint", "--json"],
     ["context", "staging VPN endpoint", "--budget", "400"]],
    ids=["search", "search-json", "context"],
)  # fmt: skip
def test_stored_escape_sequences_are_shown_not_run(
    home: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "vpn-stg.example.org" in out
    assert not any(ch in out for ch in "\x1b\x07\x9b\u202e"), repr(out)
    assert "\\u001b]0;pwned\\u0007" in out
    if "--json" in argv:
        (hit,) = [h for h in json.loads(out)["hits"] if h["id"] == "m-esc"]
        assert "\x1b]0;pwned\x07\x1b[2J\x9b31m" in hit["snippet"]  # valid JSON, which decodes to the stored text


def test_visible_keeps_lines_and_tabs() -> None:
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible("\r\x00\x7f") == "\\u000d\\u0000\\u007f"


def test_a_reader_that_leaves_early_is_no_error(home: Path) -> None:
    """`status | head -1` once head has gone: stdout is a pipe nobody reads (its read end closed before the start,
    so the first write fails, whatever the timing)."""
    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sys.executable, "-m", "memory_pipeline.cli", "status"], env=env, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=300)  # fmt: skip
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode == 141, done.stderr


def test_an_empty_import_into_a_new_workspace_leaves_a_store_run_can_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`import` of an empty file said it imported 0 memories and created no store; `run` then asked for the import
    that had just happened, again and again."""
    ws = tmp_path / "new ws"
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(ws))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hashing-bow-256")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    assert main(["import", str(tmp_path / "empty.jsonl")]) == 0
    assert (ws / "memory.duckdb").is_file()
    capsys.readouterr()
    assert main(["run"]) == 0
    out, err = capsys.readouterr()
    assert "import PATH" not in out + err and "nothing new to consolidate" in out, out + err


def test_a_background_import_of_a_missing_file_is_one_line_and_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "ws"))
    assert main(["transcripts", "import", str(tmp_path / "nope.jsonl"), "--background"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"error: {tmp_path / 'nope.jsonl'}: no such file or folder; nothing imported"]
    assert not (tmp_path / "ws" / "reports" / "background-imports.log").exists()
