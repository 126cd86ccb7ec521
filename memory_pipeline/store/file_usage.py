"""Which knowledge files prompts included, and when: the references that prune-by-decay counts (seed 001
§8.5). An append-only spool beside the memories' usage spool, written by the context compiler's callers;
advisory — a full disk never breaks a turn. A lower layer, so context writes it and journals read it."""

from __future__ import annotations

import json
import os
from datetime import UTC, date, datetime
from pathlib import Path

FILE_SPOOL = Path("spool") / "files"


def record_files(home: Path, paths: list[str], at: datetime | None = None) -> None:
    """Append the files a prompt included (advisory: a full disk never breaks a turn)."""
    files = [p for p in dict.fromkeys(paths) if p.startswith("knowledge/")]
    if not files:
        return
    when = (at or datetime.now(UTC)).isoformat()
    try:
        folder = Path(home) / FILE_SPOOL
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / f"{datetime.now(UTC):%Y%m%d}-{os.getpid()}.jsonl", "a", encoding="utf-8") as fh:
            fh.write("".join(json.dumps({"path": p, "at": when}) + "\n" for p in files))
    except OSError:
        pass


def references(home: Path) -> dict[str, tuple[int, date]]:
    """path → (times included, last day included), from the file spool; unreadable lines are skipped."""
    out: dict[str, tuple[int, date]] = {}
    folder = Path(home) / FILE_SPOOL
    for spool in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        for line in spool.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
                path, day = str(event["path"]), datetime.fromisoformat(event["at"]).date()
            except (ValueError, KeyError, TypeError):
                continue
            count, last = out.get(path, (0, day))
            out[path] = (count + 1, max(last, day))
    return out
