"""`memory-pipeline forgotten list|restore ID`: what agents forgot, and the operator's undo; `memory-pipeline
superseded list|undo ID`: which values of a fact a newer one replaced, and the operator's undo."""

from __future__ import annotations

import argparse
import getpass
from typing import Any


def _store() -> Any:
    from memory_pipeline.settings import workspace_home
    from memory_pipeline.store import MemoryStore

    return MemoryStore(workspace_home() / "memory.duckdb")


def cmd_list(args: argparse.Namespace) -> int:
    from memory_pipeline.store.forgotten import list_forgotten

    rows = list_forgotten(_store())
    for r in rows:
        text = " ".join(r.text.split())
        print(f"{r.id}\t{r.at:%Y-%m-%d %H:%M}\t{r.reason}\t{text[:60] + ('…' if len(text) > 60 else '')}")
    if not rows:
        print("no forgotten memories")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from memory_pipeline.search import refresh_index
    from memory_pipeline.settings import workspace_home
    from memory_pipeline.store.forgotten import restore

    restore(_store(), args.id, by=f"operator:{args.by or getpass.getuser()}")
    print(f"restored {args.id}: active again (its tombstone is kept, marked reverted)")
    print(refresh_index(workspace_home()))
    return 0


def cmd_superseded_list(args: argparse.Namespace) -> int:
    from memory_pipeline.store.validity import list_superseded

    rows = list_superseded(_store())
    for r in rows:
        old, new = (" ".join(t.split()) for t in (r.content, r.current))
        print(f"{r.id}\tvalid {r.created_at:%Y-%m-%d} → {r.valid_until:%Y-%m-%d}\t{_cut(old)}\tnow: {r.superseded_by} "
              f"{_cut(new)}\t{r.run_id or '-'}")  # fmt: skip
    if not rows:
        print("no superseded memories")
    return 0


def _cut(text: str, n: int = 60) -> str:
    return text[:n] + ("…" if len(text) > n else "")


def cmd_superseded_undo(args: argparse.Namespace) -> int:
    from memory_pipeline.search import refresh_index
    from memory_pipeline.settings import workspace_home
    from memory_pipeline.store.validity import undo

    by = undo(_store(), args.id, by=f"operator:{args.by or getpass.getuser()}")
    print(f"{args.id} is current again (it had been superseded by {by}); no night will supersede it by {by} again")
    print(refresh_index(workspace_home()))
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("superseded", help="values of a fact a newer value replaced (MEMORY_PIPELINE_HOME): "
                       "list | undo ID")  # fmt: skip
    cmds = p.add_subparsers(dest="superseded_command", required=True)
    q = cmds.add_parser("list", help="superseded memories: id, when each held, its text, what holds now, the run")
    q.set_defaults(fn=cmd_superseded_list)
    q = cmds.add_parser("undo", help="a wrong supersession: the memory is current again, and stays so")
    q.add_argument("id", help="the superseded memory's id")
    q.add_argument("--by", help="who undoes it (default: the login name), kept in the supersession's record")
    q.set_defaults(fn=cmd_superseded_undo)

    p = sub.add_parser("forgotten", help="memories agents forgot (MEMORY_PIPELINE_HOME): list | restore ID")
    cmds = p.add_subparsers(dest="forgotten_command", required=True)
    q = cmds.add_parser("list", help="forgotten memories: id, when, the reason, the start of the text")
    q.set_defaults(fn=cmd_list)
    q = cmds.add_parser("restore", help="make a forgotten memory active again (nothing was ever deleted)")
    q.add_argument("id", help="the memory's id")
    q.add_argument("--by", help="who restores it (default: the login name), kept on the tombstone")
    q.set_defaults(fn=cmd_restore)
