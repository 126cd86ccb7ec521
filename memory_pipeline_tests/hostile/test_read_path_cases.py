"""Hostile input on the read path: what could hang, and MCP over stdio without raw tracebacks.

A topic whose pattern backtracks exponentially, a named pipe where a topic, an identity file or today's
journal should be, a 100,000-turn history, a call held in flight while another one comes in, and lines on the
MCP stdio pipe that are not JSON-RPC messages. The real-process cases run `memory-pipeline context` and
`memory-pipeline mcp` as subprocesses (the MCP ones through the official SDK's client), and every wait is
bounded and says in its message what it waited for.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from memory_pipeline.context.compiler import compile_context
from memory_pipeline.context.files import NotRegularFile, read_regular_text
from memory_pipeline.context.patterns import PatternTimeout, search_bounded
from memory_pipeline.context.sample import install_sample_knowledge
from memory_pipeline.context.topics import load_topics
from memory_pipeline.mcp.stdio import frame_error

WAIT_S = 300  # bound of every wait on a subprocess: minutes (busy cores), far above the seconds each needs
EVIL = "a" * 40 + "b"  # the message


def topic(pattern: str, name: str = "runaway") -> tuple[str, str]:
    text = f"""---
type: topic
triggers:
  - type: pattern
    match: "{pattern}"
activation: auto
---

# {name.title()}

Say so when the message is all a's.
"""
    return f"topics/{name}.md", text


def today_journal() -> str:
    return f"knowledge/journal/{datetime.now(UTC).date()}.md"


def fifo(home: Path, rel: str) -> None:
    (home / rel).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(home / rel)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The sample topics and knowledge, no store and no index: search answers from its keyword fallback, so
    no process here loads a model."""
    ws = tmp_path / "ws"
    install_sample_knowledge(ws)
    return ws


def snapshot(home: Path) -> dict[str, str]:
    """Every path under the workspace with its kind and content, less what a context call may append (the gate
    log and the usage spools) and the search index (derived data a search builds when it is missing)."""
    out: dict[str, str] = {}
    for p in sorted(home.rglob("*")):
        rel = p.relative_to(home).as_posix()
        if rel.split("/")[0] in ("reports", "spool", "index"):
            continue
        if p.is_fifo():
            out[rel] = "fifo"
        elif p.is_file():
            out[rel] = p.read_text(encoding="utf-8", errors="replace")
    return out


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "MEMORY_PIPELINE_HOLD_AT")}
    return {
        **env,
        "MEMORY_PIPELINE_HOME": str(home),
        "MEMORY_PIPELINE_LLM": "offline",
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
        **extra,
    }


# ---------------------------------------------------------------------------------------------------------------
# In process, fast: the pieces.


def test_a_runaway_pattern_is_cut_at_its_bound_and_a_sane_one_is_not() -> None:
    with pytest.raises(PatternTimeout):
        search_bounded("(a|aa)+$", [EVIL], seconds=0.05)
    assert search_bounded("(a+)+$", [EVIL], seconds=5) is False  # the pattern: no backtracking blow-up here
    assert search_bounded(r"\bJTO\b", ["market order on jto/usdt"]) is True  # case-insensitive, as before


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")
    (tmp_path / "dir.md").mkdir()
    (tmp_path / "ok.md").write_text("fine\n", encoding="utf-8")
    for name, kind in (("pipe.md", "a named pipe (FIFO)"), ("dir.md", "a directory")):
        with pytest.raises(NotRegularFile) as info:
            read_regular_text(tmp_path / name)  # returns at once: the FIFO is opened without blocking
        assert info.value.kind == kind
    assert read_regular_text(tmp_path / "ok.md") == "fine\n"


def test_compile_goes_on_past_a_slow_pattern_and_a_fifo_journal(home: Path) -> None:
    rel, text = topic("(a|aa)+$")
    (home / rel).write_text(text, encoding="utf-8")
    fifo(home, "knowledge/journal/2026-11-02.md")
    topics, errors = load_topics(home)
    assert errors == []
    out = compile_context(home, f"deploy now {EVIL}", topics=topics,
                          today=datetime(2026, 11, 2, tzinfo=UTC).date())
    entries = {e.label: e for e in out.manifest}
    assert entries["trigger:runaway.triggers[0].match"].reason.startswith("pattern ran longer than 0.25 s")
    assert entries["journal:2026-11-02"].reason == "skipped: is a named pipe (FIFO), not a regular file"
    assert entries["topic:deploys"].included  # the other topics are still matched
    assert len(out.warnings) == 2
    assert out.warnings[0].endswith("2026-11-02.md: is a named pipe (FIFO), not a regular file: skipped; "
                                    "replace it with a regular file")
    assert "runaway.md: field 'triggers[0].match': pattern '(a|aa)+$' ran longer than" in out.warnings[1]


@pytest.mark.parametrize(
    ("line", "rid", "code"),
    [
        ("garbage", None, -32700),
        ('{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"q": "\\ud800"}}', 5, -32700),
        ('{"jsonrpc": "2.0", "id": 1, "method": "ping"', None, -32700),  # cut short
        ("[1, 2]", None, -32600),
        ('{"id": 7, "method": "ping"}', 7, -32600),  # no "jsonrpc"
        ('{"jsonrpc": "2.0", "id": 8, "method": "ping"}', "ok", 0),
        ("   ", "ok", 0),  # a blank line is no message
        ('{"jsonrpc": "2.0", "id": 9, "error": "x"}', "ok", 0),  # a malformed response is not answered
    ],
)
def test_every_line_that_is_not_a_message_gets_its_error(line: str, rid: Any, code: int) -> None:
    error = frame_error(line)
    if rid == "ok":
        assert error is None
        return
    assert error is not None and error.id == rid and error.error.code == code
    assert "\n" not in error.error.message


# ---------------------------------------------------------------------------------------------------------------
# Real processes: `memory-pipeline context`.


@dataclass(frozen=True)
class Case:
    name: str
    setup: Callable[[Path], None]
    message: str
    warnings: tuple[str, ...]  # what each stderr line must contain, in order
    manifest: dict[str, str] = field(default_factory=dict)  # label -> start of its reason (left out)
    included: tuple[str, ...] = ()  # labels that must be in the prompt


def _write(rel_text: tuple[str, str]) -> Callable[[Path], None]:
    def setup(home: Path) -> None:
        (home / rel_text[0]).write_text(rel_text[1], encoding="utf-8")

    return setup


CLI_CASES = [
    Case("the issue's pattern (a+)+$", _write(topic("(a+)+$")), f"deploy now {EVIL}", (),
         included=("topic:deploys",)),
    Case("a pattern past its bound", _write(topic("(a|aa)+$")), f"deploy now {EVIL}",
         ("runaway.md: field 'triggers[0].match': pattern '(a|aa)+$' ran longer than 0.25 s on the message",),
         {"trigger:runaway.triggers[0].match": "pattern ran longer than 0.25 s"}, ("topic:deploys",)),
    Case("a FIFO topic", lambda h: fifo(h, "topics/fifo.md"), "deploy now",
         ("topic skipped: ", "fifo.md: field 'file': is a named pipe (FIFO), not a regular file: skipped"),
         included=("topic:deploys",)),
    Case("a FIFO identity file", lambda h: fifo(h, "knowledge/identity/PIPE.md"), "deploy now",
         ("identity/PIPE.md: is a named pipe (FIFO), not a regular file: skipped; replace it with a regular file",),
         {"identity:PIPE.md": "skipped: is a named pipe (FIFO)"}, ("identity:SOUL.md", "topic:deploys")),
    Case("a FIFO as today's journal", lambda h: fifo(h, today_journal()), "deploy now",
         ("journal/", ".md: is a named pipe (FIFO), not a regular file: skipped"),
         {}, ("identity:SOUL.md", "topic:deploys")),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", CLI_CASES, ids=[c.name for c in CLI_CASES])
def test_context_cli_returns_and_names_what_it_skipped(home: Path, case: Case) -> None:
    case.setup(home)
    before = snapshot(home)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "memory_pipeline.cli", "context", case.message, "--json"],
            env=env_for(home), capture_output=True, text=True, timeout=WAIT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`memory-pipeline context` did not return within {WAIT_S} s ({case.name})")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == (1 if case.warnings else 0), proc.stderr
    for part in case.warnings:
        assert part in lines[0] and lines[0].startswith("warning: "), lines
    out = json.loads(proc.stdout)
    manifest = {e["label"]: e for e in out["manifest"]}
    for label, reason in case.manifest.items():
        assert not manifest[label]["included"] and manifest[label]["reason"].startswith(reason), manifest[label]
    for label in case.included:
        assert manifest[label]["included"], manifest[label]
    if case.name == "a FIFO as today's journal":  # its label is today's or (past midnight) yesterday's
        [entry] = [e for e in out["manifest"] if e["path"] and e["path"].startswith("knowledge/journal/")
                   and e["reason"].startswith("skipped:")]
        assert entry["reason"] == "skipped: is a named pipe (FIFO), not a regular file"
    assert snapshot(home) == before  # nothing read-only was written, the FIFOs are still FIFOs


# ---------------------------------------------------------------------------------------------------------------
# Real processes: `memory-pipeline mcp` over stdio, through the SDK's client.


def _params(home: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "memory_pipeline.cli", "mcp"],
                                 env=env_for(home, **env))


async def _wait_for(path: Path, what: str) -> None:
    with anyio.fail_after(WAIT_S):  # the server's start-up and the call's way to the hold point
        while not path.exists():
            await anyio.sleep(0.05)
    assert path.exists(), what


@pytest.mark.slow
def test_mcp_a_held_context_call_does_not_hold_up_search(home: Path, tmp_path: Path) -> None:
    """The context call is parked at a hold point (memory_pipeline.faults) until the test releases it, so
    "search answered while context was in flight" follows from the order of events, not from timings."""
    signals = tmp_path / "signals"
    signals.mkdir()
    reached, release = signals / "mcp_context.reached", signals / "mcp_context.release"
    events: list[str] = []

    async def run() -> None:
        async with Client(_params(home, MEMORY_PIPELINE_HOLD_AT=f"mcp_context:{signals}"),
                          read_timeout_seconds=WAIT_S) as client:
            context_done = anyio.Event()
            result: dict[str, Any] = {}

            async def slow_context() -> None:
                result["context"] = await client.call_tool("context", {"message": "deploy now"})
                events.append("context answered")
                context_done.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow_context)
                await _wait_for(reached, "the context call never reached its hold point")
                events.append("context in flight")
                try:
                    with anyio.fail_after(60):
                        found = await client.call_tool("search", {"query": "rollback plan", "k": 3})
                except TimeoutError:
                    pytest.fail("search got no answer within 60 s while a context call was held: calls serialise")
                events.append("search answered")
                assert not found.is_error and found.structured_content["hits"], found
                assert not context_done.is_set(), "context answered before it was released"
                release.touch()
                try:
                    with anyio.fail_after(WAIT_S):
                        await context_done.wait()
                except TimeoutError:
                    pytest.fail(f"the released context call got no answer within {WAIT_S} s")
            assert not result["context"].is_error, result["context"]

    anyio.run(run)
    assert events == ["context in flight", "search answered", "context answered"]


@pytest.mark.slow
def test_mcp_context_with_a_runaway_pattern_a_fifo_and_100k_turns(home: Path) -> None:
    rel, text = topic("(a|aa)+$")
    (home / rel).write_text(text, encoding="utf-8")
    fifo(home, "knowledge/identity/PIPE.md")
    turns = [{"role": "user", "content": f"turn {i} about the release"} for i in range(100_000)]

    async def run() -> None:
        async with Client(_params(home), read_timeout_seconds=WAIT_S) as client:
            answers: dict[str, Any] = {}

            async def call(name: str, tool: str, args: dict[str, Any]) -> None:
                answers[name] = await client.call_tool(tool, args)

            try:
                with anyio.fail_after(WAIT_S):
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(call, "redos", "context", {"message": f"deploy now {EVIL}"})
                        tg.start_soon(call, "search", "search", {"query": "rollback plan"})
                        tg.start_soon(call, "long", "context", {"message": "deploy now", "history": turns})
            except TimeoutError:
                pytest.fail(f"not every call was answered within {WAIT_S} s: answered {sorted(answers)}")
            redos, long, found = answers["redos"], answers["long"], answers["search"]
            assert not redos.is_error and not long.is_error and not found.is_error
            warnings = redos.structured_content["warnings"]
            fifo = [w for w in warnings if w.endswith("PIPE.md: is a named pipe (FIFO), not a regular file: "
                                                      "skipped; replace it with a regular file")]  # fmt: skip
            slow = [w for w in warnings if "ran longer than 0.25 s" in w]
            assert len(fifo) == 1 and len(fifo) + len(slow) == len(warnings), warnings
            # the runaway pattern always; under heavy load another topic's pattern may pass the bound too
            assert any("runaway.md: field 'triggers[0].match': pattern '(a|aa)+$' ran longer than 0.25 s" in w
                       for w in slow), warnings
            labels = {s["label"]: s for s in redos.structured_content["manifest"]}
            assert labels["topic:deploys"]["included"]
            manifest = long.structured_content["manifest"]
            older = [s for s in manifest if s["reason"].endswith("older than the first turn that did not fit")]
            assert len(older) == 1 and older[0]["reason"].split()[0].isdigit(), older
            assert len(manifest) < 2_000  # not one entry per dropped turn
            assert long.structured_content["tokens"] <= 8192

    anyio.run(run)


class _Lines:
    """The server's stdout, line by line, with a bounded wait."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.q: queue.Queue[bytes] = queue.Queue()
        assert proc.stdout is not None
        out = proc.stdout
        threading.Thread(target=lambda: [self.q.put(line) for line in iter(out.readline, b"")], daemon=True).start()

    def next(self, what: str) -> dict[str, Any]:
        try:
            return json.loads(self.q.get(timeout=WAIT_S))
        except queue.Empty:
            pytest.fail(f"no answer within {WAIT_S} s to {what}")


STDIO_CASES: list[tuple[bytes, Any, int]] = [  # the raw line, the id of its answer, its error code
    (b"garbage", None, -32700),
    (b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "search", '
     b'"arguments": {"query": "\\ud800"}}}', 5, -32700),
    (b"[1, 2]", None, -32600),
    (b'{"id": 7, "method": "tools/list"}', 7, -32600),
]


@pytest.mark.slow
def test_mcp_stdio_answers_every_line(home: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "memory_pipeline.cli", "mcp"], env=env_for(home),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None
    stdin = proc.stdin

    def send(raw: bytes) -> None:
        stdin.write(raw + b"\n")
        stdin.flush()

    try:
        lines = _Lines(proc)
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}).encode())
        assert lines.next("initialize")["id"] == 1
        send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        for raw, rid, code in STDIO_CASES:
            send(raw)
            answer = lines.next(repr(raw))
            assert answer["id"] == rid and answer["error"]["code"] == code, (raw, answer)
        # the server is still serving, and bytes that are not UTF-8 are read as U+FFFD, not dropped
        send(b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "search", '
             b'"arguments": {"query": "\xff\xfe rollback"}}}')
        answer = lines.next("a search whose query holds invalid UTF-8")
        assert answer["id"] == 9 and "result" in answer, answer
    finally:
        stdin.close()
        try:
            proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"the server did not exit within {WAIT_S} s of stdin closing")
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.returncode == 0 and "Traceback" not in stderr, stderr
