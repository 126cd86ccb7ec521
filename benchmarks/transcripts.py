"""`python -m benchmarks transcripts`: `transcripts import` throughput and memory on synthetic agent sessions.

For each format (Claude Code, Codex CLI rollouts, JSONL message logs) it writes `--sessions` sessions (default
1,000) of `--turns` exchanges each — a user message, an agent reply with a tool call, the tool's result of a few
KB (one in ten results is 22 KB; all are cut at the cap) — then imports the folder into an empty workspace in a fresh
process, and imports it again (nothing to write). Sessions/s and MB/s count the source files' bytes; peak memory
is the import process's RSS high-water mark (`/proc/self/status` VmHWM) and its growth during the import. One more
row: a single Claude Code session whose tool printed 50 MB (read in 1 MB pieces, cut while read). No journals
are rebuilt: this measures the import, not the journal pipeline.

Two more tables: the share of imported turns that are conversation (user, agent and sub-agent turns, not the
hosts' machinery kept as marked system turns) over the sample sessions in
`memory_pipeline_tests/fixtures/transcript_imports/`; and how long the Claude Code hooks documented in
docs/connecting-agents.md take to return (run as the host runs them: `bash -c` with the event on stdin), since
the host waits on them — Claude Code gives all SessionEnd hooks together 1.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.common import append_results, in_fresh_process, load_average, machine, table

FORMATS = ("claude-code", "codex", "messages")
WORDS = ("retry", "backoff", "invoice", "ledger", "deploy", "queue", "cache", "schema", "index", "latency",
         "timeout", "webhook", "payment", "rollback", "migration", "token", "budget", "replica")  # fmt: skip
START = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "memory_pipeline_tests" / "fixtures" / "transcript_imports"
SHARE_FOLDERS = ("claude_code", "codex", "messages", "midnight")  # `bad` holds files that are not sessions
HOOKS_PAGE = ROOT / "docs" / "connecting-agents.md"
HOOK_WAIT_S = 300  # the background import's journal rebuild, at most


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _output(rng: random.Random) -> str:
    rows = 1000 if rng.random() < 0.1 else rng.randint(20, 80)
    return "\n".join(f"{i:04d} {rng.choice(WORDS)} ok {rng.randint(1, 999)} ms" for i in range(rows))


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def claude_code_session(i: int, turns: int, rng: random.Random) -> list[dict[str, Any]]:
    sid = f"{i:08x}-0000-4000-8000-{i:012x}"
    t = START + timedelta(hours=i)
    base = {"sessionId": sid, "cwd": "/srv/app", "gitBranch": "main", "version": "2.0.61", "isSidechain": False}
    lines: list[dict[str, Any]] = [{"type": "summary", "summary": _sentence(rng, 6), "leafUuid": "u-0"}]
    for k in range(turns):
        t += timedelta(seconds=40)
        lines.append({**base, "type": "user", "uuid": f"u{k}a", "timestamp": _stamp(t),
                      "message": {"role": "user", "content": _sentence(rng, 25)}})  # fmt: skip
        call = {"type": "tool_use", "id": f"toolu_{i}_{k}", "name": "Bash", "input": {"command": f"make test-{k}"}}
        lines.append({**base, "type": "assistant", "uuid": f"u{k}b", "timestamp": _stamp(t + timedelta(seconds=5)),
                      "message": {"id": f"msg_{i}_{k}", "role": "assistant", "model": "claude-sonnet-4-5",
                                  "content": [{"type": "text", "text": _sentence(rng, 40)}, call]}})  # fmt: skip
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i}_{k}", "content": _output(rng)}
        lines.append({**base, "type": "user", "uuid": f"u{k}c", "timestamp": _stamp(t + timedelta(seconds=9)),
                      "message": {"role": "user", "content": [result]}})  # fmt: skip
        lines.append({"type": "file-history-snapshot", "messageId": f"u{k}a", "snapshot": {}})
    return lines


def _item(t: datetime, after: int, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": _stamp(t + timedelta(seconds=after)), "type": "response_item", "payload": payload}


def codex_session(i: int, turns: int, rng: random.Random) -> list[dict[str, Any]]:
    sid = f"0199e0d2-{i:04x}-7a30-b5e4-{i:012x}"
    t = START + timedelta(hours=i)
    lines: list[dict[str, Any]] = [
        {"timestamp": _stamp(t), "type": "session_meta",
         "payload": {"id": sid, "timestamp": _stamp(t), "cwd": "/srv/app", "cli_version": "0.46.0", "source": "cli"}},
        {"timestamp": _stamp(t), "type": "turn_context", "payload": {"model": "gpt-5-codex", "cwd": "/srv/app"}},
    ]  # fmt: skip
    for k in range(turns):
        t += timedelta(seconds=40)

        lines.append(_item(t, 0, {"type": "message", "role": "user",
                                  "content": [{"type": "input_text", "text": _sentence(rng, 25)}]}))  # fmt: skip
        lines.append(_item(t, 3, {"type": "function_call", "name": "shell", "call_id": f"call_{k}",
                                  "arguments": json.dumps({"command": ["make", f"test-{k}"]})}))  # fmt: skip
        lines.append(_item(t, 8, {"type": "function_call_output", "call_id": f"call_{k}", "output": _output(rng)}))
        lines.append(_item(t, 9, {"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": _sentence(rng, 40)}]}))  # fmt: skip
        lines.append({"timestamp": _stamp(t), "type": "event_msg", "payload": {"type": "token_count"}})
    return lines


def messages_session(i: int, turns: int, rng: random.Random) -> list[dict[str, Any]]:
    t = START + timedelta(hours=i)
    lines: list[dict[str, Any]] = []
    for k in range(turns):
        t += timedelta(seconds=40)
        lines.append({"session_id": f"log-{i}", "role": "user", "content": _sentence(rng, 25), "timestamp": _stamp(t)})
        call = {"id": f"call_{k}", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
        lines.append({"session_id": f"log-{i}", "role": "assistant", "content": _sentence(rng, 40),
                      "tool_calls": [call], "timestamp": _stamp(t + timedelta(seconds=5))})  # fmt: skip
        lines.append({"session_id": f"log-{i}", "role": "tool", "tool_call_id": f"call_{k}", "content": _output(rng)})
    return lines


def write_sessions(root: Path, fmt: str, sessions: int, turns: int) -> int:
    """`sessions` files of one format under `root`; their total size in bytes."""
    rng = random.Random(f"{fmt}-{sessions}-{turns}")
    make = {"claude-code": claude_code_session, "codex": codex_session, "messages": messages_session}[fmt]
    size = 0
    for i in range(sessions):
        path = root / f"{i // 100:02d}" / f"{fmt}-{i:05d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(line) + "\n" for line in make(i, turns, rng))
        path.write_text(text, encoding="utf-8")
        size += len(text.encode())
    return size


def write_huge(path: Path, mb: int) -> int:
    rows = "".join(f"{i:08d} request ok\n" for i in range(mb * 2**20 // 20))
    lines = claude_code_session(0, 1, random.Random(0))
    lines[2]["message"]["content"][0]["content"] = rows  # the tool result
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")
    return path.stat().st_size


def import_twice(src: str, raw: str) -> dict[str, Any]:
    """In a fresh process: import the folder, then import it again; seconds, peak MiB and counts of each."""
    from benchmarks.common import measured, peak_rss_mib, rss_mib
    from memory_pipeline.journals.imports.importer import import_paths

    before = rss_mib()
    first = measured(lambda: import_paths([Path(src)], Path(raw)))
    process_peak = peak_rss_mib()
    again = measured(lambda: import_paths([Path(src)], Path(raw)))
    return {
        "seconds": first["seconds"], "peak_mib": first["peak_mib"], "written": len(first["value"].written),
        "rss_before": before, "process_peak": process_peak,
        "errors": first["value"].errors[:3], "again_seconds": again["seconds"], "again_peak_mib": again["peak_mib"],
        "again_written": len(again["value"].written), "unchanged": again["value"].unchanged,
    }  # fmt: skip


def conversation_share() -> list[list[Any]]:
    """Per fixture folder: its sessions imported, and how many of their turns are conversation, how many the
    hosts' machinery (marked system turns)."""
    from memory_pipeline.journals.imports.importer import Options, import_paths
    from memory_pipeline.journals.transcript import parse_transcript

    rows: list[list[Any]] = []
    total = [0, 0]
    with tempfile.TemporaryDirectory() as tmp:
        for folder in SHARE_FOLDERS:
            raw = Path(tmp) / folder
            report = import_paths([FIXTURES / folder], raw, Options(started=START))
            turns = [t for p in sorted(raw.rglob("*.md")) for t in parse_transcript(p.read_text("utf-8"), p).turns]
            talk = sum(1 for t in turns if t.role != "system" and t.kind != "thinking")
            total[0], total[1] = total[0] + talk, total[1] + len(turns)
            rows.append([folder, len(report.written), len(turns), talk, len(turns) - talk,
                         f"{100 * talk / max(len(turns), 1):.1f} %"])  # fmt: skip
    rows.append(["all", "", total[1], total[0], total[1] - total[0], f"{100 * total[0] / max(total[1], 1):.1f} %"])
    return rows


def _hook_commands() -> dict[str, str]:
    """The page's Claude Code hooks: event → command, with the checkout's placeholder filled in."""
    text = HOOKS_PAGE.read_text(encoding="utf-8")
    for block in re.findall(r"^```json\n(.*?)^```$", text, re.DOTALL | re.MULTILINE):
        if "hooks" in (settings := json.loads(block)):
            return {event: entry["hooks"][0]["command"].replace("/path/to/memory_pipeline", str(ROOT))
                    for event, [entry] in settings["hooks"].items()}  # fmt: skip
    raise SystemExit(f"error: no hooks block in {HOOKS_PAGE.name}")


def _ended(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z"


def hook_times(runs: int) -> list[list[Any]]:
    """Each run in a fresh workspace: the PreCompact hook (imports the session, `--no-journals`), then the
    SessionEnd hook (hands the import to a background process and returns); wall seconds until each returned.
    The background import is waited for before the next run, so the runs do not overlap."""
    commands = _hook_commands()
    session_file = FIXTURES / "claude_code" / "3f2a9c1e-7b4d-4e8a-9c2f-5d6e7f8a9b0c.jsonl"
    times: dict[str, list[float]] = {event: [] for event in commands}
    background: list[float] = []
    first_search: list[float] = []
    built_by_search = 0
    for run in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            session = Path(tmp) / "project" / session_file.name
            session.parent.mkdir()
            shutil.copy(session_file, session)
            env = {**os.environ, "DAGSTER_HOME": f"{tmp}/dagster_home", "MEMORY_PIPELINE_JOURNAL_GIT": "0",
                   "MEMORY_PIPELINE_LLM": "offline", "MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256"}  # fmt: skip
            env.pop("ANTHROPIC_API_KEY", None)
            for event in ("PreCompact", "SessionEnd"):
                command = commands[event].replace("/path/to/workspace", shlex.quote(f"{tmp}/ws"))
                event_input = json.dumps({"session_id": session.stem, "transcript_path": str(session),
                                          "cwd": tmp, "hook_event_name": event})  # fmt: skip
                started = time.perf_counter()
                done = subprocess.run(["bash", "-c", command], input=event_input, env=env, capture_output=True,
                                      text=True, timeout=HOOK_WAIT_S, check=False)  # fmt: skip
                times[event].append(time.perf_counter() - started)
                if done.returncode != 0:
                    raise SystemExit(f"error: the {event} hook failed (run {run + 1}): {done.stderr.strip()[-300:]}")
                if (m := re.search(r"in the background \(pid (\d+)\)", done.stdout)) is not None:
                    pid, deadline = int(m.group(1)), time.monotonic() + HOOK_WAIT_S
                    while not _ended(pid) and time.monotonic() < deadline:
                        time.sleep(0.2)
                    if not _ended(pid):  # the process this run started: not left running
                        os.kill(pid, 15)
                    background.append(time.perf_counter() - started)
            started = time.perf_counter()  # the first search after the imports, a process of its own
            found = subprocess.run([sys.executable, "-m", "memory_pipeline.cli", "search", "hook import", "-k", "3"],
                                   env={**env, "MEMORY_PIPELINE_HOME": f"{tmp}/ws"}, capture_output=True, text=True,
                                   timeout=HOOK_WAIT_S, check=False)  # fmt: skip
            first_search.append(time.perf_counter() - started)
            built_by_search += bool(re.search(r"index (built|updated) now", found.stdout + found.stderr))
    rows = [[event, "PreCompact: transcripts import --no-journals" if event == "PreCompact" else
             "SessionEnd: transcripts import --background", runs, f"{min(ts):.2f}", f"{sorted(ts)[len(ts) // 2]:.2f}",
             f"{max(ts):.2f}"] for event, ts in times.items()]  # fmt: skip
    if background:
        rows.append(["(background)", "the SessionEnd import and journal rebuild, until its process ended", runs,
                     f"{min(background):.2f}", f"{sorted(background)[len(background) // 2]:.2f}",
                     f"{max(background):.2f}"])  # fmt: skip
    if first_search:
        rows.append(["(first search)", "`memory-pipeline search` after them, a new process (the index built or "
                     f"updated by the search itself: {built_by_search} of {runs})", runs, f"{min(first_search):.2f}",
                     f"{sorted(first_search)[len(first_search) // 2]:.2f}", f"{max(first_search):.2f}"])  # fmt: skip
    return rows


def _peak(r: dict[str, Any]) -> str:
    return f"{r['process_peak']:.0f} (+{r['peak_mib']:.0f} over {r['rss_before']:.0f} at start)"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks transcripts", description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000, help="sessions per format (default 1000)")
    parser.add_argument("--turns", type=int, default=10, help="exchanges per session (default 10)")
    parser.add_argument("--huge-mb", type=int, default=50, help="the one big tool output, MB (default 50)")
    parser.add_argument("--hook-runs", type=int, default=3, help="times each hook is run (default 3; 0: none)")
    args = parser.parse_args(argv)
    env, load = machine(), load_average()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in FORMATS:
            src = Path(tmp) / fmt
            size = write_sessions(src, fmt, args.sessions, args.turns)
            r = in_fresh_process("benchmarks.transcripts:import_twice", src=str(src), raw=str(Path(tmp) / f"raw-{fmt}"))
            if not r["ok"]:
                rows.append([fmt, args.sessions, f"{size / 2**20:.1f}", r["error"], "", "", "", ""])
                continue
            assert r["written"] == args.sessions and not r["errors"], r
            rows.append([fmt, args.sessions, f"{size / 2**20:.1f}", f"{r['seconds']:.2f}",
                         f"{args.sessions / r['seconds']:.0f}", f"{size / 2**20 / r['seconds']:.1f}",
                         _peak(r), f"{r['again_seconds']:.2f} ({r['unchanged']} unchanged)"])  # fmt: skip
        huge = Path(tmp) / "huge" / "big-output.jsonl"
        size = write_huge(huge, args.huge_mb)
        r = in_fresh_process("benchmarks.transcripts:import_twice", src=str(huge), raw=str(Path(tmp) / "raw-huge"))
        if r["ok"]:
            rows.append([f"claude-code, one {args.huge_mb} MB tool output", 1, f"{size / 2**20:.1f}",
                         f"{r['seconds']:.2f}", f"{1 / r['seconds']:.2f}", f"{size / 2**20 / r['seconds']:.1f}",
                         _peak(r), f"{r['again_seconds']:.2f}"])  # fmt: skip
        else:
            rows.append([f"claude-code, one {args.huge_mb} MB tool output", 1, f"{size / 2**20:.1f}", r["error"]])
    body = (f"{args.sessions} synthetic sessions per format, {args.turns} exchanges each (user message, agent reply "
            "with a tool call, a result of 0.5–2 KB, one in ten 22 KB); imported into an empty workspace in a fresh "
            "process without rebuilding journals, then imported again. Peak RSS: the import "
            "process's peak RSS (VmHWM), and how much it grew during the import over the process's RSS before it "
            "(the interpreter and the importer's modules).\n\n")  # fmt: skip
    body += table(["format", "sessions", "source MB", "import s", "sessions/s", "MB/s", "peak RSS MiB",
                   "again s"], rows)  # fmt: skip
    body += ("\n\nConversation share: the sample sessions in memory_pipeline_tests/fixtures/transcript_imports/ "
             "imported; conversation turns are user, agent and sub-agent turns (thinking left out, as by default), "
             "system turns the hosts' machinery kept as marked system turns, and a message log's system "
             "messages.\n\n")  # fmt: skip
    body += table(["fixtures", "sessions", "turns", "conversation", "system turns", "conversation share"],
                  conversation_share())
    if args.hook_runs > 0:
        body += (f"\n\nHook return time: the Claude Code hooks of docs/connecting-agents.md run as the host runs "
                 f"them (`bash -c`, the event on stdin), {args.hook_runs} run(s), each in a fresh workspace; wall "
                 "seconds until the hook returned (the host waits that long).\n\n")  # fmt: skip
        body += table(["hook", "what it runs", "runs", "min s", "median s", "max s"], hook_times(args.hook_runs))
    append_results("transcripts import throughput", body + "\n", env, load)
