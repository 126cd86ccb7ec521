"""`memory-pipeline embeddings [drop --model M --dim D]`: which vectors the store holds, and a way out of
vectors of the wrong dimension (the night refuses to cluster on a model whose vectors disagree)."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("embeddings", help="vectors in the store per model, dimension and source; drop bad ones",
                       description="Without a subcommand: list the vectors the store holds, per model, dimension "
                       "and source, and the model the night clusters on. `embeddings drop` deletes a model's "
                       "vectors of a wrong dimension.")  # fmt: skip
    inner = p.add_subparsers(dest="embeddings_command")
    p.set_defaults(fn=cmd_status)
    drop = inner.add_parser("drop", help="delete a model's vectors of the given dimension(s); memories stay")
    drop.add_argument("--model", required=True, help="the model name stored with the vectors")
    drop.add_argument("--dim", type=int, action="append", required=True, help="dimension to drop (repeatable)")
    drop.set_defaults(fn=cmd_drop)


def cmd_status(args: argparse.Namespace) -> int:
    from memory_pipeline.embedding import dimensions, spec
    from memory_pipeline.operator.instance import open_store as _store
    from memory_pipeline.resources import EmbedderResource
    from memory_pipeline.settings import workspace_home

    embedder = EmbedderResource.from_env()
    store = _store(workspace_home())
    with store.connect() as con:
        rows = con.execute(
            "SELECT model, len(vector) AS d, coalesce(source, 'computed'), count(*) FROM embeddings "
            "GROUP BY ALL ORDER BY model, d, 3"
        ).fetchall()
        bad = {m: dimensions.find_bad_vectors(con, m, None) for m in sorted({r[0] for r in rows})}
    print(f"the night clusters on: {embedder.describe()}  ({spec.ENV_MODEL}, {spec.ENV_PLUGIN})")
    if not rows:
        print("no vectors in the store")
    for model, dim, source, n in rows:
        known = spec.known_dimension(model)
        note = f"  (native {known}-d)" if known is not None and known != dim else ""
        print(f"  {model:<45} {dim:>5}-d  {source:<16} {n:>8}{note}")
    problems = [b for b in bad.values() if b is not None]
    for b in problems:
        print(b.message(), file=sys.stderr)
    return 1 if problems else 0


def cmd_drop(args: argparse.Namespace) -> int:
    from memory_pipeline.embedding import dimensions
    from memory_pipeline.operator.instance import open_store as _store
    from memory_pipeline.resources import EngineConfig
    from memory_pipeline.settings import workspace_home
    from memory_pipeline.store import backup
    from memory_pipeline.store.db import utcnow

    home = workspace_home()
    store = _store(home)
    with store.connect() as con:
        n = con.execute(
            f"SELECT count(*) FROM embeddings WHERE model = ? AND len(vector) IN ({', '.join('?' for _ in args.dim)})",
            [args.model, *args.dim],
        ).fetchall()[0][0]
    if not n:
        dims = ", ".join(map(str, args.dim))
        print(f"no '{args.model}' vectors of dimension {dims}; nothing dropped", file=sys.stderr)
        return 1
    label = "embeddings-drop-" + utcnow().strftime("%Y%m%dT%H%M%S")
    snapshot = backup.snapshot(store, home / "backups", label, EngineConfig.from_env().backups_keep)
    with store.transaction() as con:
        ids = dimensions.drop_vectors(con, args.model, args.dim)
    shown = ", ".join(ids[: dimensions.SHOW_IDS]) + (" …" if len(ids) > dimensions.SHOW_IDS else "")
    print(f"dropped {len(ids)} '{args.model}' vectors ({shown}); memories kept; snapshot before: {snapshot}")
    return 0
