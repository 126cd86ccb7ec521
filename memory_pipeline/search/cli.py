"""`memory-pipeline search "query" …` and `memory-pipeline mcp`: the read path from a shell. No Dagster."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

MAX_SHOWN_SOURCES = 20


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _print_hits(hits: Any, query: str) -> None:
    if hits.notice:
        print(f"[{hits.notice}]")
    if not hits:
        print(f"no hits for {query!r}: nothing relevant is stored")
        return
    for n, h in enumerate(hits, start=1):
        label = h.kind if h.source == "store" else f"{h.kind} file"
        extra = "" if h.tier in ("active", "knowledge", "raw") else f" [{h.tier}]"
        parts = " ".join(f"{k} {v:g}" for k, v in h.parts.items() if k in ("bm25", "vector", "keyword"))
        print(f"{n:2d}. {h.id}  {label}{extra}  {h.date}  score {h.score:.4f}  ({parts})")
        if h.superseded_by:
            print(f"    [superseded: held until {h.valid_until[:10]}, replaced by {h.superseded_by}]")
        print(f"    {h.snippet}")
        for s in h.sources[:MAX_SHOWN_SOURCES]:
            print(f"      ↳ {s.id} [{s.tier}] {s.snippet[:120]}")


def cmd_search(args: argparse.Namespace) -> int:
    from memory_pipeline.search.engine import SearchInputError, search
    from memory_pipeline.settings import SettingsError, workspace_home
    from memory_pipeline.store import StoreError

    try:
        home = workspace_home()
        if args.rebuild:
            from memory_pipeline.search.build import build_index
            from memory_pipeline.search.engine import default_embedder

            encode, model = default_embedder()
            stats = build_index(home, encode, model, full=True)
            print(
                f"index rebuilt: {stats.docs} docs ({stats.embedded} embedded) in {stats.seconds:.1f} s",
                file=sys.stderr,
            )
        hits = search(
            args.query,
            args.k,
            home=home,
            category=args.category,
            kind=args.kind,
            tier=args.tier,
            since=args.since,
            until=args.until,
            with_sources=args.with_sources,
            fusion=args.fusion,
            as_of=args.as_of,
        )
    except (SearchInputError, SettingsError, StoreError, OSError) as exc:
        return _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    from memory_pipeline.search.named import checked

    hits = checked(args.query, hits)  # a question naming what no hit names is not answered confidently
    if args.record_usage:
        from memory_pipeline.search.usage_spool import append_now

        append_now(home, [h.id for h in hits if h.source == "store"])
    if args.json:
        print(
            json.dumps(
                {"query": args.query, "mode": hits.mode, "match": hits.match, "notice": hits.notice,
                 "hits": [h.to_dict() for h in hits]},
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        _print_hits(hits, args.query)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    if not 1 <= args.port <= 65535:
        return _fail(f"--port {args.port}: expected a TCP port from 1 to 65535")
    from memory_pipeline.mcp.server import serve

    try:
        return serve(args.transport, host=args.host, port=args.port)
    except (ValueError, OSError) as exc:
        return _fail(str(exc).splitlines()[0])


def _k(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"-k takes a whole number, got {text!r}") from None


def register(sub: argparse._SubParsersAction) -> None:
    about = "hybrid BM25 + vector search over memories, knowledge files and transcripts"
    p = sub.add_parser("search", help=about, description=about + ". Answers are confident (the hits), nothing "
                       "('nothing relevant'), or, with the combined gate on, weak: nothing stored matches closely, "
                       "and the one hit shown is only the nearest ('nothing stored matches this closely; nearest: …').")
    p.add_argument("query", help="what to look for, in words (quote a phrase)")
    p.add_argument("-k", type=_k, default=10, help="hits to return (1–1000, default 10)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--category", default=None, help="only documents with this category")
    p.add_argument("--kind", default=None, help="memory, summary, journal, memory_md, core, sphere, note, transcript…")
    p.add_argument(
        "--tier", default=None, help="active, archived, knowledge, working, episodic, semantic, archive, raw"
    )
    p.add_argument("--since", default=None, help="ISO date: documents dated on or after")
    p.add_argument("--until", default=None, help="ISO date: documents dated on or before")
    p.add_argument("--as-of", default=None, metavar="DATE",
                   help="ISO date or time: what was known and held then (later memories left out, values replaced "
                   "since then read as current)")  # fmt: skip
    p.add_argument("--with-sources", action="store_true", help="expand each abstraction to its sources (lineage)")
    p.add_argument("--record-usage", action="store_true", help="record the hits as inclusions (usage decay)")
    p.add_argument("--fusion", choices=("rrf", "linear"), default=None, help="override the default fusion")
    p.add_argument("--rebuild", action="store_true", help="rebuild the index from scratch first")
    p.set_defaults(fn=cmd_search)
    about = ("MCP server: the tools search, context, flush, remember and forget, and read-only resources "
             "(MEMORY.md, journals, identity files); stdio, or HTTP on 127.0.0.1")
    m = sub.add_parser("mcp", help=about, description=about + ". Tool arguments: docs/reading-memory.md.")
    m.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                   help="stdio (default): the MCP client starts this command and talks to it over stdin/stdout; "
                   "http: a streamable-HTTP server at http://HOST:PORT/mcp that clients connect to; both serve the "
                   "workspace in MEMORY_PIPELINE_HOME")  # fmt: skip
    m.add_argument("--host", default="127.0.0.1", help="HTTP only; loopback unless you mean otherwise")
    m.add_argument("--port", type=int, default=8765, help="HTTP only: the port to listen on (default %(default)s)")
    m.set_defaults(fn=cmd_mcp)
