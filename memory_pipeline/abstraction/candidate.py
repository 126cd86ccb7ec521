"""The state a night would commit, without committing it: two copies of the workspace's readable parts — the
store as it is (phase 1 written, its summaries pending and so unread) and the store with phase 2 applied by the
Archiver's own code — each read by the product's read path, as an agent's `context` call reads it.

Why copies and not an in-memory view: the read path is more than a ranking (the index and the store's changes
since it was built, archived sources beside their summaries, summaries dated by their members, abstention
floors, knowledge files), and a copy answers with all of it, unchanged, at the cost of copying the store and
the index (the knowledge files are hard-linked). The copies' index is brought up to date first, with the
vectors the night already stored (no text is embedded again when search and the night use one model), so
neither state is read from a half-embedded delta. The copies live under the workspace (one filesystem, so links
work) and are removed afterwards; the workspace itself is never written."""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import numpy as np

from memory_pipeline.abstraction import archive, retention
from memory_pipeline.abstraction.outcomes import ARCHIVE_BATCH, ClusterOutcome
from memory_pipeline.llm import facts
from memory_pipeline.store.db import MemoryStore, utcnow

STORE_FILE = "memory.duckdb"
LINKED = ("knowledge", "memory", "archive", "raw", "topics")  # what the read path reads besides store and index
SCRATCH = ".retention"  # under the workspace: not a folder search or the journals read


@dataclass(frozen=True)
class Candidate:
    before: Path  # the workspace as it is
    after: Path  # the workspace as the night would leave it
    archived: dict[str, str]  # source id → cluster id, for the memories phase 2 archives in the copy


def _link_or_copy(src: str, dst: str) -> object:
    try:
        os.link(src, dst)
        return dst
    except OSError:
        return shutil.copy2(src, dst)


def _copy_workspace(db: MemoryStore, home: Path, target: Path) -> None:
    target.mkdir(parents=True)
    with db.connect() as con:  # holding the connection keeps writers out while the file is copied
        con.execute("CHECKPOINT")
        shutil.copyfile(db.path, target / STORE_FILE)
    if (home / "index").is_dir():
        shutil.copytree(home / "index", target / "index", ignore=shutil.ignore_patterns("*.lock"))
    for name in LINKED:
        if (home / name).is_dir():
            shutil.copytree(home / name, target / name, copy_function=_link_or_copy, symlinks=True)


@contextmanager
def candidate(
    db: MemoryStore,
    home: Path,
    outcomes: list[ClusterOutcome],
    critical_floor: float,
    run_id: str,
    now: datetime,
    index_names: list[str],
    refresh: Callable[[Path], Any],
) -> Iterator[Candidate]:
    """Both states, removed on exit. `outcomes` are the night's (copied: phase 2 in the copy marks them);
    `refresh` brings a copy's search index up to date."""
    scratch = home / SCRATCH
    shutil.rmtree(scratch, ignore_errors=True)  # what a killed night left (one night at a time: the lease)
    scratch.mkdir()
    folder = Path(tempfile.mkdtemp(prefix=f"{run_id[:8]}-", dir=scratch))
    try:
        before, after = folder / "before", folder / "after"
        _copy_workspace(db, home, before)
        refresh(before)  # the index as the workspace's own would be now; the after copy starts from it
        _copy_workspace(MemoryStore(before / STORE_FILE), before, after)
        ready = [o for o in copy.deepcopy(outcomes) if o.summary_id is not None and o.distillation is not None]
        with MemoryStore(after / STORE_FILE).connect() as con:
            for lo in range(0, len(ready), ARCHIVE_BATCH):
                archive.commit_batch(con, ready[lo : lo + ARCHIVE_BATCH], critical_floor, run_id, now, index_names,
                                     lambda _m: None, lambda _m: None)  # fmt: skip
            rows = con.execute(
                "SELECT id, archived_by FROM memories WHERE lifecycle = 'archived' AND id IN "
                "(SELECT unnest(?::VARCHAR[]))",
                [sorted({m for o in ready if o.status == "compressed" for m in o.cluster.member_ids})],
            ).fetchall()
        refresh(after)  # the summaries and the archived sources, with the vectors the night stored
        yield Candidate(before, after, {str(r[0]): str(r[1]) for r in rows})
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            scratch.rmdir()  # only when empty: another night's copies are left to it


def texts(home: Path, ids: list[str]) -> dict[str, str]:
    """The content of each memory in `ids` (read from a copy)."""
    with MemoryStore(home / STORE_FILE).connect() as con:
        rows = con.execute(
            "SELECT id, content FROM memories WHERE id IN (SELECT unnest(?::VARCHAR[]))", [ids]
        ).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}


def idf_of(home: Path) -> Callable[[str], float]:
    """A word's idf over the readable memories of a copy (what search indexes of the store), counted in the
    store: log(1 + (N - df + 0.5) / (df + 0.5)), as BM25 reads it."""
    import math

    with MemoryStore(home / STORE_FILE).connect() as con:
        contents = [str(r[0]) for r in con.execute(
            "SELECT content FROM memories WHERE lifecycle IN ('active', 'archived')"
        ).fetchall()]  # fmt: skip
    df: dict[str, int] = {}
    for text in contents:
        for w in set(retention.words(text)):
            df[w] = df.get(w, 0) + 1
    n = len(contents)

    def idf(word: str) -> float:
        d = df.get(word.lower(), 0)
        return math.log(1.0 + (n - d + 0.5) / (d + 0.5))

    return idf


QUERY_BATCH = 64


def memoised(encode: Callable[[list[str]], Any], known: list[str]) -> Callable[[list[str]], np.ndarray]:
    """`encode` with the vectors of `known` texts computed up front in batches (a probe's question is embedded
    once, not once per state and call: embedding the query is most of a `context` call's time), and any other
    text embedded when asked and kept. Same model, same vectors: the read path answers exactly as it would."""
    texts = list(dict.fromkeys(known))
    memo: dict[str, np.ndarray] = {}
    for lo in range(0, len(texts), QUERY_BATCH):
        chunk = texts[lo : lo + QUERY_BATCH]
        memo.update(zip(chunk, np.asarray(encode(chunk), dtype=np.float32), strict=True))

    def encode_known(batch: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(batch) if t not in memo]
        if missing:
            memo.update(zip(missing, np.asarray(encode(missing), dtype=np.float32), strict=True))
        return np.vstack([memo[t] for t in batch])

    return encode_known


def asker(home: Path, budget: int, embedder: tuple[Any, str] | None, today: date) -> Callable[[str], str | None]:
    """The product's read path on a copy: `context` for the question within `budget` tokens, as its prompt
    text; None when the read path refuses the question (one the compiler cannot answer within the budget)."""
    from memory_pipeline.context import ContextError, compile_for_agent, default_search

    search = default_search(home, embedder, today=today)

    def ask(question: str) -> str | None:
        try:
            out, _ = compile_for_agent(home, question, budget_tokens=budget, search=search, today=today)
        except ContextError:
            return None
        return out.prompt

    return ask


@dataclass(frozen=True)
class ProbeSettings:
    floor: float
    probes: int  # 0: no probe, the night passes
    budget: int
    seed: int
    critical_floor: float
    seconds: float = 0.0  # the probes stop being asked once this long has passed (0: no bound)


def probe_seconds(cap: float, share: float, night_so_far: float | None) -> float:
    """The probes' time bound (0: none): at most `cap` seconds, and at most `share` of the time the night has taken
    so far (the probes' cost then stays a fixed share of the night at any store size)."""
    bounds = [b for b in (cap, share * night_so_far if share > 0 and night_so_far else 0.0) if b > 0]
    return min(bounds) if bounds else 0.0


def grade_night(
    db: MemoryStore,
    home: Path,
    outcomes: list[ClusterOutcome],
    settings: ProbeSettings,
    run_id: str,
    now: datetime,
    index_names: list[str],
    embedder: tuple[Any, str] | None,
    refresh: Callable[[Path], Any],
    progress: Callable[[int], Callable[[int], Any]] | None = None,
) -> retention.Retention:
    """The night's retention: probes from a seeded sample of the memories it would archive, each asked of the
    state before and of the state it would commit. `progress(total)` gives what hears each probe done."""
    t0 = time.monotonic()
    ready = [o for o in outcomes if o.summary_id is not None and o.distillation is not None]
    if settings.probes <= 0 or not ready:
        r = retention.tally(run_id, [], settings.floor, settings.budget, 0)
    else:
        with candidate(db, home, ready, settings.critical_floor, run_id, now, index_names, refresh) as c:
            chosen = retention.sample(sorted(c.archived), settings.probes, settings.seed)
            found = texts(c.before, chosen)
            idf = idf_of(c.before)
            names = facts.known_names(found.values())
            built = [retention.build_probe(m, c.archived[m], found[m], idf, names) for m in chosen if m in found]
            probes = [p for p in built if p is not None]
            day = now.date()
            ask_with = None if embedder is None else (memoised(embedder[0], [p.question for p in probes]), embedder[1])
            outcomes_ = retention.measure(probes, asker(c.before, settings.budget, ask_with, day),
                                          asker(c.after, settings.budget, ask_with, day),
                                          None if progress is None else progress(len(probes)),
                                          t0 + settings.seconds if settings.seconds > 0 else None)  # fmt: skip
            r = retention.tally(run_id, outcomes_, settings.floor, settings.budget, len(c.archived))
            r.built = len(probes)
    r.seconds = round(time.monotonic() - t0, 2)
    r.finished_at = utcnow().isoformat() + "Z"
    return r


def stop_night(db: MemoryStore, r: retention.Retention, started_at: datetime | None = None) -> tuple[int, int]:
    """A night below the floor ends here, in one transaction: its pending summaries are reconciled as an
    interrupted night's are (none of their sources is archived, so each is removed), its run row says BLOCKED
    with the figures, and its lease is released. Returns (summaries activated, summaries removed)."""
    import json

    from memory_pipeline.store import lease
    from memory_pipeline.store import repository as repo

    r.blocked = True
    with db.transaction() as con:
        activated, removed = repo.reconcile_pending(con)
        row = con.execute("SELECT started_at FROM consolidation_runs WHERE run_id = ?", [r.run_id]).fetchall()
        started = row[0][0] if row else (started_at or utcnow())
        con.execute(
            "INSERT OR REPLACE INTO consolidation_runs VALUES (?, ?, ?, 'BLOCKED', ?)",
            [r.run_id, started, utcnow(), json.dumps({"run_id": r.run_id, "verdict": "BLOCKED",
                                                      "knowledge_retention": r.to_dict()})],
        )  # fmt: skip
        lease.release(con, r.run_id)
    return len(activated), len(removed)
