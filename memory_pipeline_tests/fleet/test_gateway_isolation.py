"""Proof of isolation: whatever agents, memories and calls, no response to one agent ever holds another agent's
memory id or text, and no call changes another agent's store."""

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
import duckdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline_tests.fleet.gateway_helpers import app_for, call, fleet, serving

NAMES = ["ann", "ben", "cyd", "dov"]
VOCAB = ["harbour", "violin", "ferry", "alarm", "garden", "ticket", "dentist", "kettle", "bicycle", "passport",
         "lantern", "orchid"]  # fmt: skip
TOKENISH = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", max_size=60)  # header-safe guesses
OPS = ["search", "context", "remember", "forget", "forget_foreign", "stranger"]


def _marker(agent: str, n: int) -> str:
    return f"{agent}x{n}q"  # a word only that agent's memory n holds


def _store_ids(home: Path) -> dict[str, str]:
    con = duckdb.connect(str(home / "memory.duckdb"), read_only=True)
    try:
        return {str(r[0]): str(r[1]) for r in con.execute("SELECT id, lifecycle FROM memories").fetchall()}
    finally:
        con.close()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_agent_ever_reads_or_changes_another_agents_memory(data: st.DataObject) -> None:
    agents = data.draw(st.lists(st.sampled_from(NAMES), min_size=2, max_size=3, unique=True), label="agents")
    words = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4)
    seeds = {a: data.draw(st.lists(words, min_size=1, max_size=3), label=f"{a} memories") for a in agents}
    plan = data.draw(st.lists(st.tuples(st.sampled_from(agents), st.sampled_from(OPS), words, TOKENISH),
                              min_size=1, max_size=10), label="calls")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        keys = fleet(root, agents)
        owned: dict[str, dict[str, str]] = {a: {} for a in agents}  # agent -> memory id -> marker
        responses: list[tuple[str, bytes, str]] = []  # (agent, request arguments, response text)

        async def remember(http: Any, agent: str, ws: list[str]) -> None:
            n = len(owned[agent]) + 1
            mid, marker = f"{agent}-{n}", _marker(agent, n)
            args = {"text": f"{marker} {' '.join(ws)}", "id": mid}
            r = await call(http, keys[agent], "remember", args)
            assert r.status_code == 200 and not json.loads(r.text)["result"].get("isError"), r.text
            owned[agent][mid] = marker
            responses.append((agent, json.dumps(args).encode(), r.text))

        async def run() -> None:
            async with serving(app_for(root)) as http:
                for agent, memories in seeds.items():
                    for ws in memories:
                        await remember(http, agent, ws)
                for agent, op, ws, junk in plan:
                    query = " ".join(ws)
                    others = [m for a in agents if a != agent for m in owned[a]]
                    if op == "remember":
                        await remember(http, agent, ws)
                        continue
                    if op == "stranger":
                        r = await call(http, f"mpg_{junk}", "search", {"query": query})
                        assert r.status_code == 401
                        continue
                    if op == "search":
                        args: dict[str, Any] = {"query": query, "k": 20}
                    elif op == "context":
                        args = {"message": query, "budget_tokens": 2000}
                    elif op == "forget" and owned[agent]:
                        args = {"id": sorted(owned[agent])[len(ws) % len(owned[agent])], "reason": "test"}
                    elif others:
                        args = {"id": others[len(ws) % len(others)], "reason": "not mine"}
                        op = "forget"
                    else:
                        continue
                    r = await call(http, keys[agent], op, args)
                    assert r.status_code == 200, r.text
                    body = json.loads(r.text)
                    if args.get("id") in others:
                        assert "no memory with id" in body["result"]["content"][0]["text"]
                    responses.append((agent, json.dumps(args).encode(), r.text))

        anyio.run(run)
        for agent, request, text in responses:
            for other in agents:
                if other == agent:
                    continue
                for mid, marker in owned[other].items():
                    assert marker not in text, (agent, other, marker)
                    assert mid.encode() in request or f'"{mid}"' not in text, (agent, other, mid)
        for agent in agents:
            stored = _store_ids(root / "agents" / agent)
            assert set(stored) == set(owned[agent])  # nothing of anyone else's was written here
            assert all(lc in ("active", "forgotten") for lc in stored.values())
