"""`python -m benchmarks transcripts`: `transcripts import` throughput and memory on synthetic agent sessions.

For each format (Claude Code, Codex CLI rollouts, JSONL message logs) it writes `--sessions` sessions (default
1,000) of `--turns` exchanges each — a user message, an agent reply with a tool call, the tool's result of a few
KB (one in ten results is 22 KB; all are cut at the cap) — then imports the folder into an empty workspace in a fresh
process, and imports it again (nothing to write). Sessions/s and MB/s count the source files' bytes; peak memory
is the import process's RSS high-water mark (`/proc/self/status` VmHWM) and its growth during the import. One more
row: a single Claude Code session whose tool printed 50 MB (read in 1 MB pieces, cut while read). No journals
are rebuilt: this measures the import, not the journal pipeline.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.common import append_results, in_fresh_process, load_average, machine, table

FORMATS = ("claude-code", "codex", "messages")
WORDS = ("retry", "backoff", "invoice", "ledger", "deploy", "queue", "cache", "schema", "index", "latency",
         "timeout", "webhook", "payment", "rollback", "migration", "token", "budget", "replica")  # fmt: skip
START = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


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


def _peak(r: dict[str, Any]) -> str:
    return f"{r['process_peak']:.0f} (+{r['peak_mib']:.0f} over {r['rss_before']:.0f} at start)"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks transcripts", description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000, help="sessions per format (default 1000)")
    parser.add_argument("--turns", type=int, default=10, help="exchanges per session (default 10)")
    parser.add_argument("--huge-mb", type=int, default=50, help="the one big tool output, MB (default 50)")
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
    append_results("transcripts import throughput", body + "\n", env, load)
