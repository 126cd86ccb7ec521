"""Warm start: before an MCP server or the fleet gateway accepts its first request, the embedder, the index
and every code path of a search are loaded, so the first call costs what any later one does."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from memory_pipeline.search.engine import search
from memory_pipeline.search.index import Encode, IndexMissing, LoadedIndex
from memory_pipeline.search.live import _cached_index, background_vectors, default_embedder

_LOCK = threading.Lock()



@dataclass(frozen=True)
class Warmth:
    """What `warm` did for a workspace: the model loaded, the index version loaded (or built), when it was done
    (time.monotonic()), and a problem that kept it from finishing (the first call then reports it)."""

    home: str
    model: str
    version: str
    seconds: float
    done_at: float
    problem: str = ""


WARMED: dict[str, Warmth] = {}


def warm(home: Path, embedder: tuple[Encode, str] | None = None) -> Warmth:
    """Before a server accepts its first request: load the embedder (its first encode loads the weights) and the
    gate's background questions, load the index (a missing one is not built here) and the store's live view, and
    run one search through every code path, so that the first call costs what any later one does. Never raises: a
    problem is recorded and returned."""
    t0 = time.perf_counter()
    model, version, problem = "", "", ""
    try:
        encode, model = embedder or default_embedder()
        encode(["warm up"])
        background_vectors(encode, model)  # the abstention gate's questions, embedded once per model
        try:
            idx: LoadedIndex | None = _cached_index(home)
        except IndexMissing as exc:  # never built here: left to the first search or the Dagster asset (a fleet of
            idx, problem = None, f"no index loaded ({str(exc).splitlines()[0]})"  # new agents would wait on it)
        if idx is not None and idx.model == model:
            version = idx.folder.name
            for seg in idx.segments:
                seg.preload()
            # floor 0: every path a real hit takes (texts read, the gate, snippets), not only the scan
            search("warm up", 10, home=home, embedder=(encode, model), floor=0.0)
    except Exception as exc:  # noqa: BLE001 - a warm-up never stops a server; the first call says what is wrong
        problem = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    out = Warmth(str(home), model, version, round(time.perf_counter() - t0, 3), time.monotonic(), problem)
    with _LOCK:
        WARMED[str(home)] = out
    return out
