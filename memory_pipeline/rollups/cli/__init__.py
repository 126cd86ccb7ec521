"""`memory-pipeline rollups build | status` and `memory-pipeline recall "query"` (seed 002)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from memory_pipeline.settings import workspace_home


def cmd_build(args: argparse.Namespace) -> int:
    import socket

    from memory_pipeline.definitions import defs_with
    from memory_pipeline.operator.instance import HOST_TAG, PID_TAG, cli_instance
    from memory_pipeline.operator.instance import open_store as _store
    from memory_pipeline.operator.instance import recover_dead_cli_runs as _recover_dead_cli_runs
    from memory_pipeline.resources.defaults import default_resources
    from memory_pipeline.rollups.cli.backfill import backfill

    home = workspace_home()
    store = _store(home)
    defs = defs_with(default_resources(str(home)))
    tags = {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}
    with cli_instance(home) as instance:
        _recover_dead_cli_runs(instance)
        summary = backfill(defs, instance, store, tags)
    print(f"sessions {summary.sessions} (assigned {summary.assigned})")
    print(f"Cores built   {len(summary.cores_built)}: {', '.join(summary.cores_built) or 'none new'}")
    print(f"Spheres built {len(summary.spheres_built)}: {', '.join(summary.spheres_built) or 'none new'}")
    if summary.failed:
        print(f"{summary.failed}; see the log above", file=sys.stderr)
        return 1
    return cmd_status(args)


def cmd_status(args: argparse.Namespace) -> int:
    from memory_pipeline.operator.instance import open_store as _store
    from memory_pipeline.rollups import build, repository

    home = workspace_home()
    store = _store(home)
    counters = build.write_counters(store, home) if (home / "knowledge").exists() else None
    with store.connect() as con:
        sessions, assigned, n_cores, n_spheres = repository.counts(con)
    print(f"sessions      {sessions} ({assigned} assigned to the hierarchy)")
    print(f"cores         {n_cores} built in {build.cores_dir(home)}")
    print(f"spheres       {n_spheres} built in {build.spheres_dir(home)}")
    if counters:
        shown = {k: counters[k] for k in ("Session_seq", "Core_seq", "Sphere_seq", "last_update")}
        print(f"counters      {json.dumps(shown)} ({build.counters_path(home)})")
    return 0


def nothing_to_recall(store: Any, as_of: Any) -> str:
    """Why recall found nothing: no sessions at all, or none known by `as_of` (and when the first began)."""
    with store.connect() as con:
        count, first = con.execute("SELECT count(*), min(started_at) FROM sessions").fetchone()
    if not count:
        return "nothing to recall: no sessions, Cores or Spheres in this workspace"
    if as_of is not None:
        return (f"nothing to recall as of {as_of:%Y-%m-%d %H:%M} UTC: the workspace's {count:,} session(s) begin "
                f"{first:%Y-%m-%d %H:%M} UTC; use a later --as-of, or none for now")
    return f"nothing to recall: none of the workspace's {count:,} session(s), Cores or Spheres matches"


def _found(store: Any, home: Any, hits: Any) -> list[Any]:
    """Search's hits as recall's: a transcript is its session, a Core or Sphere file its id; `score` = relevance."""
    from pathlib import Path

    from memory_pipeline.rollups.recall import Hit

    files = [h.id for h in hits if h.source == "file" and h.kind == "transcript"]
    with store.connect() as con:
        sids = dict(con.execute("SELECT path, session_id FROM sessions WHERE list_contains(?, path)", [files])
                    .fetchall()) if files else {}  # fmt: skip
    layers = {"transcript": "session", "core": "core", "sphere": "sphere"}
    out = []
    for h in hits:
        path = str(home / h.id) if h.source == "file" else ""
        key = sids.get(h.id, Path(h.id).stem) if h.kind in layers and h.source == "file" else h.id
        out.append(Hit(layers.get(h.kind, h.kind) if h.source == "file" else h.kind, key,
                       round(float(h.parts.get("relevance", h.score)), 4), path, h.text or h.snippet,
                       round(float(h.parts.get("relevance", h.score)), 4)))  # fmt: skip
    return out


def cmd_recall(args: argparse.Namespace) -> int:
    from memory_pipeline.operator.instance import open_store as _store
    from memory_pipeline.rollups.recall import DEFAULT_THRESHOLD, recall, referee
    from memory_pipeline.search import file_scores, search
    from memory_pipeline.search.engine import default_embedder
    from memory_pipeline.search.named import checked
    from memory_pipeline.settings import SettingsError, parse_as_of
    from memory_pipeline.store import StoreError

    home = workspace_home()
    store = _store(home)
    try:
        as_of = parse_as_of(args.as_of)
        embedder = default_embedder()  # the index's model: its stored vectors and the query's are comparable
        found = search(args.query, args.top_k, home=home, as_of=as_of, embedder=embedder)

        def stored(paths: Any) -> dict[str, tuple[float, float]]:
            return {p: (s.cosine, s.relevance) for p, s in file_scores(home, args.query, paths, embedder).items()}

        result = recall(store, home, args.query, embedder[0], top_k=args.top_k,
                        threshold=DEFAULT_THRESHOLD if args.threshold is None else args.threshold,
                        as_of=as_of, stored=stored)  # fmt: skip
        result = referee(result, _found(store, home, checked(args.query, found)), args.top_k)
    except (ValueError, SettingsError, StoreError, OSError) as exc:  # SearchInputError is a ValueError
        print(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, file=sys.stderr)
        return 2
    for layer, score in result.searched:
        shown = "—" if score is None else f"{score:.3f}"
        print(f"searched {layer:<8} best {shown}" + (" (relevance, as `search` ranks)" if layer == "search" else ""))
    if result.best is None:
        print(nothing_to_recall(store, as_of))
        return 1
    if result.layer == "search":
        tier = result.tier
        against = (f"{tier.relevance or 0.0:.2f} for the {tier.layer}s' answer by the same measure" if tier
                   else f"no layer reached {result.threshold:g}")  # fmt: skip
        print(f"answer from search: relevance {result.best.score:.2f}, over {against}")
    elif result.cleared:
        print(f"answer from {result.layer}s: best match {result.best.score:.2f} (answers need "
              f"{result.threshold:g})")  # fmt: skip
    else:
        print(f"Nothing in memory matches this well enough (best match {result.best.score:.2f}; answers need "
              f"{result.threshold:g}). The nearest, for what it is worth:")  # fmt: skip
    for hit in result.hits:
        print(f"{hit.layer:<8} {hit.score:.3f}  {hit.key}  {hit.path}".rstrip())
        print(f"         {' '.join(hit.passage.split())[:200]}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    rollups = sub.add_parser("rollups", help="Session → Core → Sphere rollups")
    rsub = rollups.add_subparsers(dest="rollups_command", required=True)
    rsub.add_parser(
        "build", help="backfill: assign sessions, build every missing Core, then every Sphere",
        description="Backfill the rollups: assign every session to the hierarchy, build each missing Core (one "
        "per 8 sessions), then each missing Sphere (one per 8 Cores), in order. What is built already is kept.",
    ).set_defaults(fn=cmd_build)  # fmt: skip
    rsub.add_parser(
        "status", help="counters and what is built",
        description="Show how many sessions the workspace has and how many are assigned to the hierarchy, how "
        "many Cores and Spheres are built and where, and the rollup counters.",
    ).set_defaults(fn=cmd_status)  # fmt: skip
    rec = sub.add_parser(
        "recall", help="tiered recall: Spheres, then Cores, then sessions, refereed by the same search as `search`",
        description="Ask the Spheres, then the Cores, then the sessions, stopping at the first layer whose best match "
        "reaches the threshold; the same hybrid search as `search` runs too, and its first hit answers instead when "
        "it is more relevant (search's own measure) than the layer's answer, or when no layer reaches the threshold.",
    )
    rec.add_argument("query", help="what to recall, in words")
    rec.add_argument("--threshold", type=float, default=None,
                     help="cosine a layer's best must reach (default: calibrated for the MiniLM embedder)")
    rec.add_argument("--top-k", type=int, default=3,
                     help="hits to print from the layer that answers (default %(default)s)")  # fmt: skip
    rec.add_argument("--as-of", default=None, metavar="DATE",
                     help="ISO date or time: recall only what was known then (sessions started, Cores and Spheres "
                     "whose sessions had ended)")  # fmt: skip
    rec.set_defaults(fn=cmd_recall)
