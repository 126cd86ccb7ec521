"""Acknowledged writes are never dropped, and one client's writes apply in the order it sent them.

Concurrent `remember`s of one id with different texts: one is stored, every other is answered as a conflict at
the call (none acknowledged and refused later). A `remember` made while another process holds the store is
acknowledged unchecked, says what holds the store and which id its text takes if its own id is taken by then,
and lands there: both kept. Many writers in several processes and the imports between them lose nothing (every
acknowledged id is in the store, read from the store itself). Pipelined writes on one MCP connection (stdio and
HTTP) apply in the order sent."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest
from mcp.server.mcpserver.exceptions import ToolError

from memory_pipeline.mcp import order
from memory_pipeline.mcp.write_tools import _remember
from memory_pipeline.search import search
from memory_pipeline.store.remember import ingest_writes
from memory_pipeline.store.spool import REJECTED, RENAMED, other_id, spool_dir
from memory_pipeline_tests.hostile.test_read_path_cases import env_for
from memory_pipeline_tests.writes.conftest import hashing, night_holds

WAIT_S = 240  # a bound on every process and hold here: minutes beside load; a pass never waits it out


def _rows(home: Path) -> dict[str, str]:
    con = duckdb.connect(str(home / "memory.duckdb"), read_only=True)
    try:
        return {str(i): str(c) for i, c in con.execute("SELECT id, content FROM memories").fetchall()}
    finally:
        con.close()


def _logged(home: Path, log: Path) -> list[dict[str, Any]]:
    path = home / log
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


# ---------------------------------------------------------------------------------------------------------------
# Point 1: a conflict is answered at the call, never acknowledged and dropped


@pytest.mark.parametrize("store", ["none yet", "existing"])
def test_concurrent_remembers_of_one_id_store_one_and_answer_every_other_as_a_conflict(tmp_path: Path,
                                                                                       store: str) -> None:  # fmt: skip
    home = tmp_path / "ws"
    home.mkdir()
    if store == "existing":
        _remember(home, 1, "a memory before the race", None, None, None, "before")
    answers: dict[int, Any] = {}
    start = threading.Barrier(48)

    def one(k: int) -> None:
        start.wait(timeout=WAIT_S)
        try:
            answers[k] = _remember(home, 1, f"race text number {k}", None, None, None, f"race-{k % 6}")
        except ToolError as exc:
            answers[k] = str(exc)

    threads = [threading.Thread(target=one, args=(k,)) for k in range(48)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=WAIT_S)
    assert ingest_writes(home) is not None  # whatever is still spooled, imported
    rows = _rows(home)
    acked = {k: a for k, a in answers.items() if not isinstance(a, str)}
    refused = {k: a for k, a in answers.items() if isinstance(a, str)}
    assert len(answers) == 48 and sorted(a.id for a in acked.values()) == [f"race-{i}" for i in range(6)]
    for k, a in acked.items():  # each acknowledged text is what the store holds under its id
        assert a.created and rows[a.id] == f"race text number {k}", (k, a)
    assert all("already stored with other text" in why for why in refused.values()), refused
    assert _logged(home, REJECTED) == [] and _logged(home, RENAMED) == []


def test_a_remember_while_another_process_holds_the_store_is_kept_under_the_id_it_named(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    home.mkdir()
    _remember(home, 1, "The vault code is kept by Ilse", None, None, None, "vault")
    with night_holds(home / "memory.duckdb"):
        held = _remember(home, 1, "The vault code changes every Monday", None, None, None, "vault")
        with pytest.raises(ToolError, match="already stored with other text"):  # the spool holds the first one
            _remember(home, 1, "The vault code is 1234", None, None, None, "vault")
    assert held.created and not held.stored and held.if_taken == other_id("vault", "The vault code changes every "
                                                                          "Monday")  # fmt: skip
    assert "another process holds it: PID" in held.note and "night" not in held.note, held.note
    assert held.if_taken in held.note
    counts = ingest_writes(home)
    assert counts is not None and counts["renamed"] == 1
    rows = _rows(home)
    assert (rows["vault"], rows[held.if_taken]) == ("The vault code is kept by Ilse",
                                                    "The vault code changes every Monday")  # fmt: skip
    assert [r["stored_as"] for r in _logged(home, RENAMED)] == [held.if_taken] and _logged(home, REJECTED) == []
    assert held.if_taken in [h.id for h in search("vault code every Monday", 3, home=home, embedder=hashing())]


# ---------------------------------------------------------------------------------------------------------------
# Point 2: nothing acknowledged vanishes — whatever the text, however many writers and imports in how many processes

LINE_BREAKS = {"line separator": "\u2028", "paragraph separator": "\u2029", "next line": "\x85",
               "file separator": "\x1c", "form feed": "\x0c"}  # fmt: skip


@pytest.mark.parametrize("store", ["free", "held by another process"])
@pytest.mark.parametrize("name", list(LINE_BREAKS))
def test_a_remember_whose_text_holds_a_line_break_character_is_stored_whole(tmp_path: Path, name: str,
                                                                            store: str) -> None:  # fmt: skip
    """A spool line is split on newlines only: a text holding U+2028 (or U+2029, U+0085) was cut in two there,
    both halves skipped as a torn line, the file moved to `done/` — answered stored, found nowhere."""
    home = tmp_path / "ws"
    home.mkdir()
    _remember(home, 1, "a memory that creates the store", None, None, None, "first")
    text = f"The boiler code is 4471{LINE_BREAKS[name]}and the meter is under the stairs"
    if store == "free":
        answer = _remember(home, 1, text, None, None, None, "boiler")
    else:
        with night_holds(home / "memory.duckdb"):
            answer = _remember(home, 1, text, None, None, None, "boiler")
            assert "boiler" in [h.id for h in search("boiler code meter", 3, home=home, embedder=hashing())]
        assert ingest_writes(home) is not None
    assert answer.created and _rows(home).get("boiler") == text
    assert _logged(home, REJECTED) == []
    assert "boiler" in [h.id for h in search("boiler code meter", 3, home=home, embedder=hashing())]


def test_an_empty_store_file_left_by_two_first_writers_is_created_anew_by_the_next_write(tmp_path: Path) -> None:
    """Two processes that create a workspace's store at once can leave an empty `memory.duckdb` that DuckDB refuses
    for good; every write after it stayed spooled. The first writers now create it one at a time, and an empty
    file no process holds is created anew."""
    home = tmp_path / "ws"
    home.mkdir()
    (home / "memory.duckdb").write_bytes(b"")
    answer = _remember(home, 1, "The spare fuse is in the blue tin", None, None, None, "fuse")
    assert answer.created and answer.stored, answer
    assert _rows(home) == {"fuse": "The spare fuse is in the blue tin"}


_WRITER = """
import json, sys, threading
from pathlib import Path
from memory_pipeline.store.forgotten import WriteError
from memory_pipeline.store.remember import remember
from memory_pipeline.store.spool import build_record
home, who, n, ids = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
print("ready", flush=True)
sys.stdin.readline()
breaks = ["", "\\u2028", "\\x85", "\\u2029"]  # texts as a hostile user writes them: some hold line separators
def one(j):
    text = f"writer {who} remembers fact {j} of {n}{breaks[j % 4]} and says so"
    mid = f"mp-{who}-{j}" if ids == "distinct" else f"race-{j % 3}"
    try:
        done = remember(home, build_record(text, memory_id=mid))
        print(json.dumps({"id": done.id, "text": text, "if_taken": done.if_taken}), flush=True)
    except WriteError as exc:
        print(json.dumps({"refused": str(exc)}), flush=True)
threads = [threading.Thread(target=one, args=(j,)) for j in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


def _race(home: Path, ids: str) -> list[dict[str, Any]]:
    """4 writer processes × 8 threads, started together; what each write was answered."""
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(home), str(w), "8", ids], env=env_for(home),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in range(4)]  # fmt: skip
    answers: list[dict[str, Any]] = []
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:  # all started: go
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            out, err = p.communicate(timeout=WAIT_S)
            assert p.returncode == 0, err[-2000:]
            answers += [json.loads(line) for line in out.split("\n") if line.strip()]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=WAIT_S)
    return answers


@pytest.mark.slow
@pytest.mark.parametrize("ids", ["distinct", "shared"])
def test_many_writers_in_several_processes_lose_no_acknowledged_write(tmp_path: Path, ids: str) -> None:
    """Rounds of 4 processes × 8 threads remembering at once, on a fresh workspace each round (the first writes
    also create the store, the others race them to it), some texts holding line separators; distinct ids, or three
    ids shared by all with different texts. Every acknowledged text is in the store under its id (or, left
    unchecked while another process held the store, under the id its answer named); every other write was refused
    as a conflict at the call; every write the spool moved to `done/` is stored; nothing is rejected."""
    for rnd in range(4):
        home = tmp_path / f"ws{rnd}"
        home.mkdir()
        answers = _race(home, ids)
        assert len(answers) == 32
        assert ingest_writes(home) is not None  # the last writes may still be spooled
        rows = _rows(home)
        acked = [a for a in answers if "refused" not in a]
        lost = [a for a in acked if rows.get(a["id"]) != a["text"] and rows.get(a["if_taken"] or "-") != a["text"]]
        assert lost == [], f"round {rnd}: acknowledged but not stored"
        refused = [a["refused"] for a in answers if "refused" in a]
        assert all("already stored with other text" in r for r in refused), refused
        assert len(acked) == 32 if ids == "distinct" else len(acked) >= 3  # each shared id: one text at least
        done = [json.loads(line) for f in (spool_dir(home) / "done").glob("*.jsonl")
                for line in f.read_text().split("\n") if line.strip()]  # fmt: skip
        stored = set(rows.values())
        assert [e["record"]["id"] for e in done if e["record"]["content"] not in stored] == [], f"round {rnd}"
        assert _logged(home, REJECTED) == []


# ---------------------------------------------------------------------------------------------------------------
# Point 4: one connection's writes apply in the order sent


def _pipelined(n: int) -> list[tuple[str, dict[str, Any]]]:
    """remember, forget, remember, … of one id: each answer depends on every write before it."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for i in range(n):
        calls.append(("remember", {"text": "The spare key hangs behind the boiler", "id": "key"}))
        calls.append(("forget", {"id": "key", "reason": f"moved, time {i}"}))
    return calls


def _expected(name: str, answer: dict[str, Any], i: int) -> None:
    if name == "forget":
        assert answer.get("stored") is True, (i, answer)
    else:
        assert answer.get("created") is (i == 0) and answer.get("revived") is (i > 0), (i, answer)


@pytest.mark.slow
def test_pipelined_writes_over_stdio_apply_in_the_order_sent(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    home.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "memory_pipeline.cli", "mcp"],
                            env=env_for(home, MEMORY_PIPELINE_EMBEDDER="hashing-bow-256"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    calls = _pipelined(8)
    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 0
        lines = [{"jsonrpc": "2.0", "method": "notifications/initialized"}] + [
            {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ]
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines))  # one write: sent before any answer
        proc.stdin.flush()
        answers = {}
        while len(answers) < len(calls):
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "the server closed its output"
            msg = json.loads(line)
            answers[msg["id"]] = msg
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=WAIT_S)
    for i, (name, _args) in enumerate(calls):
        result = answers[i + 1]["result"]
        assert not result.get("isError"), (i, result["content"][0]["text"])
        _expected(name, result["structuredContent"], i // 2)


def test_a_write_sent_while_an_earlier_one_is_in_flight_over_http_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first `remember` is held in flight (before it is spooled); the `forget` sent after it on the same
    session must wait: run at once, it would find no memory and fail."""
    import httpx2
    from httpx2 import ASGITransport

    from memory_pipeline.mcp.server import build_server

    home, holds = tmp_path / "ws", tmp_path / "holds"
    home.mkdir()
    holds.mkdir()
    monkeypatch.setenv("MEMORY_PIPELINE_HOLD_AT", f"mcp_write:{holds}")
    monkeypatch.setenv("MEMORY_PIPELINE_HOLD_LIMIT_S", str(WAIT_S))
    app = build_server(home, hashing(), record_usage=False).streamable_http_app(json_response=True)
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    def call(rid: int, name: str, args: dict[str, Any]) -> str:
        return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                           "params": {"name": name, "arguments": args}})  # fmt: skip

    async def run() -> list[Any]:
        async with app.router.lifespan_context(app), httpx2.AsyncClient(
            transport=ASGITransport(app=app), base_url="http://127.0.0.1:8765"
        ) as http:
            hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
            r = await http.post("/mcp", headers=headers, content=json.dumps(
                {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}))  # fmt: skip
            session = {**headers, "mcp-session-id": r.headers["mcp-session-id"]}
            initialized = '{"jsonrpc": "2.0", "method": "notifications/initialized"}'
            await http.post("/mcp", headers=session, content=initialized)
            out: dict[int, Any] = {}

            async def post(rid: int, body: str) -> None:
                out[rid] = (await http.post("/mcp", headers=session, content=body)).json()

            async with anyio.create_task_group() as tg:
                try:
                    tg.start_soon(post, 1, call(1, "remember", {"text": "The ladder is in the shed", "id": "ladder"}))
                    await _until(lambda: (holds / "mcp_write.reached").exists(), "the remember to reach its hold")
                    tg.start_soon(post, 2, call(2, "forget", {"id": "ladder", "reason": "lent out"}))
                    await _until(lambda: 2 in out or _waiting_writes() > 0, "the forget to answer or to wait its turn")
                    assert 2 not in out, f"the forget ran before the remember sent first: {out[2]}"
                finally:
                    (holds / "mcp_write.release").touch()  # never left held, pass or fail
            return [out[1], out[2]]

    first, second = anyio.run(run)
    assert first["result"]["structuredContent"]["created"] is True, first
    assert not second["result"].get("isError") and second["result"]["structuredContent"]["stored"] is True, second
    assert "ladder" not in [h.id for h in search("ladder shed", 3, home=home, embedder=hashing())]


def _waiting_writes() -> int:
    return sum(len(t._waiting) for t in list(order._TURNS.values()))


async def _until(ready: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not ready():
        assert time.monotonic() < deadline, f"waited {WAIT_S} s for {what}"
        await anyio.sleep(0.01)


def test_the_write_order_skips_a_write_cancelled_before_its_turn() -> None:
    turns = order.Turns()
    first, second, third = turns.take(), turns.take(), turns.take()
    turns.done(second)  # cancelled while it waited
    turns.done(first)
    assert turns._serving == third


# ---------------------------------------------------------------------------------------------------------------
# Over the gateway (writes imported in batches): a revived memory is found by the next search


def test_a_memory_revived_over_the_gateway_is_found_by_the_next_search(tmp_path: Path) -> None:
    from memory_pipeline.embedding.hashing import hashing_embed
    from memory_pipeline.embedding.spec import HASHING
    from memory_pipeline.fleet.gateway import build_app
    from memory_pipeline.fleet.registry import agents_dir
    from memory_pipeline.mcp.server import build_server
    from memory_pipeline.search import build_index
    from memory_pipeline_tests.fleet.gateway_helpers import call, fleet, result, serving

    root = tmp_path / "fleet"
    token = fleet(root, ["ada"])["ada"]
    home = agents_dir(root) / "ada"
    text = {"text": "The greenhouse thermostat is set to nineteen degrees", "id": "greenhouse"}
    app = build_app(root, lambda ws: build_server(ws, hashing(), record_usage=False, import_at=5))

    async def run() -> tuple[dict[str, Any], list[str]]:
        async with serving(app) as http:
            assert not result(await call(http, token, "remember", text)).get("isError")
            assert ingest_writes(home) is not None  # in the store, and in the index, as a night leaves it
            build_index(home, hashing_embed, HASHING)
            gone = result(await call(http, token, "forget", {"id": "greenhouse", "reason": "sensor replaced"}))
            assert gone["structuredContent"]["stored"] is True, gone
            back = result(await call(http, token, "remember", text))["structuredContent"]
            found = result(await call(http, token, "search", {"query": "greenhouse thermostat", "k": 3}))
            return back, [h["id"] for h in found["structuredContent"]["hits"]]

    back, hits = anyio.run(run)
    assert back["revived"] is True and back["stored"] is False, back
    assert "night" not in back["note"] and "next batch of writes" in back["note"], back["note"]
    assert "greenhouse" in hits
