import json
from pathlib import Path

import anyio
import pytest

from memory_pipeline.cli import main
from memory_pipeline.fleet import registry, tokens
from memory_pipeline.fleet.gateway import GatewayConfig, RateLimiter
from memory_pipeline_tests.fleet.gateway_helpers import NOW, app_for, call, fleet, result, serving


def test_calls_are_bound_to_the_tokens_agent_and_audited_without_content(tmp_path: Path) -> None:
    keys = fleet(tmp_path, ["alice", "bob"])
    app = app_for(tmp_path)

    async def run() -> None:
        async with serving(app) as http:
            done = result(await call(http, keys["alice"], "remember", {"text": "Alice keeps the violin in room 12",
                                                                         "id": "a-1"}))  # fmt: skip
            assert done["structuredContent"]["created"] is True
            hits = result(await call(http, keys["alice"], "search", {"query": "violin room"}))
            assert [h["id"] for h in hits["structuredContent"]["hits"]] == ["a-1"]
            other = result(await call(http, keys["bob"], "search", {"query": "violin room"}))
            assert other["structuredContent"]["hits"] == []
            gone = result(await call(http, keys["bob"], "forget", {"id": "a-1", "reason": "not mine"}))
            assert gone["isError"] and "no memory with id 'a-1'" in gone["content"][0]["text"]
            assert (await http.get("/healthz")).status_code == 200
            assert (await http.get("/readyz")).json() == {"status": "ready"}

    anyio.run(run)
    assert (tmp_path / "agents" / "alice" / "memory.duckdb").exists()
    audit = (tmp_path / "gateway" / "audit.jsonl").read_text()
    lines = [json.loads(x) for x in audit.splitlines()]
    assert [(x["agent"], x["tool"], x["outcome"], x["hits"]) for x in lines] == [
        ("alice", "remember", "ok", None),
        ("alice", "search", "ok", 1),
        ("bob", "search", "ok", 0),
        ("bob", "forget", "error", None),
    ]
    assert all(isinstance(x["latency_ms"], float) and x["time"] for x in lines)
    assert "violin" not in audit and "not mine" not in audit


def test_no_bad_revoked_or_removed_agents_token_gets_the_same_401(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_FLEET_ROOT", str(tmp_path))
    keys = fleet(tmp_path, ["alice", "bob", "carol"])
    assert main(["agents", "token", "alice"]) == 0
    new_alice = capsys.readouterr().out.strip().splitlines()[-1]
    assert new_alice.startswith("mpg_") and new_alice != keys["alice"]
    stored = (tmp_path / "gateway" / "tokens.json").read_text()
    assert new_alice.split("_", 2)[2] not in stored and keys["bob"].split("_", 2)[2] not in stored
    app = app_for(tmp_path)

    async def run() -> None:
        async with serving(app) as http:
            assert (await call(http, keys["bob"], "search", {"query": "anything"})).status_code == 200
            assert (await call(http, new_alice, "search", {"query": "anything"})).status_code == 200
            assert main(["agents", "token", "bob", "--revoke"]) == 0
            registry.remove_agent(tmp_path, "carol", NOW)
            refused = [
                await call(http, None, "search", {"query": "x"}),
                await call(http, "mpg_000000000000_guess", "search", {"query": "x"}),
                await call(http, "garbage", "search", {"query": "x"}),
                await call(http, keys["alice"], "search", {"query": "x"}),  # replaced by the new one
                await call(http, keys["bob"], "search", {"query": "x"}),  # revoked
                await call(http, keys["carol"], "search", {"query": "x"}),  # agent removed
            ]
            assert {r.status_code for r in refused} == {401}
            assert len({r.text for r in refused}) == 1 and "alice" not in refused[0].text
            assert all(r.headers["www-authenticate"].startswith("Bearer") for r in refused)
            assert (await call(http, new_alice, "search", {"query": "anything"})).status_code == 200

    anyio.run(run)
    assert main(["agents", "token", "nobody"]) == 2  # one line, nothing issued
    assert "not registered" in capsys.readouterr().err


def test_a_body_over_the_limit_is_413_and_writes_nothing(tmp_path: Path) -> None:
    keys = fleet(tmp_path, ["alice"])
    app = app_for(tmp_path, GatewayConfig(max_body_bytes=4096))

    async def run() -> None:
        async with serving(app) as http:
            big = await call(http, keys["alice"], "remember", {"text": "x" * 10_000})
            assert big.status_code == 413 and "4,096 bytes" in big.json()["error"]

    anyio.run(run)
    assert not (tmp_path / "agents" / "alice" / "spool" / "writes").exists()
    assert json.loads((tmp_path / "gateway" / "audit.jsonl").read_text())["outcome"] == "too_large"


def test_over_the_agents_rate_is_429_with_retry_after_and_other_agents_go_on(tmp_path: Path) -> None:
    keys = fleet(tmp_path, ["alice", "bob"])
    app = app_for(tmp_path, GatewayConfig(rate_per_s=0.001, burst=2))

    async def run() -> None:
        async with serving(app) as http:
            codes = [(await call(http, keys["alice"], "search", {"query": "x"})).status_code for _ in range(2)]
            limited = await call(http, keys["alice"], "search", {"query": "x"})
            assert codes == [200, 200] and limited.status_code == 429
            assert int(limited.headers["retry-after"]) >= 1
            assert (await call(http, keys["bob"], "search", {"query": "x"})).status_code == 200

    anyio.run(run)


def test_the_rate_limiter_refills_at_its_rate() -> None:
    now = [0.0]
    limiter = RateLimiter(rate=2.0, burst=1, clock=lambda: now[0])
    assert limiter.take("a") == 0.0 and limiter.take("a") == pytest.approx(0.5)
    now[0] = 0.5
    assert limiter.take("a") == 0.0 and limiter.take("b") == 0.0


def test_tokens_are_salted_hashes_replaced_on_reissue(tmp_path: Path) -> None:
    fleet(tmp_path, ["alice"])
    first = tokens.issue(tmp_path, "alice", NOW)
    second = tokens.issue(tmp_path, "alice", NOW)
    book = tokens.TokenBook(tmp_path)
    assert book.agent(second) == "alice" and book.agent(first) is None
    table = json.loads((tmp_path / "gateway" / "tokens.json").read_text())["tokens"]
    assert len(table) == 1 and all(set(e) == {"agent", "salt", "hash", "issued"} for e in table.values())
    assert (tmp_path / "gateway" / "tokens.json").stat().st_mode & 0o077 == 0
    assert tokens.revoke(tmp_path, "alice") and book.agent(second) is None
    assert not tokens.revoke(tmp_path, "alice")


def test_removing_an_agent_revokes_its_token_so_an_id_added_again_does_not_inherit_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_FLEET_ROOT", str(tmp_path))
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "dagster-less"))
    keys = fleet(tmp_path, ["alice"])
    assert main(["agents", "remove", "alice"]) == 0
    assert "gateway token is revoked" in capsys.readouterr().out
    registry.add_agent(tmp_path, "alice", NOW)
    assert tokens.TokenBook(tmp_path).agent(keys["alice"]) is None


def test_the_audit_reads_method_tool_outcome_and_hits_from_json_and_sse_answers() -> None:
    from memory_pipeline.fleet.gateway import _call_of, _result_of

    assert _call_of(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search"}}') == (
        "tools/call", "search")  # fmt: skip
    assert _call_of(b"not json") == ("", "") and _call_of(b"[1]") == ("", "")
    answer = b'{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"hits":[{"id":"a"},{"id":"b"}]}}}'
    assert _result_of(200, answer) == ("ok", 2)
    assert _result_of(200, b": ping\r\n\r\nevent: message\r\ndata: " + answer + b"\r\n\r\n") == ("ok", 2)
    assert _result_of(200, b'{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[]}}') == ("error", None)
    assert _result_of(200, b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}') == ("error", None)
    assert _result_of(404, b"") == ("http_404", None)


def test_a_kept_alive_connection_is_closed_after_its_share_of_requests(tmp_path: Path) -> None:
    keys = fleet(tmp_path, ["alice"])
    app = app_for(tmp_path, GatewayConfig(requests_per_connection=3))  # the test client is one connection

    async def run() -> list[str | None]:
        async with serving(app) as http:
            return [(await call(http, keys["alice"], "search", {"query": "violin"})).headers.get("connection")
                    for _ in range(7)]  # fmt: skip

    assert anyio.run(run) == [None, None, "close", None, None, "close", None]
    with pytest.raises(ValueError, match="requests per connection"):
        GatewayConfig(requests_per_connection=-1)
