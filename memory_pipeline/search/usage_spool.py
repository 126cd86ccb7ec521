"""Usage feedback without touching the store on the read path: hits returned to an agent are appended to a
JSONL spool (`<workspace>/spool/usage/*.jsonl`, the graph domain's `usage import` format), and ingested in
batches by the `search_usage_ingest` asset — never blocking a query, never contending with the nightly writer."""

from __future__ import annotations

import itertools
import json
import os
import queue
import threading
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

SPOOL = Path("spool") / "usage"
_QUEUE: queue.Queue[tuple[Path, str]] = queue.Queue()
_WORKER: threading.Thread | None = None
_WORKER_LOCK = threading.Lock()


def spool_dir(home: Path) -> Path:
    return Path(home) / SPOOL


_PROCESS = uuid.uuid4().hex[:12]  # event ids: this process's random tag and a counter (a uuid4 per batch was
_BATCHES = itertools.count()  # a measurable share of a gateway worker's CPU)


def _lines(memory_ids: Iterable[str], at: datetime) -> str:
    stamp = at.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds")
    batch = f"{_PROCESS}{next(_BATCHES):x}"
    return "".join(
        json.dumps({"memory_id": mid, "at": stamp, "count": 1, "event_id": f"search-{batch}-{i}"}) + "\n"
        for i, mid in enumerate(dict.fromkeys(memory_ids))
    )


def append_now(home: Path, memory_ids: Iterable[str], at: datetime | None = None) -> Path | None:
    """Append synchronously (the CLI: one short-lived process). One write call per batch of hits."""
    text = _lines(memory_ids, at or datetime.now(UTC))
    if not text:
        return None
    folder = spool_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{datetime.now(UTC):%Y%m%d}-{os.getpid()}.jsonl"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)
    return path


def _drain() -> None:
    while True:
        batches = [_QUEUE.get()]
        while True:  # everything queued meanwhile: one open and write per file, not per search
            try:
                batches.append(_QUEUE.get_nowait())
            except queue.Empty:
                break
        by_path: dict[Path, list[str]] = {}
        for path, text in batches:
            by_path.setdefault(path, []).append(text)
        for path, texts in by_path.items():
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "a", encoding="utf-8") as fh:
                    fh.write("".join(texts))
            except OSError:
                pass  # usage is advisory: a full disk must not break search
        for _ in batches:
            _QUEUE.task_done()


def append_later(home: Path, memory_ids: Iterable[str], at: datetime | None = None) -> None:
    """The server path: queue the batch for a background writer thread and return at once."""
    global _WORKER
    text = _lines(memory_ids, at or datetime.now(UTC))
    if not text:
        return
    with _WORKER_LOCK:
        if _WORKER is None or not _WORKER.is_alive():
            _WORKER = threading.Thread(target=_drain, name="search-usage-spool", daemon=True)
            _WORKER.start()
    _QUEUE.put((spool_dir(home) / f"{datetime.now(UTC):%Y%m%d}-{os.getpid()}.jsonl", text))


def flush() -> None:
    """Wait until queued batches are written (tests, server shutdown)."""
    _QUEUE.join()


def pending_files(home: Path) -> list[Path]:
    folder = spool_dir(home)
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
