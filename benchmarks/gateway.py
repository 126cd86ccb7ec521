"""`python -m benchmarks gateway [--agents 20] [--memories 10000] [--clients 8,32] [--seconds 30] [--work DIR]`: the
fleet gateway (`memory-pipeline fleet serve`) under load on loopback, beside one stdio MCP server per agent.

Each agent gets a generated store (the night benchmark's topic texts, clustered vectors stored under the model's
name so nothing but the queries and the remembered texts is embedded) and its search index, built once and cached
under `--work` (a re-run reuses them). Every agent's memory ids start `agNN-` and every text carries `tenantNN`,
so a response holding another agent's memory is seen. Each phase starts from a fresh copy of the cached
workspaces (the `remember` calls write), then `--clients` concurrent clients (asyncio tasks in this process) call,
for a random agent each time, `search` 80 %, `context` 15 %, `remember` 5 % (fixed seed) until `--seconds` pass or
`--max-calls` are made.

- gateway: the real server started as a user would (MEMORY_PIPELINE_FLEET_ROOT, a token per agent from the token
  table, `memory-pipeline fleet serve [--workers N]` in a subprocess, ready on /readyz once every worker has warmed
  every agent); each call is one JSON-RPC POST to /mcp with `Authorization: Bearer <token>` (httpx2, one
  connection pool).
- stdio: one `memory-pipeline mcp` per agent, each reached with the official SDK's stdio client (`mcp.Client`),
  all started and warm before the clock starts.

Measured per phase: calls/s, p50/p95/p99 per tool (client side, ms), errors (HTTP status ≠ 200, a JSON-RPC or tool
error, a timeout), cross-agent hits (a response naming another agent's memory id or tenant marker: every response
of every call is checked), the servers' RSS (the gateway's pid and its children; the stdio servers: every process
this one started) sampled each second (peak and end), and this client's own CPU seconds (it shares the cores)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import append_results, load_average, machine, table

MIX = (("search", 0.80), ("context", 0.15), ("remember", 0.05))
TOOLS = tuple(name for name, _ in MIX)
EMBEDDERS = {
    "minilm": "sentence-transformers/all-MiniLM-L6-v2",
    "minilm-int8": "all-MiniLM-L6-v2-int8",
    "hashing": "hashing-bow-256",
}
ID_OR_MARKER = re.compile(r"\bag(\d{2})-[mr]|\btenant(\d{2})\b")
NOW = datetime(2026, 11, 1, 3, 30)
TARGET = {"search_per_s": 150.0, "p95_ms": 100.0, "clients": 8}
Call = Callable[[int, str, dict[str, Any]], Awaitable[tuple[bool, str]]]  # (agent, tool, args) -> (ok, response)


# ---- pure parts (unit-tested) ----


def agent_id(i: int) -> str:
    return f"ag{i:02d}"


def memory_id(agent: int, n: int) -> str:
    return f"ag{agent:02d}-m{n:07d}"


def choose_tool(rng: random.Random, mix: Sequence[tuple[str, float]] = MIX) -> str:
    """One tool drawn from the mix (weights need not sum to 1)."""
    x = rng.random() * sum(w for _, w in mix)
    for name, weight in mix:
        x -= weight
        if x < 0:
            return name
    return mix[-1][0]


def parse_mix(text: str) -> tuple[tuple[str, float], ...]:
    """`search=80,context=15,remember=5` → the mix, every tool named (a missing one weighs 0)."""
    weights = dict.fromkeys(TOOLS, 0.0)
    for part in (p for p in text.split(",") if p.strip()):
        name, _, value = part.partition("=")
        if name.strip() not in weights:
            raise argparse.ArgumentTypeError(f"unknown tool {name.strip()!r} (known: {', '.join(TOOLS)})")
        try:
            weights[name.strip()] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part.strip()!r}: the weight must be a number") from None
    if sum(weights.values()) <= 0 or min(weights.values()) < 0:
        raise argparse.ArgumentTypeError("weights must be ≥ 0 and not all 0")
    return tuple((t, w) for t, w in weights.items() if w > 0)


def mix_text(mix: Sequence[tuple[str, float]]) -> str:
    total = sum(w for _, w in mix)
    return ", ".join(f"{t} {100 * w / total:g} %" for t, w in mix)


def foreign_mentions(agent: int, text: str) -> int:
    """How many memory ids or tenant markers of an agent other than `agent` the response text holds."""
    return sum(1 for m in ID_OR_MARKER.finditer(text) if int(m.group(1) or m.group(2)) != agent)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (linear interpolation), None for no values."""
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else None


def arguments(rng: random.Random, tool: str, agent: int, client: int, n: int) -> dict[str, Any]:
    from benchmarks.nightly import OUTCOMES, WORDS

    a, b, c = rng.sample(WORDS, 3)
    if tool == "search":
        return {"query": f"{a} {b} {c}" if rng.random() < 0.5 else f"{a} {b}", "k": 10}
    if tool == "context":
        return {"message": f"What happened with the {a} {b} last time?", "budget_tokens": 2048}
    return {"text": f"Client {client} saw the {a} {b} {rng.choice(OUTCOMES)} on call {n}; tenant{agent:02d}.",
            "id": f"ag{agent:02d}-r{client:02d}-{n:06d}", "category": a}  # fmt: skip


@dataclass
class Record:
    tool: str
    ms: float
    ok: bool
    foreign: int
    status: str = "ok"


@dataclass
class Phase:
    mode: str
    clients: int
    seconds: float = 0.0
    records: list[Record] = field(default_factory=list)
    rss_peak: int = 0
    rss_end: int = 0
    client_cpu_s: float = 0.0
    statuses: dict[str, int] = field(default_factory=dict)


def summarize(phase: Phase) -> dict[str, Any]:
    """Calls/s overall and per tool, p50/p95/p99 per tool (successful calls), errors and cross-agent hits."""
    out: dict[str, Any] = {"mode": phase.mode, "clients": phase.clients, "seconds": phase.seconds,
                           "calls": len(phase.records), "errors": sum(not r.ok for r in phase.records),
                           "cross_agent": sum(r.foreign for r in phase.records), "rss_peak": phase.rss_peak,
                           "rss_end": phase.rss_end, "client_cpu_s": phase.client_cpu_s, "tools": {}}  # fmt: skip
    out["calls_per_s"] = len(phase.records) / phase.seconds if phase.seconds else 0.0
    for tool in TOOLS:
        mine = [r for r in phase.records if r.tool == tool]
        ms = [r.ms for r in mine if r.ok]
        out["tools"][tool] = {"calls": len(mine), "per_s": len(mine) / phase.seconds if phase.seconds else 0.0,
                              "errors": sum(not r.ok for r in mine), "p50": percentile(ms, 50),
                              "p95": percentile(ms, 95), "p99": percentile(ms, 99)}  # fmt: skip
    statuses: dict[str, int] = {}
    for r in phase.records:
        if not r.ok:
            statuses[r.status] = statuses.get(r.status, 0) + 1
    out["error_kinds"] = statuses
    return out


def verdict(gateway: dict[str, Any] | None) -> str:
    """The issue's targets for the gateway phase at 8 clients, met or missed."""
    if gateway is None:
        return "no gateway phase at 8 clients: targets not evaluated"
    s = gateway["tools"]["search"]
    parts = [
        f"search {s['per_s']:.0f} calls/s (target ≥ {TARGET['search_per_s']:.0f}): "
        + ("met" if s["per_s"] >= TARGET["search_per_s"] else "MISSED"),
        f"search p95 {_ms(s['p95'])} ms (target ≤ {TARGET['p95_ms']:.0f}): "
        + ("met" if s["p95"] is not None and s["p95"] <= TARGET["p95_ms"] else "MISSED"),
        f"errors {gateway['errors']} (target 0): " + ("met" if gateway["errors"] == 0 else "MISSED"),
        f"cross-agent hits {gateway['cross_agent']} (target 0): "
        + ("met" if gateway["cross_agent"] == 0 else "MISSED"),
    ]
    return "; ".join(parts)


# ---- workspaces ----


def _slug(embedder: str, memories: int) -> str:
    return f"{embedder}-{memories}"


def build_agent(root: Path, i: int, memories: int, model: str) -> None:
    """Agent `i`'s workspace under `root/agents`: `memories` generated memories (vectors stored under `model`
    unless it is the hashing embedder, which embeds them) and the search index."""
    from benchmarks.data import clustered_with_labels
    from benchmarks.nightly import WORDS, _topic_text
    from memory_pipeline.embedding.spec import HASHING
    from memory_pipeline.fleet import registry
    from memory_pipeline.search import build_index
    from memory_pipeline.search.live import default_embedder
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store import repository as repo
    from memory_pipeline.store.records import MemoryRecord

    home = registry.add_agent(root, agent_id(i), datetime.now(UTC))
    vectors, owners = clustered_with_labels(memories, seed=i)
    rng = np.random.default_rng(i + 1)
    records = [
        MemoryRecord(
            id=memory_id(i, n),
            content=_topic_text(rng, int(owners[n]), n) + f" Noted by tenant{i:02d}.",
            importance=float(rng.uniform(0.5, 2.4)),
            created_at=NOW - timedelta(days=float(rng.uniform(1, 60))),
            categories=[WORDS[int(owners[n]) % len(WORDS)]],
        )  # fmt: skip
        for n in range(memories)
    ]
    store = MemoryStore(home / "memory.duckdb")
    with store.transaction() as con:
        repo.insert_memories(con, records)
        if model != HASHING:
            repo.upsert_embeddings(con, model, [r.id for r in records], vectors, NOW - timedelta(days=1))
    os.environ["MEMORY_PIPELINE_EMBEDDER"] = model
    encode, _name = default_embedder()
    build_index(home, encode, model)


def ensure_cache(work: Path, agents: int, memories: int, embedder: str) -> tuple[Path, float]:
    """The cached fleet of `agents` agents (built once each, in a fresh process); its root and the build seconds."""
    from benchmarks.common import in_fresh_process

    root = work / "cache" / _slug(embedder, memories)
    t = time.perf_counter()
    for i in range(agents):
        done = root / "agents" / agent_id(i) / ".bench-built"
        if done.exists():
            continue
        shutil.rmtree(root / "agents" / agent_id(i), ignore_errors=True)
        r = in_fresh_process("benchmarks.gateway:_build_one", root=str(root), i=i, memories=memories,
                             model=EMBEDDERS[embedder])  # fmt: skip
        if not r.get("ok"):
            raise SystemExit(f"gateway benchmark: building {agent_id(i)} failed: {r.get('error')}")
        done.write_text("built\n")
        print(f"built {agent_id(i)} ({memories:,} memories) in {r['seconds']:.1f} s", flush=True)
    return root, time.perf_counter() - t


def _build_one(root: str, i: int, memories: int, model: str) -> dict[str, Any]:
    t = time.perf_counter()
    build_agent(Path(root), i, memories, model)
    return {"seconds": time.perf_counter() - t}


def fresh_fleet(cache: Path, run: Path, agents: int) -> dict[int, str]:
    """A copy of the first `agents` cached workspaces at `run` and a new token for each."""
    from memory_pipeline.fleet import tokens

    shutil.rmtree(run, ignore_errors=True)
    (run / "agents").mkdir(parents=True)
    for i in range(agents):
        shutil.copytree(cache / "agents" / agent_id(i), run / "agents" / agent_id(i), symlinks=True)
    return {i: tokens.issue(run, agent_id(i), datetime.now(UTC)) for i in range(agents)}


# ---- servers ----


def _server_env(model: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env.update({"MEMORY_PIPELINE_EMBEDDER": model, "MEMORY_PIPELINE_LLM": "offline",
                "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), **extra})  # fmt: skip
    return env


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("memory-pipeline")
    return [str(script)] if script.exists() else [sys.executable, "-m", "memory_pipeline.cli"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tree_rss(pids: Sequence[int]) -> int:
    from memory_pipeline.fleet.processes.servers import tree_rss_bytes

    return sum(tree_rss_bytes(p) for p in pids)


async def _rss_sampler(pids: Callable[[], list[int]], phase: Phase, stop: asyncio.Event) -> None:
    while not stop.is_set():
        phase.rss_peak = max(phase.rss_peak, await asyncio.to_thread(tree_rss, pids()))
        try:
            await asyncio.wait_for(stop.wait(), 1.0)
        except TimeoutError:
            pass


async def drive(call: Call, agents: int, clients: int, seconds: float, max_calls: int, seed: int,
                phase: Phase, pids: Callable[[], list[int]],
                mix: Sequence[tuple[str, float]] = MIX) -> None:  # fmt: skip
    """`clients` concurrent tasks calling until the time or the count is spent; fills `phase`."""
    deadline = time.perf_counter() + seconds
    made = 0
    stop = asyncio.Event()

    async def client(c: int) -> None:
        nonlocal made
        rng = random.Random(seed * 1000 + c)
        n = 0
        while time.perf_counter() < deadline and made < max_calls:
            made += 1
            n += 1
            agent, tool = rng.randrange(agents), choose_tool(rng, mix)
            args = arguments(rng, tool, agent, c, n)
            t = time.perf_counter()
            try:
                ok, text = await asyncio.wait_for(call(agent, tool, args), 60)
            except TimeoutError:
                ok, text = False, "status:timeout"
            except Exception as exc:  # noqa: BLE001 - counted as an error
                ok, text = False, f"status:{type(exc).__name__}"
            ms = (time.perf_counter() - t) * 1000
            status = text[7:] if text.startswith("status:") else ("ok" if ok else "tool_error")
            phase.records.append(Record(tool, ms, ok, foreign_mentions(agent, text), status))

    sampler = asyncio.create_task(_rss_sampler(pids, phase, stop))
    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(clients)))
    phase.seconds = time.perf_counter() - t0
    phase.client_cpu_s = time.process_time() - cpu0
    stop.set()
    await sampler
    phase.rss_end = await asyncio.to_thread(tree_rss, pids())
    phase.rss_peak = max(phase.rss_peak, phase.rss_end)


def _jsonrpc_outcome(status: int, body: str) -> tuple[bool, str]:
    if status != 200:
        return False, f"status:http_{status}"
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        return False, "status:not_json"
    if "error" in obj or obj.get("result", {}).get("isError"):
        return False, body
    return True, body


def warmed(log: Path) -> int:
    """How many agents the gateway's workers have warmed, from its log (one line per agent and worker)."""
    try:
        return log.read_text(errors="replace").count("memory-pipeline mcp: warm in")
    except OSError:
        return 0


def run_gateway(root: Path, keys: dict[int, str], clients: int, args: argparse.Namespace, model: str) -> Phase:
    import httpx2

    port = _free_port()
    cmd = [*_cli(), "fleet", "serve", "--port", str(port)]
    if args.rate:
        cmd += ["--rate", str(args.rate), "--burst", str(args.burst)]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    log = (root / "gateway.log").open("wb")
    proc = subprocess.Popen(cmd, env=_server_env(model, MEMORY_PIPELINE_FLEET_ROOT=str(root)), stdout=log,
                            stderr=subprocess.STDOUT)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    phase = Phase("gateway", clients)
    try:
        deadline = time.monotonic() + args.start_timeout
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"gateway benchmark: the gateway stopped: see {root / 'gateway.log'}")
            try:
                # ready, and every worker has warmed every agent (a worker still warming takes CPU from the rest)
                if httpx2.get(f"{base}/readyz", timeout=2).status_code == 200 and warmed(root / "gateway.log") >= (
                    len(keys) * (args.workers or _cpus())
                ):
                    break
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"gateway benchmark: not ready in {args.start_timeout:.0f} s")
            time.sleep(0.3)
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

        async def main() -> None:
            limits = httpx2.Limits(max_connections=clients, max_keepalive_connections=clients)
            async with httpx2.AsyncClient(base_url=base, timeout=60, limits=limits) as http:
                rid = 0

                async def call(agent: int, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
                    nonlocal rid
                    rid += 1
                    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                            "params": {"name": tool, "arguments": arguments}}  # fmt: skip
                    r = await http.post("/mcp", content=json.dumps(body).encode(),
                                        headers={**headers, "Authorization": f"Bearer {keys[agent]}"})  # fmt: skip
                    return _jsonrpc_outcome(r.status_code, r.text)

                await drive(call, len(keys), clients, args.seconds, args.max_calls, args.seed, phase,
                            lambda: [proc.pid], args.mix)  # fmt: skip

        asyncio.run(main())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log.close()
    return phase


def run_stdio(root: Path, agents: int, clients: int, args: argparse.Namespace, model: str) -> Phase:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from memory_pipeline.fleet.processes.servers import descendants

    phase = Phase("stdio", clients)
    cli = _cli()

    async def main() -> None:
        sessions: dict[int, Any] = {}
        stop = asyncio.Event()
        with (root / "stdio.log").open("w") as errlog:

            async def host(i: int, ready: asyncio.Event) -> None:
                """Agent i's server and SDK client, open until `stop` (its initialize answers once it is warm)."""
                params = StdioServerParameters(
                    command=cli[0], args=[*cli[1:], "mcp"],
                    env=_server_env(model, MEMORY_PIPELINE_HOME=str(root / "agents" / agent_id(i))),
                )  # fmt: skip
                async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120, cache=None) as c:
                    sessions[i] = c
                    ready.set()
                    await stop.wait()

            readies = [asyncio.Event() for _ in range(agents)]
            hosts = [asyncio.create_task(host(i, readies[i])) for i in range(agents)]
            deadline = time.monotonic() + args.start_timeout
            while len(sessions) < agents and time.monotonic() < deadline and not any(t.done() for t in hosts):
                await asyncio.sleep(0.2)
            if len(sessions) < agents:
                stop.set()
                errors = [r for r in await asyncio.gather(*hosts, return_exceptions=True) if r is not None]
                raise SystemExit(
                    f"gateway benchmark: {agents - len(sessions)} stdio server(s) did not start: "
                    f"{errors[0] if errors else 'timed out'}; see {root / 'stdio.log'}"
                )

            async def call(agent: int, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
                result = await sessions[agent].call_tool(tool, arguments)
                return (not result.is_error), result.model_dump_json()

            me = os.getpid()
            try:
                await drive(call, agents, clients, args.seconds, args.max_calls, args.seed, phase,
                            lambda: descendants(me), args.mix)  # fmt: skip
            finally:
                stop.set()
                await asyncio.gather(*hosts, return_exceptions=True)

    asyncio.run(main())
    return phase


# ---- report ----


def _cpus() -> int:
    from memory_pipeline.fleet.serving import default_workers

    return default_workers()


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f}"


def report(rows: list[dict[str, Any]], args: argparse.Namespace, build_s: float, started: str) -> str:
    out = []
    for r in rows:
        tools = r["tools"]
        out.append([r["mode"], r["clients"], f"{r['calls']:,}", f"{r['calls_per_s']:.1f}",
                    f"{tools['search']['per_s']:.1f}",
                    *(f"{_ms(tools[t]['p50'])} / {_ms(tools[t]['p95'])} / {_ms(tools[t]['p99'])}" for t in TOOLS),
                    f"{r['errors']}" + (f" ({', '.join(f'{k} {v}' for k, v in r['error_kinds'].items())})"
                                        if r["errors"] else ""),
                    r["cross_agent"], f"{_mib(r['rss_peak'])} / {_mib(r['rss_end'])}",
                    f"{r['client_cpu_s'] / r['seconds']:.0%}" if r["seconds"] else "—"])  # fmt: skip
    lines = [table(["mode", "clients", "calls", "calls/s", "search/s", "search p50/p95/p99 ms",
                    "context p50/p95/p99 ms", "remember p50/p95/p99 ms", "errors", "cross-agent hits",
                    "server RSS peak / end MiB", "client CPU"], out), ""]  # fmt: skip
    ratios = []
    for clients in sorted({r["clients"] for r in rows}):
        g = next((r for r in rows if r["mode"] == "gateway" and r["clients"] == clients), None)
        s = next((r for r in rows if r["mode"] == "stdio" and r["clients"] == clients), None)
        if g and s and s["calls_per_s"]:
            gp95, sp95 = g["tools"]["search"]["p95"], s["tools"]["search"]["p95"]
            ratios.append(f"{clients} clients: calls/s ×{g['calls_per_s'] / s['calls_per_s']:.2f}, search p95 ×"
                          + (f"{gp95 / sp95:.2f}" if gp95 and sp95 else "—")
                          + f", RSS peak ×{g['rss_peak'] / max(s['rss_peak'], 1):.2f}")  # fmt: skip
    if ratios:
        lines.append("Gateway / stdio: " + "; ".join(ratios) + ".")
    g8 = next((r for r in rows if r["mode"] == "gateway" and r["clients"] == TARGET["clients"]), None)
    lines.append(f"Targets (gateway, {TARGET['clients']} clients): {verdict(g8)}.")
    lines.append("")
    lines.append(
        f"Started {started}; {args.agents} agents × {args.memories:,} memories, embedder {EMBEDDERS[args.embedder]} "
        + (
            "(stored vectors synthetic, queries and remembered texts embedded for real)"
            if args.embedder != "hashing"
            else "(every text embedded)"
        )
        + f"; mix {mix_text(args.mix)} (search k 10, context budget 2,048 tokens); a random agent per call; "
        f"each phase {args.seconds:.0f} s "
        f"or {args.max_calls:,} calls, on a fresh copy of the workspaces; seed {args.seed}; gateway rate limit "
        + (f"--rate {args.rate:g} --burst {args.burst}" if args.rate else "the default (20/s per agent, burst 40)")
        + f"; gateway worker processes: {args.workers or f'the default (one per CPU: {_cpus()})'}"
        + f"; LLM offline. Workspaces cached in `{Path(args.work).name}` (`--work`; build this run: {build_s:.0f} s, "
        "not timed above). "
        "Latencies are client-side; errors are HTTP ≠ 200, JSON-RPC or tool errors and 60 s timeouts; client CPU "
        "is this process's CPU time over the phase's wall time (it shares the cores with the servers)."
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks gateway", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--memories", type=int, default=10_000, help="per agent")
    parser.add_argument("--clients", default="8,32", help="comma-separated concurrent client counts")
    parser.add_argument("--seconds", type=float, default=30.0, help="per phase (each mode × client count)")
    parser.add_argument("--max-calls", type=int, default=20_000, help="per phase")
    parser.add_argument("--modes", default="gateway,stdio")
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), default="minilm")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "memory-pipeline-gateway-bench",
                        help="cached workspaces and runs")  # fmt: skip
    parser.add_argument("--rate", type=float, default=0.0, help="gateway --rate (default: the gateway's own)")
    parser.add_argument("--burst", type=int, default=40, help="gateway --burst, with --rate")
    parser.add_argument("--workers", type=int, default=0, help="gateway --workers (default: the gateway's own)")
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--mix", type=parse_mix, default=MIX,
                        help="tool=percent,… (default search=80,context=15,remember=5; e.g. remember=0 bounds "
                        "what writes cost)")  # fmt: skip
    parser.add_argument("--start-timeout", type=float, default=600.0)
    parser.add_argument("--json", type=Path, help="also write the phases' summaries here")
    parser.add_argument("--no-append", action="store_true", help="print, do not append to results/runs")
    parser.add_argument("--build-only", action="store_true", help="build the cached workspaces and stop")
    args = parser.parse_args(argv)
    env, load_before = machine(), load_average()
    started = time.strftime("%H:%M UTC", time.gmtime())
    model = EMBEDDERS[args.embedder]
    cache, build_s = ensure_cache(args.work, args.agents, args.memories, args.embedder)
    if args.build_only:
        print(f"{args.agents} workspaces ready in {cache} ({build_s:.0f} s)")
        return
    rows: list[dict[str, Any]] = []
    for clients in (int(c) for c in args.clients.split(",") if c):
        for mode in (m for m in args.modes.split(",") if m):
            run = args.work / f"run-{mode}-{clients}"
            keys = fresh_fleet(cache, run, args.agents)
            phase = (run_gateway(run, keys, clients, args, model) if mode == "gateway"
                     else run_stdio(run, args.agents, clients, args, model))  # fmt: skip
            rows.append(summarize(phase))
            print(json.dumps(rows[-1]), flush=True)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "rows": rows,
                    "verdict": verdict(
                        next((r for r in rows if r["mode"] == "gateway" and r["clients"] == TARGET["clients"]), None)
                    ),
                },
                indent=1,
            )
        )
    body = report(rows, args, build_s, started)
    title = f"gateway: {args.agents} agents × {args.memories:,} memories, clients {args.clients}"
    if args.no_append:
        print(body)
    else:
        append_results(title, body, env, load_before)


if __name__ == "__main__":
    main()
