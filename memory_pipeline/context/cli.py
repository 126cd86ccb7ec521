"""`memory-pipeline context "message" [--budget N] [--history FILE.jsonl] [--json] [--explain]`."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

from memory_pipeline.settings import workspace_home


def cmd_context(args: argparse.Namespace) -> int:
    from memory_pipeline.context.compiler import ContextError, read_history
    from memory_pipeline.context.search_adapter import default_search, usage_recorder
    from memory_pipeline.context.service import compile_for_agent, gate_from_env

    home = workspace_home()
    try:
        if not args.message.strip():
            raise ContextError("the message is empty: pass the text the agent just received")
        history = read_history(Path(args.history)) if args.history else []
        out, errors = compile_for_agent(
            home,
            args.message,
            session_history=history,
            budget_tokens=args.budget,
            main_session=not args.not_main,
            search=default_search(home, as_of=_as_of(args.as_of)),
            gate=gate_from_env(),
            agent_output=args.agent_output or "",
            record_usage=usage_recorder(home),
        )
    except ContextError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for err in errors:
        print(f"warning: topic skipped: {err}", file=sys.stderr)
    for line in out.warnings:  # a non-regular file skipped, a topic pattern past its time bound
        print(f"warning: {line}", file=sys.stderr)
    if args.json:
        print(json.dumps(out.to_json(), indent=2, default=str))
        return 0
    if args.explain:
        print(f"{out.tokens}/{out.budget} tokens; {sum(e.included for e in out.manifest)} sections")
        for e in out.manifest:
            where = e.memory_id or e.path or ""
            mark = "+" if e.included else "-"
            score = f" score={e.score:.3f}" if e.score is not None else ""
            print(f"{mark} {e.slot} {e.label:<40} {e.tokens:>5} tok  {where}{score}  {e.reason}")
        for d in out.gate:
            print(f"  gate {d.topic}: tier1={d.tier1_matched} tier2={d.tier2_score:.3f} {d.rule} "
                  f"→ {'active' if d.activated else 'inactive'} ({d.decided_by}: {d.reason})")
        return 0
    print(out.prompt)
    return 0


def _as_of(value: str | None) -> datetime | None:
    """`--as-of`, or the one-line error every context input gets."""
    from memory_pipeline.context.compiler import ContextError
    from memory_pipeline.context.timeframe import parse_as_of

    try:
        return parse_as_of(value, "--as-of")
    except ValueError as exc:
        raise ContextError(str(exc)) from None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("context", help="compile the prompt for a message within a token budget")  # seed 001 §6
    p.add_argument("message", help="the message the agent just received")
    p.add_argument("--budget", type=int, default=8192, help="token budget (default 8192)")
    p.add_argument("--as-of", default=None, metavar="DATE",
                   help="ISO date or time: knowledge as it was known and held then (default: now)")  # fmt: skip
    p.add_argument("--history", help="session history as JSONL: {\"role\": …, \"content\": …[, \"tool\": …]}")
    p.add_argument("--agent-output", help="the agent's last reply, for output watchers")  # seed 001 §4.3
    p.add_argument("--not-main", action="store_true", help="not the main session: leave MEMORY.md out")
    p.add_argument("--json", action="store_true", help="prompt, manifest and gate decisions as JSON")
    p.add_argument("--explain", action="store_true", help="the manifest: what went in, what was left out, why")
    p.set_defaults(fn=cmd_context)
